"""Issue 7, training mode (thesis 4.2.2): the guest module in training mode
finds the kernel instructions that touch memory shared between vCPUs;
a byte-CREW recording takes that list as an input (fw_cfg) and instruments
only those instructions.  Host-side parsing/merging: vm-images/test_training_unit.py."""
import os

import pytest
import rrtest
import training

vmrun = rrtest.vmrun


@pytest.fixture(scope="module")
def trained_list(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("train") / "k.pcs")
    t = training.train(["racy_kernel -p 2 -n 200"], vcpus=2, timeout=600)
    training.save(t, p)
    return p


def test_training_run_writes_a_list_for_this_kernel(trained_list):
    t = training.load(trained_list)
    full = training.load(trained_list + ".all")
    kver = open(os.path.join(vmrun.IMAGE, "KVER")).read().strip()
    assert t.header["kernel-release"] == kver
    assert len(t.header["build-id"]) == 40, t.header
    assert t.header["kernel-sha256"] == training.sha256(os.path.join(vmrun.IMAGE, "vmlinuz"))
    c = training.coverage(full)
    # racy_kernel shares a file, a pipe and a socket: some pcs are shared, not all
    assert 100 < c["shared_pcs"] < c["executed_pcs"], c
    assert 0.05 < c["shared_access_share"] < 0.95, c
    assert t.shared() == full.shared()


def test_a_list_of_another_kernel_build_is_refused(trained_list, tmp_path):
    """The host checks the image (vmlinuz sha256) before booting; the
    module checks the build id itself."""
    text = open(trained_list).read()
    other = tmp_path / "other.pcs"
    other.write_text(text.replace("# kernel-sha256 ", "# kernel-sha256 0"))
    with pytest.raises(vmrun.SetupError, match="another kernel"):
        vmrun.run(vcpus=2, accel="tcg", record=str(tmp_path / "a.rr"), crew="byte",
                  trained=str(other), cmd="true")
    bid = training.load(trained_list).header["build-id"]
    other.write_text(text.replace("# build-id " + bid, "# build-id " + "0" * 40))
    r = vmrun.run(vcpus=2, accel="tcg", record=str(tmp_path / "b.rr"), crew="byte",
                  trained=str(other), cmd="true", timeout=300)
    assert r.status == vmrun.EXIT_SETUP, r.console[-2000:]
    assert "trained list was made for another kernel build" in r.console, r.console[-2000:]


def cut_list(trained_list, tmp_path, n=20):
    """The header and the first few shared pcs: most shared accesses untrained."""
    lines = open(trained_list).read().splitlines()
    cut = tmp_path / "cut.pcs"
    cut.write_text("\n".join([l for l in lines if l.startswith("#")] +
                             [l for l in lines if l.startswith("S")][:n]) + "\n")
    return str(cut)


def test_incomplete_list_counts_untrained_accesses_and_replays(trained_list, tmp_path):
    """A list that misses most shared pcs: the untrained sites still take
    ownership through logged transfers (only their release is unfenced), so
    the recording replays; the module's count of untrained accesses to
    shared bytes reaches the End record, the record run's warning and
    replay-vm info."""
    log = tmp_path / "c.rr"
    r = rrtest.record(log, vcpus=2, crew="byte", trained=cut_list(trained_list, tmp_path),
                      workload="racy_kernel", args=["-p", "2", "-n", "50"], timeout=600)
    assert r.untrained_total > 0, r.console[-2000:]
    info = rrtest.info(log)
    assert "untrained accesses: %d by instructions not in the trained list" % r.untrained_total \
        in info, info
    rp = rrtest.replay(log, timeout=600)
    assert rrtest.results(rp.output) == rrtest.results(r.output)


@pytest.mark.skipif(os.environ.get("REPLAYVM_FULL") != "1", reason="make test-full")
def test_untrained_report_on_the_debug_console(trained_list, tmp_path):
    """untrained_report=1: each untrained access to a shared byte (1st, 2nd,
    4th ... per vCPU and pc) on port 0xe9; such a recording is not replayed
    (the reports park vCPUs off exact positions)."""
    r = vmrun.run(vcpus=2, accel="tcg", record=str(tmp_path / "c.rr"), crew="byte",
                  trained=cut_list(trained_list, tmp_path), untrained_report=True,
                  workload="racy_kernel", args=["-p", "2", "-n", "50"], timeout=600)
    assert r.status == 0, r.console[-2000:]
    assert r.untrained and r.untrained["pcs"] > 10, r.untrained
    assert "vmrun: warning: UNTRAINED" in r.console
    # every reported access is in the module's own count (End record)
    assert r.untrained_total >= r.untrained["accesses"] > 0, (r.untrained_total, r.untrained)


@pytest.mark.skipif(os.environ.get("REPLAYVM_FULL") != "1", reason="make test-full")
def test_record_with_list_replays(trained_list, tmp_path):
    log = tmp_path / "run.rr"
    rec = rrtest.record(log, vcpus=2, crew="byte", trained=trained_list, workload="racy_kernel",
                        args=["-p", "2", "-n", "200"], timeout=900)
    want = rrtest.results(rec.output)
    os.rename(trained_list, trained_list + ".gone")     # the replay must not need it
    try:
        rp = rrtest.replay(log, timeout=900)
    finally:
        os.rename(trained_list + ".gone", trained_list)
    assert rrtest.results(rp.output) == want
