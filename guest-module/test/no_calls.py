#!/usr/bin/env python3
"""no_calls.py MODULE FUNC...: fail if a FUNC of the kernel module, or a
module function it calls or jumps to (followed to the end), reaches kernel
text.  Allowed: the ftrace call (__fentry__, a nop until traced), the
jump to the return thunk that stands for ret, and the ALLOWED below.  An indirect call or jump
goes through a retpoline thunk, kernel text, and is refused too.

Why: coherence.c's kretprobe handlers run on the kernel's stack, where a
call into kernel text runs it natively: no ordering, no det points."""
import re
import subprocess
import sys

# pv_ops: paravirt irq save/restore, patched inline at boot; the others
# are the stack protector's and WARN's failure paths
ALLOWED = ("__fentry__", "__x86_return_thunk", "pv_ops", "__stack_chk_fail", "__warn_printk")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def functions(obj):
    """name -> [(mnemonic, operand target or None, [relocation symbols])]"""
    funcs, cur = {}, None
    for line in run("objdump", "-dr", "--no-show-raw-insn", obj).splitlines():
        head = re.match(r"[0-9a-f]+ <([^>]+)>:$", line)
        insn = re.match(r" +[0-9a-f]+:\t(\S+)\s*(.*)", line)
        rel = re.match(r"\t+[0-9a-f]+: R_X86_64_\S+\t(\S+)", line)
        if head:
            cur = funcs.setdefault(head.group(1), [])
        elif rel and cur:
            cur[-1][2].append(re.sub(r"[-+]0x[0-9a-f]+$", "", rel.group(1)))
        elif insn and cur is not None:
            tgt = re.search(r"<([^>+]+)>$", insn.group(2))
            op = insn.group(1) + (" *" if insn.group(2).startswith("*") else "")
            cur.append((op, tgt and tgt.group(1), []))
    return funcs


def main():
    obj, roots = sys.argv[1], sys.argv[2:]
    text = {p[2] for p in (l.split() for l in run("nm", obj).splitlines())
            if len(p) == 3 and p[1] in "Tt"}
    funcs, bad, todo, seen = functions(obj), [], list(roots), set()
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        if fn not in funcs:
            sys.exit("no_calls: %s not in %s" % (fn, obj))
        for op, tgt, rel in funcs[fn]:
            branch = op.startswith(("call", "jmp"))
            for t in rel:
                if t in text:
                    todo.append(t)
                elif branch and not t.startswith(ALLOWED):
                    bad.append("%s: %s %s" % (fn, op, t))
            if branch and not rel:
                if tgt in text:
                    if tgt != fn:
                        todo.append(tgt)
                elif op.startswith("call") or "*" in op:
                    bad.append("%s: %s to no module function" % (fn, op))
    if bad:
        sys.exit("no_calls: " + "; ".join(sorted(set(bad))))
    print("no_calls: %s (and %d module function(s) they reach) call no kernel text"
          % (" ".join(roots), len(seen) - len(roots)))


main()
