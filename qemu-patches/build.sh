#!/usr/bin/env bash
# Builds Debian's QEMU 7.2 with replay-vm's side of it:
#   src/    replay-vm's own QEMU files (replay-vm/*, include/sysemu/rrvm*.h,
#           target/i386/.../rrvm-*, ...) at their paths in the QEMU tree;
#           mirrored into the tree, only changed files copied, so that ninja
#           rebuilds only what changed
#   hooks/  the edits to QEMU's own files, a short quilt series (hooks/series)
#
# usage: build.sh [OUT]          build, copy qemu-system-x86_64 and VERSION to
#                                OUT (default build/qemu)
#        build.sh --source-only  prepare the patched source tree, print its
#                                path, build nothing
#
# The source tree and build dir live in a cache outside the work tree
# ($REPLAY_VM_CACHE, default ~/.cache/replay-vm), one per Debian source
# version, under qemu-src2/ (qemu-src/ held trees patched by the old
# 66-patch series; they are never reused).  The hooks are applied with quilt
# (own .pc dir so Debian's own quilt state is untouched); only hooks that
# differ from the ones applied last time are popped and re-pushed.  Finished
# binaries are kept per (source version, hash of src/, hooks/, this script
# and rrlog/): an unchanged tree "rebuilds" by copying one file.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
source_only=false
if [ "${1:-}" = --source-only ]; then source_only=true; shift; fi
out=${1:-$repo/build/qemu}
cache=${REPLAY_VM_CACHE:-$HOME/.cache/replay-vm}
hooks=$here/hooks
srcdir=$here/src

ver=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ {print $2}' | sort -V | tail -1)
[ -n "$ver" ] || { echo "build-qemu: no qemu source package (run 'make deps': deb-src must be enabled)" >&2; exit 1; }

hook_list() { { grep -v '^#' "$hooks/series" || true; } | sed '/^$/d'; }
src_list() { (cd "$srcdir" && find . -type f | sed 's|^\./||' | LC_ALL=C sort); }

series_hash() {
  # everything the binary depends on from this repo: the new files (names
  # and contents), the hooks and their series, the build options (this
  # script), and the libraries QEMU links from the repo
  { src_list | while read -r f; do echo "src/$f"; cat "$srcdir/$f"; done
    cat "$hooks/series"; hook_list | while read -r p; do cat "$hooks/$p"; done
    cat "$here/build.sh"; find "$repo/rrlog" -name '*.[ch]' -o -name '*.proto' 2>/dev/null | sort | xargs -r cat; } |
    sha256sum | cut -c1-16
}
key="${ver#*:}-$(series_hash)"
bindir=$cache/qemu-bin/$key

if ! $source_only; then
  mkdir -p "$out" && out=$(cd "$out" && pwd)
  if [ -x "$bindir/qemu-system-x86_64" ]; then
    cp -f "$bindir/qemu-system-x86_64" "$out/"
    echo "$key" > "$out/VERSION"
    echo "build-qemu: cached $key"
    exit 0
  fi
fi

# a hook must not touch a file that src/ provides (src/ holds only files
# that Debian's source does not have)
hook_files() { hook_list | while read -r p; do sed -n 's|^+++ [^/]*/\([^[:space:]]*\).*|\1|p' "$hooks/$p"; done | LC_ALL=C sort -u; }
clash=$(LC_ALL=C comm -12 <(hook_files) <(src_list))
[ -z "$clash" ] || { echo "build-qemu: hooks patch files that src/ provides: $clash" >&2; exit 1; }

layout="src+hooks 1"
srcroot=$cache/qemu-src2/${ver#*:}
src=$(ls -d "$srcroot"/qemu-*/ 2>/dev/null | head -1 || true)
src=${src%/}
# a tree patched some other way (the old series) is not reused
if [ -n "$src" ] && [ -d "$src/.pc-replayvm" ] &&
   [ "$(cat "$src/.replayvm-layout" 2>/dev/null)" != "$layout" ]; then
  echo "build-qemu: $src was patched by another layout; extracting afresh" >&2
  src=""
fi
if [ -z "$src" ]; then
  rm -rf "$srcroot"; mkdir -p "$srcroot"
  (cd "$srcroot" && apt-get source -q qemu="$ver" >/dev/null)
  src=$(ls -d "$srcroot"/qemu-*/ | head -1)
  src=${src%/}
fi
echo "$layout" > "$src/.replayvm-layout"

# src/ -> the tree: copy only what changed (ninja goes by mtimes); remove
# the files mirrored last time that src/ no longer has
manifest=$src/.replayvm-src-files
src_list > "$manifest.new"
if [ -f "$manifest" ]; then
  LC_ALL=C comm -23 <(LC_ALL=C sort "$manifest") "$manifest.new" | while read -r f; do rm -f "$src/$f"; done
fi
while read -r f; do
  if ! cmp -s "$srcdir/$f" "$src/$f"; then
    mkdir -p "$(dirname "$src/$f")"
    cp "$srcdir/$f" "$src/$f"
  fi
done < "$manifest.new"
mv "$manifest.new" "$manifest"

export QUILT_PC=.pc-replayvm QUILT_PATCHES=patches-replayvm
applied=$src/.replayvm-applied   # copies of the hooks as applied last time
mkdir -p "$applied"
cd "$src"
hook_list > "$src/.replayvm-series"

# pop down to the first hook that changed since last time; quilt pops
# only what its series file names, so pop with last time's series and
# patches (a hook dropped from the series is popped too)
keep=""
stamps=$src/.replayvm-stamps
if [ -f "$QUILT_PC/applied-patches" ]; then
  # the hooked files' contents and mtimes: one that a re-pushed hook leaves
  # as it was gets its mtime back, so that ninja does not rebuild it
  find "$QUILT_PC" -mindepth 2 -type f ! -name '.*' | sed "s|^$QUILT_PC/[^/]*/||" | sort -u |
    while read -r f; do
      [ -f "$f" ] && echo "$(sha1sum < "$f" | cut -c1-40) $(stat -c %.9Y "$f") $f"
    done > "$stamps"
  while read -r p; do
    if [ -f "$hooks/$p" ] && cmp -s "$hooks/$p" "$applied/$p" &&
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
    echo "build-qemu: could not pop the hooks applied last time in $src" >&2; exit 1
  fi
fi
rm -rf "$QUILT_PATCHES"; mkdir "$QUILT_PATCHES"
cp "$src/.replayvm-series" "$QUILT_PATCHES/series"
while read -r p; do cp "$hooks/$p" "$QUILT_PATCHES/"; done < "$QUILT_PATCHES/series"
if [ -s "$QUILT_PATCHES/series" ]; then
  rc=0; quilt push -a -q || rc=$?
  [ $rc = 0 ] || [ $rc = 2 ] || { echo "build-qemu: a hook failed to apply (see above)" >&2; exit 1; }
fi
rm -rf "$applied"; mkdir -p "$applied"; cp "$QUILT_PATCHES"/*.patch "$applied/" 2>/dev/null || true
if [ -f "$stamps" ]; then
  while read -r h t f; do
    if [ -f "$f" ] && [ "$(sha1sum < "$f" | cut -c1-40)" = "$h" ]; then touch -m -d "@$t" "$f"; fi
  done < "$stamps"
  rm -f "$stamps"
fi

if $source_only; then
  echo "$src"
  exit 0
fi

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
