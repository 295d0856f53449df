"""The image's kernel against what the guest module relies on
(vm-images/check_kernel.py, run by `make image`): kernel symbols the
module looks up, structures it decodes without their definition, the
arguments its handlers read from registers, and the kernel functions it
calls natively with every traced function they reach (guest-module/
dbt/notrace.h, which byte mode takes out of the function tracer: a new
kernel, or a new native call in the module, that reaches a traced function
the list lacks fails here instead of crashing a recording that turns on
function tracing).  Each check is also shown to fail on a kernel that
differs.  No guest boots."""
import copy
import os
import subprocess
import sys

import pytest

import btf
import check_kernel

IMAGE = os.environ.get("RV_IMAGE") or check_kernel.IMAGE
need_image = pytest.mark.skipif(not os.path.exists(os.path.join(IMAGE, "kallsyms-all.txt")),
                                reason="no image symbols (make image)")


@pytest.fixture(scope="module")
def kernel_btf():
    return btf.Btf.from_elf(os.path.join(IMAGE, "vmlinux"))


@need_image
def test_the_image_kernel_passes_the_check():
    r = subprocess.run([sys.executable, check_kernel.__file__, IMAGE], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "as the guest module expects" in r.stdout


@need_image
def test_a_missing_or_changed_symbol_is_named():
    syms = check_kernel.read_kallsyms(IMAGE)
    wanted = check_kernel.module_symbols()
    assert "text_poke_bp_batch" in wanted and "__start_static_call_sites" in wanted
    assert wanted["free_unref_page"][1], "trainfree.c's hooks must be code"
    assert not check_kernel.check_symbols(syms, wanted)
    gone = dict(syms)
    del gone["do_sync_core"]
    gone["text_poke"] = (gone["text_poke"][0], "D")
    p = check_kernel.check_symbols(gone, wanted)
    assert any("do_sync_core" in x and "not in this kernel" in x for x in p), p
    assert any("text_poke " in x and "no longer code" in x for x in p), p


def changed(b, type_id):
    """a copy of b whose type type_id can be changed; that type"""
    b = copy.copy(b)
    b.types = list(b.types)
    b.types[type_id] = copy.deepcopy(b.types[type_id])
    return b, b.types[type_id]


@need_image
def test_a_changed_layout_is_named(kernel_btf):
    assert not check_kernel.check_layouts(kernel_btf)
    b, tpl = changed(kernel_btf, kernel_btf.by_name[(btf.STRUCT, "text_poke_loc")])
    for m in tpl.items:
        if m.name == "len":
            m.bit_offset += 8
    tpl.size = 24
    p = check_kernel.check_layouts(b)
    assert any("text_poke_loc: member len" in x for x in p), p
    assert any("text_poke_loc is 24 bytes" in x for x in p), p


@need_image
def test_changed_arguments_are_named(kernel_btf):
    problems, unchecked = check_kernel.check_params(kernel_btf)
    assert not problems and not unchecked, (problems, unchecked)
    b, proto = changed(kernel_btf, kernel_btf.find(btf.FUNC, "text_poke_bp_batch").ref)
    proto.items.reverse()
    problems, _ = check_kernel.check_params(b)
    assert any(x.startswith("text_poke_bp_batch(unsigned int nr_entries") for x in problems), problems


@need_image
def test_notrace_list_covers_what_the_module_runs_natively():
    vm = check_kernel.Vmlinux(IMAGE)
    assert not check_kernel.check_notrace(vm)
    need = vm.traced_closure(check_kernel.listed("RV_NATIVE_ROOTS"))
    assert "insn_decode" in need and "lookup_address" in need
    have = check_kernel.listed("RV_NATIVE_CALLEES") - {"insn_init"}
    p = check_kernel.check_notrace(vm, have=have)
    assert p and "insn_init" in p[0], p
