#!/usr/bin/env python3
"""Where do two RAM dumps of replay-vm differ?  (QEMU: RRVM_RAMDUMP=DIR,
RRVM_RAMDUMP_FULL=N; see rrvm_ram_dump in softmmu/physmem.c, qemu-patches/hooks/0011-*.)

    tests/ramdiff.py DIR N [--kallsyms build/image/kallsyms.elf]

Lists the 4 KiB pages whose hashes differ at RAM hash N between the
recording and the replay; with the full dumps (N.ram, or the deltas of RRVM_RAMDUMP_FULL=delta),
the differing bytes, 8-byte words at a time, and kernel symbols for word
values that look like kernel text addresses."""
import argparse, struct, subprocess, sys, os


def load_syms(path):
    syms = []
    if not path or not os.path.exists(path):
        return syms
    out = subprocess.run(["nm", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3:
            syms.append((int(p[0], 16), p[2]))
    return syms


def sym(syms, a):
    import bisect
    i = bisect.bisect_right([s for s, _ in syms], a) - 1
    if i < 0 or a - syms[i][0] > 0x10000:
        return ""
    return "%s+0x%x" % (syms[i][1], a - syms[i][0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("n", type=int)
    ap.add_argument("--kallsyms", default="build/image/kallsyms.elf")
    ap.add_argument("--max-words", type=int, default=40)
    ap.add_argument("--excl", help="a QEMU stderr with RRVM_DEBUG 'rrvm: excluded GPA+LEN' lines: "
                    "pages inside those ranges are left out")
    a = ap.parse_args()
    excl = []
    if a.excl:
        for line in open(a.excl, errors="replace"):
            if "rrvm: excluded " in line:
                g, n = line.split("rrvm: excluded ")[1].split()[0].split("+")
                excl.append((int(g, 16), int(n, 16)))
    rec = open(os.path.join(a.dir, "record-%d.pages" % a.n), "rb").read()
    rep = open(os.path.join(a.dir, "replay-%d.pages" % a.n), "rb").read()
    n = len(rec) // 8
    def excluded(pfn):
        return any(g <= pfn << 12 and (pfn + 1) << 12 <= g + l for g, l in excl)
    diff = [i for i in range(n) if rec[8 * i:8 * i + 8] != rep[8 * i:8 * i + 8] and not excluded(i)]
    print("%d of %d pages differ" % (len(diff), n))
    runs, start = [], None
    for i, p in enumerate(diff):
        if start is None:
            start = p
        if i + 1 == len(diff) or diff[i + 1] != p + 1:
            runs.append((start, p))
            start = None
    for s, e in runs[:60]:
        print("  pfn 0x%x-0x%x (gpa 0x%x, %d pages)" % (s, e, s << 12, e - s + 1))
    pages = {m: PageSource(a.dir, m, a.n) for m in ("record", "replay")}
    if not all(ps.ok for ps in pages.values()):
        return
    syms = load_syms(a.kallsyms)
    shown = 0
    for p in diff:
        x, y = pages["record"].page(p), pages["replay"].page(p)
        for off in range(0, 4096, 8):
            u, v = struct.unpack("<Q", x[off:off + 8])[0], struct.unpack("<Q", y[off:off + 8])[0]
            if u != v:
                print("  gpa 0x%09x: record %016x %-28s replay %016x %s" %
                      ((p << 12) + off, u, sym(syms, u), v, sym(syms, v)))
                shown += 1
                if shown >= a.max_words:
                    return


class PageSource:
    """RAM of one run at hash n: a full dump, or rebuilt from deltas 0..n."""

    def __init__(self, d, mode, n):
        self.full = os.path.join(d, "%s-%d.ram" % (mode, n))
        self.deltas = [os.path.join(d, "%s-%d.delta" % (mode, k)) for k in range(n + 1)]
        self.index = None
        self.ok = os.path.exists(self.full) or all(os.path.exists(f) for f in self.deltas)

    def page(self, pfn):
        if os.path.exists(self.full):
            with open(self.full, "rb") as f:
                f.seek(pfn << 12)
                return f.read(4096)
        if self.index is None:
            self.index = {}
            for f in self.deltas:
                size = os.path.getsize(f)
                with open(f, "rb") as fh:
                    for off in range(0, size, 4104):
                        fh.seek(off)
                        self.index[struct.unpack("<Q", fh.read(8))[0]] = (f, off + 8)
        if pfn not in self.index:
            return bytes(4096)
        f, off = self.index[pfn]
        with open(f, "rb") as fh:
            fh.seek(off)
            return fh.read(4096)


if __name__ == "__main__":
    main()
