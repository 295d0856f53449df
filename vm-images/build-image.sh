#!/usr/bin/env bash
# Builds the guest: Debian's kernel, a busybox initramfs with the drivers, the
# replay-vm guest module and the workload programs, and an ext4 data disk.
# Output is reproducible (fixed mtimes and order), so image hashes in a
# recording's header stay valid across rebuilds of an unchanged tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out=${1:-$repo/build/image}
kver=$("$here/kver.sh")
[ -n "$kver" ] || { echo "build-image: linux-image-amd64 is not installed (run 'make deps')" >&2; exit 1; }
[ -r "/boot/vmlinuz-$kver" ] || { echo "build-image: /boot/vmlinuz-$kver missing (run 'make deps')" >&2; exit 1; }
ko=$repo/guest-module/replayvm.ko
[ -f "$ko" ] || { echo "build-image: $ko missing (run 'make guest')" >&2; exit 1; }
wl=$repo/vm-images/workloads/bin
[ -d "$wl" ] || { echo "build-image: $wl missing (run 'make workloads')" >&2; exit 1; }

mkdir -p "$out"
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,data,root,etc,lib/modules,opt/rv/bin}
cp /bin/busybox "$root/bin/busybox"
install -m 755 "$here/init" "$root/init"
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"
printf '127.0.0.1 localhost\n10.0.2.2 host\n' > "$root/etc/hosts"

# drivers, in dependency order
: > "$root/lib/modules/load-order"
for m in virtio_pci virtio_blk virtio_net ext4; do
  modprobe -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | awk '!seen[$0]++' | while read -r path; do
  cp "$path" "$root/lib/modules/"
  basename "$path" >> "$root/lib/modules/load-order"
done

# loaded on demand by init (rv.acpi=1: libvirt's ACPI power button)
for m in button evdev; do
  modprobe -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}' |
    while read -r path; do cp "$path" "$root/lib/modules/"; done
done

# Debian signs its modules and the kernel checks each signature at every
# boot: under TCG that was 1.1 G of the 2.5 G instructions a boot ran in the
# kernel (RSA in mpihelp_*, sha256 of each module).  Unsigned, they load the
# same, with the taint the guest module sets anyway.
python3 - "$root/lib/modules" <<'PY'
import os, struct, sys
MAGIC = b"~Module signature appended~\n"
for name in sorted(os.listdir(sys.argv[1])):
    path = os.path.join(sys.argv[1], name)
    data = open(path, "rb").read()
    if name.endswith(".ko") and data.endswith(MAGIC):
        # struct module_signature (12 bytes, sig_len big-endian last) before the magic
        sig_len = struct.unpack(">I", data[-len(MAGIC) - 4:-len(MAGIC)])[0]
        open(path, "wb").write(data[:-(sig_len + 12 + len(MAGIC))])
PY

cp "$ko" "$root/opt/rv/replayvm.ko"
find "$wl" -maxdepth 1 -type f -perm -u+x -exec cp {} "$root/opt/rv/bin/" \;

find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
   cpio --null --reproducible -o -H newc --owner 0:0 --quiet) | gzip -9n > "$out/initramfs.cpio.gz"
cp "/boot/vmlinuz-$kver" "$out/vmlinuz"
# vmlinux: the same kernel uncompressed, an ELF that QEMU boots through its
# PVH entry.  Decompressing the XZ bzImage took 4.5 G instructions under
# TCG, about half of every boot's time here (nested L2 guests boot it too).
# vmlinuz stays as the kernel's identity (trained lists).
python3 - "$out/vmlinuz" "$out/vmlinux" <<'PY'
import lzma, sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"\xfd7zXZ\x00")
if at < 0:
    sys.exit("build-image: %s holds no XZ stream (not Debian's bzImage?)" % sys.argv[1])
elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[at:])
if elf[:4] != b"\x7fELF":
    sys.exit("build-image: the XZ stream in %s is not an ELF kernel" % sys.argv[1])
open(sys.argv[2], "wb").write(elf)
PY

# data disk: deterministic pseudo-random files for the disk workloads
data=$stage/data; mkdir -p "$data/files"
python3 - "$data/files" <<'PY'
import hashlib, os, sys
d = sys.argv[1]
for i in range(16):
    blob, seed = b"", b"replay-vm-%d" % i
    while len(blob) < (64 << 10) * (1 + i % 4):
        seed = hashlib.sha256(seed).digest(); blob += seed
    with open(os.path.join(d, "f%02d.bin" % i), "wb") as f:
        f.write(blob)
PY
echo "replay-vm data disk" > "$data/README"
find "$data" -exec touch -h -d @0 {} +
rm -f "$out/data.img"
E2FSPROGS_FAKE_TIME=1 mke2fs -q -t ext4 -d "$data" -U 6e0c1a9e-0000-4000-8000-000000000001 \
  -E hash_seed=6e0c1a9e-0000-4000-8000-000000000002 -L rvdata "$out/data.img" 32M
# mke2fs copies each file's ctime, which touch cannot set: zero them, or
# every rebuild makes a new disk hash and old recordings refuse to replay
(cd "$data" && find . | LC_ALL=C sort | sed 's|^\.||; s|^$|/|; s|^|set_inode_field |; s|$| ctime @0|') \
  > "$stage/ctime.cmds"
E2FSPROGS_FAKE_TIME=1 debugfs -w -f "$stage/ctime.cmds" "$out/data.img" >/dev/null 2>&1

echo "$kver" > "$out/KVER"
(cd "$out" && sha256sum vmlinuz vmlinux initramfs.cpio.gz data.img > SHA256SUMS)
echo "build-image: $out ($kver)"
