#!/bin/sh
# The kernel version the guest image uses: the one linux-image-amd64 depends on.
dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
	grep -o 'linux-image-[0-9][^ ,]*-amd64' | head -1 | sed 's/^linux-image-//'
