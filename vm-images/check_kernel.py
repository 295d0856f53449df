#!/usr/bin/env python3
"""Check the guest image's kernel against what the guest module relies on.

Debian moves linux-image-amd64 and the image follows it.  The module is
built against the new headers, but it also relies on things no header
states: kernel symbols it looks up at load, structures it decodes by hand
(struct text_poke_loc, SLUB's kmem_cache head), the registers its kprobe
handlers read as arguments, and the list of kernel functions it calls
natively (guest-module/dbt/notrace.h, taken out of the function tracer).  A
change there broke recordings at run time; this check fails the image
build instead, naming what changed.

Needs the image's vmlinux (its .BTF section) and kallsyms-all.txt (written
by kallsyms_elf.py, which boots the image once).

  vm-images/check_kernel.py [IMAGE_DIR]      (default build/image)
"""
import bisect
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import btf  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(REPO, "guest-module")
IMAGE = os.path.join(REPO, "build", "image")

# Functions whose arguments the module reads from registers at their entry
# (dbt/coherence.c's kprobe handlers, crew/trainfree.c's hooks, the sync
# counter emitted at do_sync_core): the parameter types, in order.
PARAMS = {
    "text_poke": ["void *", "void *", "size_t"],                    # di=addr, dx=len
    "text_poke_bp_batch": ["struct text_poke_loc *", "unsigned int"],  # di, si
    "module_memfree": ["void *"],
    "do_sync_core": ["void *"],
    "kfree": ["void *"],
    "kmem_cache_free": ["struct kmem_cache *", "void *"],
    "kmem_cache_free_bulk": ["struct kmem_cache *", "size_t", "void * *"],
    "free_unref_page": ["struct page *", "unsigned int"],
    "free_unref_page_list": ["struct list_head *"],
    "__free_pages_ok": ["struct page *", "unsigned int", "fpi_t"],
}

# Structures decoded without the kernel's definition: {member: (offset,
# size)} and the size where it matters (None: only the members).
# text_poke_loc comes from guest-module/dbt/pokebatch.h (RV_TPL_*);
# kmem_cache is crew/trainfree.c's struct slub_head.
def layouts():
    tpl = pokebatch_layout()
    return {
        "text_poke_loc": ({"rel_addr": (0, 4), "len": (tpl["RV_TPL_LEN"], 1),
                           "text": (tpl["RV_TPL_TEXT"], 5)}, tpl["RV_TPL_SIZE"]),
        "kmem_cache": ({"cpu_slab": (0, 8), "flags": (8, 4), "min_partial": (16, 8),
                        "size": (24, 4), "object_size": (28, 4)}, None),
        # the tables rv_ksym_table() walks (__start_/__stop_ pairs)
        "jump_entry": ({"code": (0, 4), "target": (4, 4), "key": (8, 8)}, 16),
        "static_call_site": ({"addr": (0, 4), "key": (4, 4)}, 8),
    }


def pokebatch_layout():
    text = open(os.path.join(MODULE, "dbt", "pokebatch.h")).read()
    return {k: int(v, 0) for k, v in re.findall(r"#define (RV_TPL_\w+)\s+(\w+)", text)}


def sources():
    """the module's C files, as paths under guest-module/ (dbt/, crew/, ...;
    not the userspace tests: test/, test_*.c)"""
    out = []
    for top, dirs, files in os.walk(MODULE):
        dirs[:] = [d for d in dirs if d != "test"]
        out += [os.path.relpath(os.path.join(top, f), MODULE) for f in files
                if f.endswith(".c") and not f.startswith("test_") and not f.endswith(".mod.c")]
    return sorted(out)


def module_symbols():
    """{symbol: (where, must be code)} for every kernel symbol the module
    names: kallsyms lookups, kprobe targets, trainfree.c's hooks."""
    found = {}
    pats = [(r'\brv_ksym\("([^"]+)"\)', False), (r'\bkln\("([^"]+)"\)', False),
            (r'\brv_ksym_table\("([^"]+)",\s*"([^"]+)"', False),
            (r'symbol_name\s*=\s*"([^"]+)"', True), (r'\[F_\w+\]\s*=\s*"([^"]+)"', True)]
    for name in sources():
        text = open(os.path.join(MODULE, name)).read()
        for pat, code in pats:
            for m in re.finditer(pat, text):
                line = text.count("\n", 0, m.start()) + 1
                for sym in m.groups():
                    if sym != "kallsyms_lookup_name":   # found through a kprobe, checked below
                        found.setdefault(sym, ("guest-module/%s:%d" % (name, line), code))
    found["kallsyms_lookup_name"] = ("guest-module/dbt/ksyms.c", True)
    return found


def read_kallsyms(image):
    path = os.path.join(image, "kallsyms-all.txt")
    if not os.path.exists(path):
        raise SystemExit("check_kernel: %s missing (run 'make symbols')" % path)
    syms = {}
    for line in open(path):
        p = line.split()
        if len(p) == 3:
            syms.setdefault(p[2], (int(p[0], 16), p[1]))
    return syms


def check_symbols(syms, wanted=None):
    problems = []
    for sym, (where, code) in sorted((wanted or module_symbols()).items()):
        if sym not in syms:
            problems.append("symbol %s (%s) is not in this kernel" % (sym, where))
        elif code and syms[sym][1] not in "tTwW":
            problems.append("symbol %s (%s) is no longer code (kallsyms type %s)"
                            % (sym, where, syms[sym][1]))
    return problems


def check_layouts(b):
    problems = []
    for name, (members, size) in layouts().items():
        got = b.struct(name)
        if got is None:
            problems.append("struct %s is not in this kernel's BTF" % name)
            continue
        have, have_size = got
        if size is not None and have_size != size:
            problems.append("struct %s is %d bytes, the module expects %d" % (name, have_size, size))
        for m, want in members.items():
            if have.get(m) != want:
                problems.append("struct %s: member %s is at %s (offset, size), the module expects %s"
                                % (name, m, have.get(m, "nowhere"), want))
    return problems


def check_params(b):
    problems, unchecked = [], []
    for func, want in PARAMS.items():
        have = b.params(func)
        if have is None:
            unchecked.append(func)
        elif [t for _, t in have] != want:
            problems.append("%s(%s): the module expects (%s)" % (
                func, ", ".join("%s %s" % (t, n) for n, t in have), ", ".join(want)))
    return problems, unchecked


def listed(macro):
    text = open(os.path.join(MODULE, "dbt", "notrace.h")).read()
    body = re.search(r"#define %s((?:.*\\\n)*.*)" % macro, text).group(1)
    return set(re.findall(r'"([^"]+)"', body))


# failure paths (the module's own no_calls.py allows the same), and
# preemption, which never happens with the translator's irqs off
STOP = ("__x86_return_thunk", "__stack_chk_fail", "__warn_printk", "panic", "_printk")


class Vmlinux:
    """The image's vmlinux with its text symbols (kallsyms.txt): what a
    function calls, whether it is traced (starts with a call to __fentry__)."""

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


def check_notrace(vm, roots=None, have=None):
    """The traced functions the module's native callees reach must all be
    in RV_NATIVE_CALLEES (byte mode takes them out of the tracer)."""
    roots = listed("RV_NATIVE_ROOTS") if roots is None else roots
    have = listed("RV_NATIVE_CALLEES") if have is None else have
    missing = sorted(r for r in roots if r not in vm.at)
    if missing:
        return ["guest-module/dbt/notrace.h names functions this kernel lacks: %s" % ", ".join(missing)]
    need = vm.traced_closure(roots)
    if not need <= have:
        return ["guest-module/dbt/notrace.h: this kernel's %s reach traced functions the list lacks "
                "(add them to RV_NATIVE_CALLEES): %s" % ("/".join(sorted(roots)),
                                                        ", ".join(sorted(need - have)))]
    return []


def main():
    image = sys.argv[1] if len(sys.argv) > 1 else IMAGE
    kver = open(os.path.join(image, "KVER")).read().strip() if os.path.exists(
        os.path.join(image, "KVER")) else "?"
    try:
        b = btf.Btf.from_elf(os.path.join(image, "vmlinux"))
    except (OSError, btf.BtfError) as e:
        raise SystemExit("check_kernel: %s" % e)
    problems = check_symbols(read_kallsyms(image)) + check_layouts(b)
    param_problems, unchecked = check_params(b)
    problems += param_problems + check_notrace(Vmlinux(image))
    if unchecked:
        print("check_kernel: warning: not in BTF, arguments not checked: %s" % ", ".join(unchecked))
    if problems:
        print("check_kernel: kernel %s differs from what the guest module relies on:" % kver,
              file=sys.stderr)
        for p in problems:
            print("  - " + p, file=sys.stderr)
        print("check_kernel: adapt guest-module/ to it (docs/kernels.md lists the kernels tested)",
              file=sys.stderr)
        return 1
    print("check_kernel: kernel %s: %d symbols, %d layouts, %d functions' arguments and the "
          "notrace list as the guest module expects" % (kver, len(module_symbols()), len(layouts()),
                                                         len(PARAMS) - len(unchecked)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
