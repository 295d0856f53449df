#!/usr/bin/env python3
"""same_code.py OLD.ko NEW.ko: do two builds of the module hold the same code?

For a change that should not change behaviour (files moved, comments,
declarations moved between headers).  Compares:

  * `nm --defined-only`: the same symbols, types and addresses;
  * every function's size and bytes;
  * every relocation in every allocated section (.text, .data, the
    kernel's tables: __bug_table, __jump_table, .altinstructions, ...):
    its place, type and target, a target given as symbol+offset or, in a
    string section, as the string it points at.

Prints what differs.  A source file's path in __FILE__ (which WARN and
BUG record) naming the same file in another folder, and the labels of
strings moved by it, are listed but allowed: exit 0.  Anything else: exit 1.
Debug sections, .modinfo and the build id are not compared."""
import collections
import os
import re
import struct
import subprocess
import sys

SHT_SYMTAB, SHT_RELA, SHF_ALLOC, SHF_EXECINSTR, SHF_STRINGS = 2, 4, 0x2, 0x4, 0x20
STT_FUNC = 2
# x86-64 relocation types whose place is PC-relative: in an instruction
# the target is symbol + addend + 4 (the field ends the instruction, as it
# does for every operand but one followed by an immediate), in data
# (__bug_table, __jump_table, ...) symbol + addend
PCREL = {2, 4}          # R_X86_64_PC32, R_X86_64_PLT32


class Elf:
    def __init__(self, path):
        self.data = data = open(path, "rb").read()
        if data[:4] != b"\x7fELF" or data[4] != 2:
            raise SystemExit("same_code: %s is not a 64-bit ELF file" % path)
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
        Sec = collections.namedtuple("Sec", "name type flags offset size link info entsize")
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx][4]
        self.secs = [Sec(self.cstr(names + r[0]), r[1], r[2], r[4], r[5], r[6], r[7], r[9])
                     for r in raw]
        symtab = next(s for s in self.secs if s.type == SHT_SYMTAB)
        strs = self.secs[symtab.link].offset
        self.syms = []
        for i in range(symtab.size // 24):
            name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab.offset + i * 24)
            self.syms.append((self.cstr(strs + name), info & 0xf, shndx, value, size))
        # defined symbols of each section, sorted by value, to name a place
        self.by_sec = collections.defaultdict(list)
        for name, typ, shndx, value, size in self.syms:
            if name and 0 < shndx < len(self.secs):
                self.by_sec[shndx].append((value, size, name))
        for v in self.by_sec.values():
            v.sort()
        self.str_labels = {name for name, typ, shndx, value, size in self.syms
                           if 0 < shndx < len(self.secs) and self.secs[shndx].flags & SHF_STRINGS}

    def cstr(self, off):
        return self.data[off:self.data.index(b"\0", off)].decode("latin-1")

    def bytes_of(self, shndx, value, size):
        s = self.secs[shndx]
        return self.data[s.offset + value:s.offset + value + size]

    def place(self, shndx, off):
        """symbol+offset for an offset into section shndx: the last symbol
        at or before it"""
        best = None
        for value, size, name in self.by_sec.get(shndx, ()):
            if value > off:
                break
            best = (value, name)
        sec = self.secs[shndx].name
        return "%s:%s+%#x" % (sec, best[1], off - best[0]) if best else "%s+%#x" % (sec, off)

    def target(self, symidx, rtype, addend, code):
        name, typ, shndx, value, size = self.syms[symidx]
        if rtype in PCREL and code:
            addend += 4
        sec = self.secs[shndx] if 0 < shndx < len(self.secs) else None
        if sec and sec.flags & SHF_STRINGS:     # .LC label or section+addend: the string
            start = sec.offset + value + addend
            return "%s:%r" % (sec.name, self.data[start:self.data.index(b"\0", start)].decode("latin-1"))
        if typ != 3:                    # not STT_SECTION: the symbol names it
            return "%s%+d" % (name, addend)
        return self.place(shndx, value + addend)

    def relocs(self):
        """{section name: [(offset, type, target)]} for allocated sections"""
        out = {}
        for s in self.secs:
            if s.type != SHT_RELA or not self.secs[s.info].flags & SHF_ALLOC:
                continue
            rows, code = [], self.secs[s.info].flags & SHF_EXECINSTR
            for i in range(s.size // 24):
                off, info, addend = struct.unpack_from("<QQq", self.data, s.offset + i * 24)
                rows.append((off, info & 0xffffffff, self.target(info >> 32, info & 0xffffffff, addend, code)))
            out[self.secs[s.info].name] = sorted(rows)
        return out

    def functions(self):
        return {name: (shndx, value, size) for name, typ, shndx, value, size in self.syms
                if typ == STT_FUNC and shndx}


def moved_file(ga, gb):
    """both targets are strings naming the same source file in two folders"""
    m = [re.match(r"\.rodata\.str[^:]*:'(.*\.[chS])'$", g) for g in (ga, gb)]
    return all(m) and os.path.basename(m[0].group(1)) == os.path.basename(m[1].group(1))


def nm(path):
    return subprocess.run(["nm", "--defined-only", path], check=True,
                          capture_output=True, text=True).stdout.splitlines()


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    a, b = Elf(sys.argv[1]), Elf(sys.argv[2])
    bad, strings = [], []

    # labels of string literals (.LC*) move with the strings before them
    na, nb = nm(sys.argv[1]), nm(sys.argv[2])
    sa, sb = set(na), set(nb)
    moved = [x for x in sa ^ sb if x.split()[-1] in a.str_labels]
    bad += ["nm: only in old: %s" % x for x in sorted(sa - sb) if x not in moved]
    bad += ["nm: only in new: %s" % x for x in sorted(sb - sa) if x not in moved]
    print("nm --defined-only: %d and %d symbols, %s" % (
        len(na), len(nb), "identical" if na == nb else
        "the same but %d labels of strings moved" % (len(moved) // 2) if not bad else "DIFFERENT"))

    fa, fb = a.functions(), b.functions()
    same = 0
    for name in sorted(set(fa) | set(fb)):
        if name not in fa or name not in fb:
            bad.append("function %s only in %s" % (name, "new" if name in fb else "old"))
            continue
        if fa[name][2] != fb[name][2]:
            bad.append("function %s: size %d -> %d" % (name, fa[name][2], fb[name][2]))
        elif a.bytes_of(*fa[name]) != b.bytes_of(*fb[name]):
            bad.append("function %s: bytes differ" % name)
        else:
            same += 1
    print("functions: %d, %d of the same size and bytes" % (len(fa), same))

    ra, rb = a.relocs(), b.relocs()
    nrel, nbad = 0, len(bad)
    for sec in sorted(set(ra) | set(rb)):
        if sec not in ra or sec not in rb:
            bad.append("relocations of %s only in %s" % (sec, "new" if sec in rb else "old"))
            continue
        if len(ra[sec]) != len(rb[sec]):
            bad.append("%s: %d -> %d relocations" % (sec, len(ra[sec]), len(rb[sec])))
            continue
        shndx = next(i for i, s in enumerate(a.secs) if s.name == sec)
        for (oa, ta, ga), (ob, tb, gb) in zip(ra[sec], rb[sec]):
            nrel += 1
            if (oa, ta) != (ob, tb):
                bad.append("%s: relocation at %#x type %d -> at %#x type %d" % (sec, oa, ta, ob, tb))
            elif ga != gb:
                msg = "%s: %s -> %s" % (a.place(shndx, oa), ga, gb)
                (strings if moved_file(ga, gb) else bad).append(msg)
    print("relocations in allocated sections: %d, %d name a source file in another folder, "
          "%d differ otherwise" % (nrel, len(strings), len(bad) - nbad))
    for s in strings:
        print("  string: " + s)

    # the bytes of every allocated section but strings (code, data, the
    # kernel's tables; a relocated field holds 0 in a .ko: x86-64
    # relocations carry their addends)
    def compared(e):
        return {s.name: s for s in e.secs if s.flags & SHF_ALLOC and not s.flags & SHF_STRINGS
                and s.type != 8 and s.name not in (".modinfo", ".note.gnu.build-id")}
    sa, sb, nbad = compared(a), compared(b), len(bad)
    for name in sorted(set(sa) | set(sb)):
        s, t = sa.get(name), sb.get(name)
        if not s or not t or s.size != t.size:
            bad.append("section %s: size %s -> %s" % (name, s and s.size, t and t.size))
        elif a.data[s.offset:s.offset + s.size] != b.data[t.offset:t.offset + t.size]:
            bad.append("section %s: bytes differ" % name)
    print("allocated sections but strings, .modinfo, the build id: %d, %d differ"
          % (len(sa), len(bad) - nbad))

    for x in bad:
        print("DIFFERENT: " + x)
    print("same code" + (" (files' paths differ)" if strings else "") if not bad else "NOT the same code")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
