#!/usr/bin/env bash
# Installs everything replay-vm needs from Debian's packages and PyPI.
# Idempotent: a second run on a ready machine only checks and exits.
set -euo pipefail

PKGS=(
  # QEMU 7.2 source build
  dpkg-dev devscripts quilt meson ninja-build pkg-config python3-venv
  libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev flex bison
  libcap-ng-dev libattr1-dev zlib1g-dev
  qemu-system-data seabios ipxe-qemu
  # guest kernel + headers, initramfs tools
  linux-image-amd64 linux-headers-amd64 busybox-static cpio e2fsprogs kmod
  # log format
  protobuf-c-compiler libprotobuf-c-dev libzstd-dev zstd libcapstone-dev
  # fuzzing
  clang libclang-rt-14-dev
  # libvirt
  libvirt-daemon-system libvirt-clients
  # host side of the network workloads, tools used by tests
  gdb python3-pytest python3-matplotlib socat
)

SRC=/etc/apt/sources.list.d/debian.sources
need_update=0
if [ -f "$SRC" ] && ! grep -q '^Types: deb deb-src' "$SRC"; then
  sed -i 's/^Types: deb$/Types: deb deb-src/' "$SRC"
  need_update=1
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# headers must match exactly the kernel the image ships
kver() { dpkg-query -W -f='${Depends}' "$1" 2>/dev/null | grep -o "$2-[0-9.]*-[0-9]*-amd64" | head -1; }
if [ ${#missing[@]} -eq 0 ]; then
  img=$(kver linux-image-amd64 linux-image); hdr=$(kver linux-headers-amd64 linux-headers)
  [ "${img#linux-image-}" = "${hdr#linux-headers-}" ] || missing+=(linux-image-amd64 linux-headers-amd64)
fi

if [ ${#missing[@]} -gt 0 ] || [ $need_update = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi
echo "deps: ok"
