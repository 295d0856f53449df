"""Issue 10: the patched KVM's RDTSC/RDTSCP/PAUSE exits and per-vCPU page
rights for page CREW (kvm-patches/).

Builds kvm.ko + kvm-amd.ko with kvm-patches/build.sh (cached) and the
static test tools kvm-patches/test/rrvm_exits.c and rrvm_crew.c, then
boots one nested L1 (vm-images/nested.py, TCG with SVM) that runs both
twice: against Debian's stock kvm-amd, where each must say "cap absent"
(exit 2; rrvm_exits after its native checks), and after swapping in the
patched modules, where every check must pass.

RRVM_KVM_DIR=DIR takes the "patched" modules from DIR instead of building
them (pointing it at stock modules shows that the test fails)."""
import os
import re
import subprocess
import time

import pytest

import nested
import vmrun

REPO = vmrun.REPO
KVM_DIR = os.path.join(REPO, "build", "kvm")

SCRIPT = r'''
kvm_load
echo "RRT: stock modules"
/opt/nested/bin/rrvm_exits
echo "RRT: stock status $?"
/opt/nested/bin/rrvm_crew
echo "RRT: stock crew status $?"
rmmod kvm_amd && rmmod kvm || echo "RRT: rmmod failed"
insmod /opt/nested/kvm-rr/kvm.ko && insmod /opt/nested/kvm-rr/kvm-amd.ko || echo "RRT: insmod failed"
echo "RRT: patched modules"
/opt/nested/bin/rrvm_exits
echo "RRT: patched status $?"
echo "RRT: crew"
/opt/nested/bin/rrvm_crew
echo "RRT: patched crew status $?"
dmesg | grep -i -e "disagrees about version" -e "unknown symbol" -e "invalid module format" || true
echo "RRT: done"
'''


def build():
    kvm_dir = os.environ.get("RRVM_KVM_DIR")
    if not kvm_dir:
        t = time.monotonic()
        subprocess.run([os.path.join(REPO, "kvm-patches", "build.sh"), KVM_DIR], check=True)
        print("kvm-patches/build.sh: %.1f s" % (time.monotonic() - t))
        kvm_dir = KVM_DIR
    os.makedirs(KVM_DIR, exist_ok=True)
    tools = {}
    for name in ("rrvm_exits", "rrvm_crew"):
        tools[name] = os.path.join(KVM_DIR, name)
        subprocess.run(["cc", "-std=c11", "-static", "-O2", "-Wall", "-Werror",
                        "-I", os.path.join(REPO, "kvm-patches"), "-o", tools[name],
                        os.path.join(REPO, "kvm-patches", "test", name + ".c")], check=True)
    return kvm_dir, tools


@pytest.fixture(scope="module")
def nested_output():
    kvm_dir, tools = build()
    extra = {"/opt/nested/bin/rrvm_exits": tools["rrvm_exits"],
             "/opt/nested/bin/rrvm_crew": tools["rrvm_crew"],
             "/opt/nested/kvm-rr/kvm.ko": os.path.join(kvm_dir, "kvm.ko"),
             "/opt/nested/kvm-rr/kvm-amd.ko": os.path.join(kvm_dir, "kvm-amd.ko")}
    r = nested.run(SCRIPT, l1_vcpus=1, l1_mem=2048, timeout=300, extra_files=extra)
    print(r.output)
    assert r.status == 0 and "RRT: done" in r.output, r.console[-3000:]
    assert "kvm loaded (Y npt)" in r.output, r.output
    assert vmrun.parse_console(r.console)[0] == 0
    return r.output


def test_patched_kvm_exits_on_rdtsc_rdtscp_pause(nested_output):
    stock, patched = nested_output.split("RRT: patched modules")
    patched = patched.split("RRT: crew")[0]
    # stock kvm-amd: native rdtsc/pause/rdtscp work, the capability is absent
    assert "RRT: stock status 2" in stock, stock
    assert "cap absent" in stock and "FAIL" not in stock, stock
    assert "PASS: without the cap: rdtsc native" in stock, stock

    # patched: the modules load and every check passes
    assert "RRT: rmmod failed" not in nested_output, nested_output
    assert "RRT: insmod failed" not in nested_output, nested_output
    assert "RRT: patched status 0" in patched, patched
    assert "FAIL" not in patched and "cap absent" not in patched, patched
    m = re.search(r"^(\d+) passed, (\d+) failed$", patched, re.M)
    assert m and int(m.group(1)) >= 20 and m.group(2) == "0", patched
    for what in ("rdtsc exits with KVM_EXIT_RRVM", "pause 3/3 exits with KVM_EXIT_RRVM",
                 "rdtscp: supplied values in edx:eax, ecx", "rdtscp: guest wrote the supplied"):
        assert "PASS: " + what in patched, patched


def test_patched_kvm_gives_each_vcpu_its_own_page_rights(nested_output):
    stock, patched = nested_output.split("RRT: patched modules")
    assert "RRT: stock crew status 2" in stock, stock
    crew = patched.split("RRT: crew")[1]
    assert "RRT: patched crew status 0" in crew, crew
    assert "FAIL" not in crew and "cap absent" not in crew, crew
    m = re.search(r"^(\d+) passed, (\d+) failed$", crew, re.M)
    assert m and int(m.group(1)) >= 25 and m.group(2) == "0", crew
    for what in ("vCPU 1: non-owner read: CREW exit", "vCPU 1: reader sees vCPU 0's write",
                 "vCPU 0: former exclusive owner lost write",
                 "vCPU 0: no rights while vCPU 1 maps the page writable",
                 "vCPU 0: fetch from a page it lost exits"):
        assert "PASS: " + what in crew, crew
