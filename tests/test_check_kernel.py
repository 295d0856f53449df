"""The kernel functions the guest module calls natively, and every traced
function they reach, are the ones byte mode takes out of the function
tracer (guest-module/notrace.h).  Checked against the image's vmlinux: a
new kernel, or a new native call in the module, that reaches a traced
function the list lacks fails here instead of crashing a recording that
turns on function tracing (no guest boots)."""
import bisect
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = os.environ.get("RV_IMAGE") or os.path.join(REPO, "build", "image")
HEADER = os.path.join(REPO, "guest-module", "notrace.h")
# failure paths (the module's own no_calls.py allows the same), and
# preemption, which never happens with the translator's irqs off
STOP = ("__x86_return_thunk", "__stack_chk_fail", "__warn_printk", "panic", "_printk")


def listed(macro):
    text = open(HEADER).read()
    body = re.search(r"#define %s((?:.*\\\n)*.*)" % macro, text).group(1)
    return set(re.findall(r'"([^"]+)"', body))


class Vmlinux:
    def __init__(self, image):
        self.path = os.path.join(image, "vmlinux")
        syms = []
        for line in open(os.path.join(image, "kallsyms.txt")):
            p = line.split()
            if len(p) == 2:
                syms.append((int(p[0], 16), p[1]))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]
        self.at = {n: a for a, n in syms}
        self.fentry = self.at["__fentry__"]

    def name_at(self, a):
        i = bisect.bisect_right(self.addrs, a) - 1
        return self.names[i] if i >= 0 and self.addrs[i] == a else None

    def insns(self, name):
        a = self.at[name]
        i = bisect.bisect_right(self.addrs, a)
        end = self.addrs[i] if i < len(self.addrs) else a + 4096
        out = subprocess.run(["objdump", "-d", "--start-address=%#x" % a,
                              "--stop-address=%#x" % end, self.path],
                             capture_output=True, text=True, check=True).stdout
        return [l for l in out.splitlines() if re.match(r"\s*ffffffff[0-9a-f]+:\t", l)]

    def traced_closure(self, roots):
        """the traced functions reached from roots by direct calls/jumps"""
        seen, todo, traced = set(), list(roots), set()
        while todo:
            n = todo.pop()
            if n in seen or n in STOP or "preempt_schedule" in n or n not in self.at:
                continue
            seen.add(n)
            ins = self.insns(n)
            if ins and ins[0].rstrip().endswith("call   %#x" % self.fentry):
                traced.add(n)
            for l in ins:
                m = re.search(r"\t(?:call|jmp)\s+0x([0-9a-f]+)$", l)
                t = m and self.name_at(int(m.group(1), 16))
                if t and t != "__fentry__":
                    todo.append(t)
        return traced


@pytest.mark.skipif(not os.path.exists(os.path.join(IMAGE, "vmlinux")),
                    reason="no image (make image)")
def test_notrace_list_covers_what_the_module_runs_natively():
    vm = Vmlinux(IMAGE)
    roots = listed("RV_NATIVE_ROOTS")
    missing = [r for r in roots if r not in vm.at]
    assert not missing, "notrace.h names functions this kernel lacks: %s" % missing
    need = vm.traced_closure(roots)
    have = listed("RV_NATIVE_CALLEES")
    assert need <= have, "add to RV_NATIVE_CALLEES: %s" % sorted(need - have)
    assert "insn_decode" in need and "lookup_address" in need
