"""Issue 5: multiprocessor record/replay with page-granular CREW under MTTCG.

Racy programs (user-level lost updates, kernel-level sharing of one file,
pipe and socket between processes) are recorded once at 2 and 4 vCPUs and
replayed three times: every replay prints the recorded
(interleaving-dependent) result and matches every checkpoint (registers of
all vCPUs and guest RAM).
Every workload is recorded once and replayed three times at 2 and 4 vCPUs
(most of that matrix only with REPLAYVM_FULL=1)."""
import os
import re

import pytest
import rrtest

FULL = os.environ.get("REPLAYVM_FULL") == "1"
RACY = ("/opt/rv/bin/racy_counter -t {n} -n 300k -a 1000 | tail -1; "
        "/opt/rv/bin/racy_kernel -p {n} -n 200 | tail -1")


@pytest.mark.parametrize("vcpus", [2, 4])
def test_racy_programs_replay_their_recorded_interleaving(tmp_path, vcpus):
    log = tmp_path / "run.rr"
    rec = rrtest.record(log, vcpus=vcpus, cmd=RACY.format(n=vcpus), timeout=600)
    want = rrtest.results(rec.output)
    assert len(want) == 2, rec.output
    # three times with REPLAYVM_FULL=1, once in make test (for its 40
    # minutes: one replay that matches every checkpoint already shows the
    # interleaving reproduced; the other two showed only that replays agree)
    for _ in range(3 if FULL else 1):
        rp = rrtest.replay(log, timeout=900)
        assert rrtest.results(rp.output) == want
        assert rp.checkpoints >= 1


# Every workload, recorded once and replayed three times, at 2 and 4 vCPUs.
# A subset runs by default (the racy programs at 2 and 4 vCPUs are also
# covered by the test above); the whole matrix with REPLAYVM_FULL=1
# (`make test-full`).  Measured on the 2-core TCG host (shared, load 3-7),
# 2026-11-23: the 2-vCPU matrix takes ~12-16 min (50-125 s a workload), the
# 4-vCPU one ~20 min (80-230 s a workload), so all of it would push
# `make test` past its 40 min; results in bench/results/*smp-matrix*.
MATRIX = ["read", "readdir", "ipc", "socket", "forkwait", "http", "diskread", "tscrand",
          "racy_counter", "racy_kernel", "netclient"]
# (socket, forkwait and tscrand at 2 vCPUs moved to the full matrix when the
# byte-CREW tests joined the default suite; racy_kernel at 2 and 4 vCPUs
# when the trained-list replay test did (a clean-clone make test took
# 42:53, 2026-11-25): test_racy_programs_replay_their_recorded_interleaving
# records racy_kernel at 2 and 4 vCPUs and replays it already; http at 2
# vCPUs (220-240 s) when the CI run of 2026-11-26 took 47 min without its
# hang: netclient-2vcpu still replays network input at 2 vCPUs, and http is
# replayed on 1 vCPU in test_rr_uniprocessor.py)
TWO_VCPU_DEFAULT = {"netclient"}
FOUR_VCPU_DEFAULT = set()
full_only = pytest.mark.skipif(not FULL, reason="not in the default subset: REPLAYVM_FULL=1 / make test-full")


def _matrix():
    for vcpus in (2, 4):
        for name in MATRIX:
            default = TWO_VCPU_DEFAULT if vcpus == 2 else FOUR_VCPU_DEFAULT
            marks = [] if name in default else [full_only]
            yield pytest.param(vcpus, name, marks=marks, id="%s-%dvcpu" % (name, vcpus))


@pytest.mark.parametrize("vcpus,name", list(_matrix()))
def test_workload_record_once_replay_three_times(tmp_path, request, vcpus, name):
    log = tmp_path / "run.rr"
    args = ()
    if name == "netclient":
        payload = bytes((i * 13) & 0xff for i in range(32 * 1024))
        port = request.getfixturevalue("host_service")(payload)
        args = ["-h", "10.0.2.2", "-p", str(port)]
    rec = rrtest.record(log, vcpus=vcpus, workload=name, args=args, timeout=900)
    want = rrtest.results(rec.output)
    assert want, rec.output
    crew = rrtest.crew_stats(log)
    assert crew["transfers"] > 0 and crew["no_byte_range"] == 0, crew
    seen = set()
    for _ in range(3):
        rp = rrtest.replay(log, timeout=900)
        assert rrtest.results(rp.output) == want, (want, rp.output[-2000:], rp.stderr[-2000:])
        assert rp.checkpoints >= 1
        seen.add((rp.events, rp.checkpoints))
    assert len(seen) == 1, seen


# Open (issue 7): 2 of 17 recordings at 4 vCPUs did not replay (one lost
# ~19,000 updates its log does not explain); with QEMU 0023/0024 (now in
# the series, for page-CREW recordings) 17 of 18 replayed and one diverged
# at the final RAM hash only.
# Neither cause is found (README, "Byte-granular CREW").  Until they are,
# this runs with REPLAYVM_FULL=1 (`make test-full`), not in `make test`.
@full_only
def test_instructions_run_again_after_a_hold_replay_identically(tmp_path):
    """A vCPU whose TLB fill must take a page waits for the world lock parked
    at the start of its instruction; if others hold it there, the recording
    runs the instruction again (QEMU 0022: replay holds vCPUs between
    instructions, so an add to memory must not store what it loaded before
    the hold).  `racy_counter -m` (every increment one unlocked `addq`) at 4
    vCPUs makes thousands of such restarts: the recording must report them
    and the replay must compute the recorded count."""
    log = tmp_path / "run.rr"
    rec = rrtest.record(log, vcpus=4, cmd="/opt/rv/bin/racy_counter -t 4 -n 60k -a 0 -m | tail -1",
                        timeout=600)
    want = rrtest.results(rec.output)
    assert len(want) == 1, rec.output
    again = re.search(r"page CREW: \d+ transfers, (\d+) instruction", rec.console)
    assert again and int(again.group(1)) > 0, rec.console[-2000:]
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == want, (want, rp.output[-1000:], rp.stderr[-2000:])


def test_a_fault_held_in_its_entry_runs_again(tmp_path):
    """Two threads write into the same fresh pages in the same order, so
    one faults on a page whose page-table entry the other is filling in.
    The faulting vCPU waits for the BQL to deliver its fault, held at the
    start of its instruction; the other takes the page table from it and
    maps the page.  The recording must not deliver that stale fault (QEMU
    0032: it runs the instruction again, as replay does, which finds the
    page mapped).  With the QEMU before 0032, 4 of 4 such recordings
    diverged ("ran past the position of the next event"), with it 4 of 4
    replayed."""
    log = tmp_path / "run.rr"
    rec = rrtest.record(log, vcpus=2, timeout=600,
                        cmd="/opt/rv/bin/racy_counter -t 2 -n 0 -a 0 -f 20000 | tail -1")
    want = rrtest.results(rec.output)
    assert len(want) == 1, rec.output
    again = re.search(r"page CREW: .*, (\d+) after being held in their fault's entry", rec.console)
    assert again, rec.console[-2000:]
    assert int(again.group(1)) > 0, "no fault was held in its entry: " + again.group(0)
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == want


def test_unrecorded_race_varies_but_replay_repeats_the_recording(tmp_path):
    """The racy counter's final value depends on thread interleaving: plain
    runs disagree with each other, the replay prints the recorded one."""
    cmd = "/opt/rv/bin/racy_counter -t 2 -n 3M -a 20000 | tail -1"
    # three unrecorded runs in one boot (a boot costs more than a run)
    plain = rrtest.results(rrtest.vmrun.run(vcpus=2, cmd="; ".join([cmd] * 3), accel="tcg").output)
    assert len(plain) == 3 and len(set(plain)) > 1, "racy_counter gave the same result 3 times: %s" % plain
    log = tmp_path / "run.rr"
    want = rrtest.results(rrtest.record(log, vcpus=2, cmd=cmd, timeout=600).output)
    # one replay: replays agreeing with each other is what the tests above check
    assert rrtest.results(rrtest.replay(log, timeout=900).output) == want
