#!/usr/bin/env bash
# Builds Debian's QEMU 7.2 with the replay-vm patch series applied.
#
# The source tree and build dir live in a cache outside the work tree, one per
# Debian source version.  The patch series is applied with quilt (own .pc dir so
# Debian's own quilt state is untouched); only patches that differ from the ones
# applied last time are popped and re-pushed, so a one-patch edit rebuilds
# incrementally.  Finished binaries are kept per (source version, series hash):
# an unchanged tree "rebuilds" by copying one file.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out=${1:-$repo/build/qemu}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cache=${REPLAY_VM_CACHE:-$HOME/.cache/replay-vm}

ver=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ {print $2}' | sort -V | tail -1)
[ -n "$ver" ] || { echo "build-qemu: no qemu source package (run 'make deps': deb-src must be enabled)" >&2; exit 1; }

series_hash() {
  # everything the binary depends on from this repo: the patches, the series,
  # the build options, and the libraries QEMU links from the repo
  { cat "$here/series"; while read -r p; do [ -n "$p" ] && cat "$here/$p"; done < <(grep -v '^#' "$here/series" || true);
    cat "$here/build.sh"; find "$repo/rrlog" -name '*.[ch]' -o -name '*.proto' 2>/dev/null | sort | xargs -r cat; } |
    sha256sum | cut -c1-16
}
key="${ver#*:}-$(series_hash)"
bindir=$cache/qemu-bin/$key
mkdir -p "$out"

if [ -x "$bindir/qemu-system-x86_64" ]; then
  cp -f "$bindir/qemu-system-x86_64" "$out/"
  echo "$key" > "$out/VERSION"
  echo "build-qemu: cached $key"
  exit 0
fi

srcroot=$cache/qemu-src/${ver#*:}
src=$(ls -d "$srcroot"/qemu-*/ 2>/dev/null | head -1 || true)
if [ -z "$src" ]; then
  rm -rf "$srcroot"; mkdir -p "$srcroot"
  (cd "$srcroot" && apt-get source -q qemu="$ver" >/dev/null)
  src=$(ls -d "$srcroot"/qemu-*/ | head -1)
fi
src=${src%/}

export QUILT_PC=.pc-replayvm QUILT_PATCHES=patches-replayvm
applied=$src/.replayvm-applied   # copies of the patches as applied last time
mkdir -p "$applied"
cd "$src"
{ grep -v '^#' "$here/series" || true; } | sed '/^$/d' > "$src/.replayvm-series"

# pop down to the first patch that changed since last time; quilt pops
# only what its series file names, so pop with last time's series and
# patches (a patch dropped from the series is popped too)
keep=""
if [ -f "$QUILT_PC/applied-patches" ]; then
  while read -r p; do
    if [ -f "$here/$p" ] && cmp -s "$here/$p" "$applied/$p" &&
       grep -qxF "$p" "$src/.replayvm-series"; then keep=$p; else break; fi
  done < "$QUILT_PC/applied-patches"
  # the kept prefix must also be a prefix of the new series
  if [ -n "$keep" ]; then
    n=$(grep -nxF "$keep" "$QUILT_PC/applied-patches" | cut -d: -f1)
    head -n "$n" "$QUILT_PC/applied-patches" | cmp -s - <(head -n "$n" "$src/.replayvm-series") || keep=""
  fi
  rm -rf "$QUILT_PATCHES"; mkdir "$QUILT_PATCHES"
  cp "$QUILT_PC/applied-patches" "$QUILT_PATCHES/series"
  cp "$applied"/*.patch "$QUILT_PATCHES/" 2>/dev/null || true
  while read -r p; do [ -f "$QUILT_PATCHES/$p" ] || : > "$QUILT_PATCHES/$p"; done < "$QUILT_PC/applied-patches"
  # -f: restore from quilt's backups (what was really applied)
  if [ -n "$keep" ]; then quilt pop -f -q "$keep" >/dev/null 2>&1 || true
  else quilt pop -f -a -q >/dev/null 2>&1 || true; fi
  if [ -s "$QUILT_PC/applied-patches" ] &&
     ! head -n "$(wc -l < "$QUILT_PC/applied-patches")" "$src/.replayvm-series" | cmp -s - "$QUILT_PC/applied-patches"; then
    echo "build-qemu: could not pop the patches applied last time in $src" >&2; exit 1
  fi
fi
rm -rf "$QUILT_PATCHES"; mkdir "$QUILT_PATCHES"
cp "$src/.replayvm-series" "$QUILT_PATCHES/series"
while read -r p; do cp "$here/$p" "$QUILT_PATCHES/"; done < "$QUILT_PATCHES/series"
if [ -s "$QUILT_PATCHES/series" ]; then
  rc=0; quilt push -a -q || rc=$?
  [ $rc = 0 ] || [ $rc = 2 ] || { echo "build-qemu: a patch failed to apply (see above)" >&2; exit 1; }
fi
rm -rf "$applied"; mkdir -p "$applied"; cp "$QUILT_PATCHES"/*.patch "$applied/" 2>/dev/null || true

# librrlog, the log-format library, is linked into QEMU from this tree;
# copy only what changed so an unchanged library does not relink
[ -f "$repo/rrlog/librrlog.a" ] || { echo "build-qemu: rrlog/librrlog.a missing (make rrlog)" >&2; exit 1; }
dst=$src/replay-vm/rrlog
mkdir -p "$dst/include" "$dst/gen"
sync_file() { cmp -s "$1" "$2" || cp "$1" "$2"; }
sync_file "$repo/rrlog/librrlog.a" "$dst/librrlog.a"
for f in "$repo"/rrlog/include/*.h; do sync_file "$f" "$dst/include/$(basename "$f")"; done
for f in "$repo"/rrlog/gen/*.h; do sync_file "$f" "$dst/gen/$(basename "$f")"; done

bld=$src/build-replayvm
if [ ! -f "$bld/build.ninja" ]; then
  mkdir -p "$bld"
  (cd "$bld" && ../configure --target-list=x86_64-softmmu --disable-docs --disable-werror \
      --enable-slirp --disable-gtk --disable-sdl --disable-vnc --disable-user --disable-tools \
      --disable-opengl --disable-spice --disable-xen --disable-guest-agent >/dev/null)
fi
ninja -C "$bld" -j"$(nproc)" qemu-system-x86_64
mkdir -p "$bindir"
cp -f "$bld/qemu-system-x86_64" "$bindir/"
cp -f "$bindir/qemu-system-x86_64" "$out/"
echo "$key" > "$out/VERSION"
echo "build-qemu: built $key"
