#!/bin/sh
# The kernel version the guest image uses: the one linux-image-amd64 depends on,
# or RV_KVER (e.g. 6.1.0-56-amd64) to build the image from another installed
# kernel (its linux-image and linux-headers packages).
if [ -n "${RV_KVER:-}" ]; then echo "$RV_KVER"; exit 0; fi
dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
	grep -o 'linux-image-[0-9][^ ,]*-amd64' | head -1 | sed 's/^linux-image-//'
