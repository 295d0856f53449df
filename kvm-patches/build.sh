#!/usr/bin/env bash
# Builds replay-vm's patched kvm.ko + kvm-amd.ko for the guest image's kernel.
#
#   kvm-patches/build.sh [OUT_DIR]        (default build/kvm)
#
# Source: Debian's linux-source-6.1 at exactly the version of the image's
# linux-image-$KVER package.  Only arch/x86/kvm, virt/kvm and
# asm/kvm_host.h are taken from it; the series is applied with patch(1)
# and the modules are built out of tree against linux-headers-$KVER, so
# vermagic and the symbol CRCs are those of the image kernel.  The patched
# kvm_host.h is put before the headers' one with NOSTDINC_FLAGS (the
# variable kbuild puts first on the include path).
#
# Result cached in ~/.cache/replay-vm/kvm-bin/<kver>-<hash of the series,
# the patches, rrvm-kvm.h and this script>; a warm run only copies.
# Environment: KVER (default: vm-images/kver.sh), RRVM_KVM_INTEL=1 also
# builds kvm-intel.ko (compile check of the VMX side; it is copied out too).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
OUT=${1:-$REPO/build/kvm}
KVER=${KVER:-$(sh "$REPO/vm-images/kver.sh")}
[ -n "$KVER" ] || { echo "kvm-build: no image kernel (is linux-image-amd64 installed?)" >&2; exit 1; }
INTEL=${RRVM_KVM_INTEL:-0}

patches=$(grep -v '^\s*#' "$HERE/series" | grep -v '^\s*$' || true)
hash=$( { cat "$HERE/series" "$HERE/rrvm-kvm.h" "$HERE/build.sh"; \
          for p in $patches; do cat "$HERE/$p"; done; echo "intel=$INTEL"; } |
        sha256sum | cut -c1-16)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/replay-vm/kvm-bin/$KVER-$hash
MODS="kvm.ko kvm-amd.ko"
[ "$INTEL" = 1 ] && MODS="$MODS kvm-intel.ko"

install_out() {
	mkdir -p "$OUT"
	for m in $MODS; do cp "$CACHE/$m" "$OUT/$m.tmp" && mv "$OUT/$m.tmp" "$OUT/$m"; done
	echo "kvm-build: $MODS for $KVER in $OUT ($(basename "$CACHE"))"
}

have_all=1
for m in $MODS; do [ -f "$CACHE/$m" ] || have_all=0; done
if [ $have_all = 1 ]; then
	install_out
	exit 0
fi

# The kernel source must be the image kernel's own version.
ver=$(dpkg-query -W -f='${Version}' "linux-image-$KVER" 2>/dev/null || true)
[ -n "$ver" ] || ver=$(apt-cache policy "linux-image-$KVER" | awk '/Candidate:/ {print $2}')
[ -n "$ver" ] && [ "$ver" != "(none)" ] || { echo "kvm-build: no version for linux-image-$KVER" >&2; exit 1; }
need=()
[ "$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || true)" = "$ver" ] ||
	need+=("linux-source-6.1=$ver")
dpkg-query -W -f='${Status}' "linux-headers-$KVER" 2>/dev/null | grep -q 'install ok installed' ||
	need+=("linux-headers-$KVER=$ver")
for p in patch xz-utils make gcc binutils; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "kvm-build: installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" ||
		{ echo "kvm-build: cannot install ${need[*]} (the source must be $ver, the image kernel's)" >&2; exit 1; }
fi
hdr=/lib/modules/$KVER/build
[ -f "$hdr/Makefile" ] || { echo "kvm-build: no $hdr" >&2; exit 1; }

W=$(mktemp -d "${TMPDIR:-/tmp}/rv-kvm-build.XXXXXX")
T=
trap 'rm -rf "$W" ${T:+"$T"}' EXIT
S=linux-source-6.1
start=$(date +%s)
nice -n 10 tar -xJf /usr/src/$S.tar.xz -C "$W" --wildcards \
	"$S/arch/x86/kvm/*" "$S/virt/kvm/*" "$S/arch/x86/include/asm/kvm_host.h"
B=$W/$S
for p in $patches; do
	patch -d "$B" -p1 --quiet --forward --no-backup-if-mismatch < "$HERE/$p" ||
		{ echo "kvm-build: $p does not apply to $S $ver" >&2; exit 1; }
done
cp "$HERE/rrvm-kvm.h" "$B/arch/x86/kvm/rrvm-kvm.h"
# Out of tree: the Makefile's $(srctree) paths point into the headers,
# which have no kvm sources; trace.h's TRACE_INCLUDE_PATH (../../arch/x86/kvm)
# resolves from the extra -I $(src)/.. .
sed -i -e 's|\$(srctree)/arch/x86/kvm|$(src) -I $(src)/..|' \
	-e 's|\$(srctree)/virt/kvm/Makefile.kvm|$(src)/../../../virt/kvm/Makefile.kvm|' \
	"$B/arch/x86/kvm/Makefile"
intel_cfg=CONFIG_KVM_INTEL=
[ "$INTEL" = 1 ] && intel_cfg=CONFIG_KVM_INTEL=m
nice -n 10 make -s -C "$hdr" M="$B/arch/x86/kvm" -j"$(nproc)" "$intel_cfg" \
	NOSTDINC_FLAGS="-nostdinc -I$B/arch/x86/include" modules

mkdir -p "$(dirname "$CACHE")"
T=$(mktemp -d "$CACHE.tmp.XXXXXX")
for m in $MODS; do
	strip --strip-debug -o "$T/$m" "$B/arch/x86/kvm/$m"
	vm=$(modinfo -F vermagic "$T/$m")
	case "$vm" in "$KVER "*) ;; *) echo "kvm-build: $m vermagic '$vm' is not $KVER" >&2; exit 1;; esac
done
(cd "$HERE" && cat series $patches) > "$T/SOURCE"
echo "$S $ver, built $(date -u +%FT%TZ) in $(( $(date +%s) - start )) s" >> "$T/SOURCE"
rm -rf "$CACHE"
mv "$T" "$CACHE"
T=
install_out
