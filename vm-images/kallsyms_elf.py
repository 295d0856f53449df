#!/usr/bin/env python3
"""Kernel symbols for gdb: boot the guest image once, read /proc/kallsyms,
and write an ELF file holding only the text symbols at their addresses
(and kallsyms.txt, the same as text; kallsyms-all.txt, every symbol of the
kernel image with its type, for vm-images/check_kernel.py).

There is no vmlinux with debug info in Debian's kernel packages (only the
huge -dbg package), and the image boots with nokaslr, so the addresses seen
by this boot are the addresses of every replay: `gdb build/image/kallsyms.elf`
then lets `break vfs_read` and `x/i $pc` name kernel functions.

  vm-images/kallsyms_elf.py [--image build/image] [--out build/image/kallsyms.elf]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmrun  # noqa: E402

LINE = re.compile(r"^([0-9a-f]{16}) ([a-zA-Z]) (\S+)$")
TEXT_BASE = 0xffffffff80000000     # kernel text mapping (nokaslr)
TEXT_END = 0xffffffffa0000000      # modules start here


def read_kallsyms(image, timeout=300):
    r = vmrun.run(vcpus=1, cmd="cat /proc/kallsyms", image=image, accel="tcg",
                  net=False, timeout=timeout)
    if r.status != 0:
        raise SystemExit("kallsyms_elf: the guest did not list its symbols (status %d)" % r.status)
    syms, image = {}, []
    for line in r.output.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        addr, kind, name = int(m.group(1), 16), m.group(2), m.group(3)
        if TEXT_BASE <= addr < TEXT_END:
            image.append((addr, kind, name))
            if kind in "tTwW" and name not in syms:
                syms[name] = addr
    if len(syms) < 1000:
        raise SystemExit("kallsyms_elf: only %d kernel text symbols read (addresses hidden?)" % len(syms))
    return syms, image


def assemble(syms, out):
    """Labels in a NOBITS text section placed at the kernel's text base."""
    base = min(syms.values()) & ~0xfff
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.s")
        with open(src, "w") as f:
            f.write('.section .ktext,"ax",@nobits\n')
            for name, addr in sorted(syms.items(), key=lambda kv: kv[1]):
                if not re.fullmatch(r"[A-Za-z_.$][A-Za-z0-9_.$]*", name):
                    continue
                f.write(".org 0x%x\n.globl %s\n.type %s,@function\n%s:\n" % (addr - base, name, name, name))
        obj = os.path.join(tmp, "k.o")
        subprocess.run(["as", "--64", "-o", obj, src], check=True)
        subprocess.run(["ld", "-m", "elf_x86_64", "--section-start=.ktext=0x%x" % base, "-e", "0", "-o", out + ".tmp", obj],
                       check=True)
    os.replace(out + ".tmp", out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--image", default=vmrun.IMAGE)
    ap.add_argument("--out", default=os.path.join(vmrun.IMAGE, "kallsyms.elf"))
    a = ap.parse_args()
    syms, image = read_kallsyms(a.image)
    with open(os.path.splitext(a.out)[0] + ".txt", "w") as f:
        for name, addr in sorted(syms.items(), key=lambda kv: kv[1]):
            f.write("%016x %s\n" % (addr, name))
    assemble(syms, a.out)
    # every symbol of the kernel image, data too (vm-images/check_kernel.py);
    # written last: it is the Makefile's target
    with open(os.path.splitext(a.out)[0] + "-all.txt.tmp", "w") as f:
        for addr, kind, name in image:
            f.write("%016x %s %s\n" % (addr, kind, name))
    os.replace(os.path.splitext(a.out)[0] + "-all.txt.tmp", os.path.splitext(a.out)[0] + "-all.txt")
    print("kallsyms_elf: %d kernel text symbols -> %s" % (len(syms), a.out))


if __name__ == "__main__":
    main()
