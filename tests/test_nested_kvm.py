"""Issue 10 (in progress): the nested KVM test bench.

An L1 guest under TCG with an AMD SVM CPU loads Debian's kvm-amd and runs
our QEMU with -enable-kvm for an L2 guest (vm-images/nested.py).  Checked
here: KVM works in L1 (NPT on), an L2 boots and runs a workload under KVM
with the userspace irqchip our KVM backend uses, and a multi-vCPU
recording under Debian's stock KVM is refused with a clear reason
(page CREW under KVM needs the patched KVM's per-vCPU page rights)."""
import nested
import vmrun

SCRIPT = r'''
kvm_load
l2 1 "/opt/rv/bin/ipc -n 500 | tail -1" > /tmp/l2.out 2>&1
echo "L2 status $?"
grep RESULT /tmp/l2.out
l2 2 true -rr record,log=/tmp/run.rr > /tmp/l2rr.out 2>&1
echo "L2 rr2 status $?"
grep -o "under KVM several vCPUs need page CREW.*" /tmp/l2rr.out
'''


def test_l1_runs_an_l2_under_kvm_and_refuses_smp_recording():
    r = nested.run(SCRIPT, timeout=900)
    assert r.status == 0, r.console[-3000:]
    assert "kvm loaded (Y npt)" in r.output, r.output
    assert "L2 status 0" in r.output and "RESULT ipc" in r.output, r.output
    assert "L2 rr2 status 1" in r.output, r.output
    assert "under KVM several vCPUs need page CREW" in r.output, r.output
    assert "KVM_CAP_RRVM_CREW" in r.output, r.output
    assert vmrun.parse_console(r.console)[0] == 0
