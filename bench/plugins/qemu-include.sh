#!/bin/bash
# Prints the folder of QEMU's plugin API header (qemu-plugin.h) for the QEMU
# that qemu-patches/build.sh builds: in the source it unpacked into the
# cache, or, where the cache holds only the binary, in that Debian source
# unpacked now into the same place (build.sh then uses it too).
set -euo pipefail
cache=${REPLAY_VM_CACHE:-$HOME/.cache/replay-vm}
ver=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ {print $2}' | sort -V | tail -1)
[ -n "$ver" ] || { echo "plugins: no qemu source package (run 'make deps': deb-src must be enabled)" >&2; exit 1; }
srcroot=$cache/qemu-src2/${ver#*:}   # the tree build.sh patches
h=$(ls "$srcroot"/qemu-*/include/qemu/qemu-plugin.h 2>/dev/null | head -1 || true)
if [ -z "$h" ]; then
  rm -rf "$srcroot"; mkdir -p "$srcroot"
  (cd "$srcroot" && apt-get source -q qemu="$ver" >/dev/null)
  h=$(ls "$srcroot"/qemu-*/include/qemu/qemu-plugin.h | head -1)
fi
dirname "$h"
