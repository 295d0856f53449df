"""Issue 10: QEMU's KVM backend with the patched KVM's RDTSC/PAUSE exits
(qemu-patches/src/replay-vm/kvm.c, kvm-patches/).

One nested boot (vm-images/nested.py, L1 under TCG with SVM):
 1. with Debian's stock kvm-amd, `-rr record` under KVM must warn that
    KVM_CAP_RRVM_EXITS is missing (a Linux guest will not replay);
 2. with the patched modules, a 1-vCPU L2 Linux guest running a
    kernel-intensive workload (ipc) is recorded, the log must hold the
    RDTSC values the KVM exits delivered (TimeRead events), and its replay
    must print the same RESULT line and QEMU's REPLAY OK verdict.
    The replay used to diverge at a varying point (same exit count, rip
    one instruction apart, right after an STI): TCG's SVM emulation in
    the L1 lost the L2's interrupt shadow when a #VMEXIT came right after
    an STI, so the interrupt-window exit, then a position, came one
    instruction early in one run and not in the other.  qemu 0019 fixes
    TCG; qemu 0020 no longer uses window exits at all (positions are
    port/MMIO, HLT, RDTSC/RDTSCP and PAUSE exits only).

The L2 kernel gets tsc_early_khz: nested under TCG every RDTSC exit is so
slow that the kernel's TSC calibration (tsc_read_refs: two reads within
100k cycles) fails, and then calibrate_delay spins on jiffies in a loop
without PAUSE, RDTSC or I/O, which the degraded timing mode can never
interrupt.  On a real host the exits are fast and the calibration works.

make test-full also records 1-vCPU runs with RRVM_FORCE_MS=300 until one
has a forced stop (qemu 0055) and checks that its replay finds each one
(test_nested_kvm_forced_stops_are_found_on_replay).

RRVM_KVM_DIR=DIR takes the "patched" modules from DIR (pointing it at the
stock modules in /lib/modules/KVER/kernel/arch/x86/kvm shows the test
failing)."""
import os
import re
import subprocess

import nested
import vmrun

REPO = vmrun.REPO
KVM_DIR = os.path.join(REPO, "build", "kvm")
WORKLOAD = "/opt/rv/bin/ipc -n 50 | tail -1"

SCRIPT = r'''
kvm_load
since() { awk -v a=$1 -v b=$(cut -d' ' -f1 /proc/uptime) 'BEGIN{print b-a}'; }
L2_APPEND="$L2_APPEND tsc_early_khz=2000000"
W="%(workload)s"
eval "timeout -s KILL 30 $(l2_argv 1 true) -rr record,log=/tmp/stock.rr" > /tmp/stock.out 2>&1
grep -a -o "lacks KVM_CAP_RRVM_EXITS" /tmp/stock.out | head -1 | sed "s/^/NRR: stock: /"
rmmod kvm_amd && rmmod kvm || echo "NRR: rmmod failed"
insmod /opt/nested/kvm-rr/kvm.ko && insmod /opt/nested/kvm-rr/kvm-amd.ko || echo "NRR: insmod failed"
s=$(cut -d' ' -f1 /proc/uptime)
eval "timeout -s KILL 150 $(l2_argv 1 "$W") -rr record,log=/tmp/run.rr" > /tmp/rec.out 2>&1
echo "NRR: record status $? after $(since $s) s"
grep -a -e "^RESULT" -e "replay-vm" /tmp/rec.out | sed "s/^/NRR: rec: /"
/opt/nested/bin/replay-vm info /tmp/run.rr 2>&1 | grep -e "^events" -e "time_read" | sed "s/^/NRR: info: /"
s=$(cut -d' ' -f1 /proc/uptime)
eval "timeout -s KILL 400 $(l2_argv 1 "$W") -rr replay,log=/tmp/run.rr" > /tmp/rep.out 2>&1
echo "NRR: replay status $? after $(since $s) s"
grep -a -e "^RESULT" -e "replay-vm" -e "expected at" -e "found at" /tmp/rep.out | sed "s/^/NRR: rep: /"
L2_APPEND="$L2_APPEND lpj=4000000"
( eval "exec $(l2_argv 2 "$W") -rr record,log=/tmp/smp.rr" ) > /tmp/smprec.out 2>&1 &
qp=$!
t=0
while [ $t -lt 300 ] && kill -0 $qp 2>/dev/null; do
	sleep 5; t=$((t + 5))
	n=$(/opt/nested/bin/replay-vm dump /tmp/smp.rr 2>/dev/null | grep -a -c -E "cpu1 .* interrupt init")
	[ "$n" -ge 2 ] && break
done
echo "NRR: smp linux started the ap by ${t}s"
sleep 10
kill -TERM $qp 2>/dev/null
wait $qp
echo "NRR: smp record status $?"
grep -a -o "page CREW through per-vCPU page rights is experimental" /tmp/smprec.out | head -1 | sed "s/^/NRR: smp: /"
/opt/nested/bin/replay-vm dump /tmp/smp.rr > /tmp/smp.txt 2>&1
grep -a -E "cpu1 .* interrupt (init|sipi)" /tmp/smp.txt | sed "s/^#\([0-9]*\) .* interrupt \([a-z]*\).*/NRR: smp ap \2 \1/"
echo "NRR: smp transfers $(grep -a -c "crew_transfer page" /tmp/smp.txt) by ap $(grep -a -c "cpu1 .*crew_transfer page" /tmp/smp.txt)"
export RRVM_STALL_SECONDS=20
eval "timeout -s KILL 150 $(l2_argv 2 "$W") -rr replay,log=/tmp/smp.rr" > /tmp/smprep.out 2>&1
echo "NRR: smp replay status $?"
grep -a -o -e "DIVERGENCE at event #[0-9]*" -e "REPLAY OK: [0-9]* events" /tmp/smprep.out | head -1 | sed "s/^/NRR: smp rep: /"
grep -a -o "KVM page CREW: .*" /tmp/smprec.out | head -1 | sed "s/^/NRR: smp rec crew: /"
grep -a -h "forced stops" /tmp/smprec.out /tmp/smprep.out | sed "s/^/NRR: smp forced: /"
grep -a -e "replay-vm" -e "expected at" -e "found at" -e "DIVERG" /tmp/smprep.out | head -12 | sed "s/^/NRR: smp rep detail: /"
echo "NRR: done"
''' % {"workload": WORKLOAD}


HEADER = "linux-headers/linux/rrvm-kvm.h"


def test_qemu_copy_of_the_kvm_abi_header_is_identical():
    """QEMU's copy of the ABI header (a plain file in qemu-patches/src/,
    mirrored into the QEMU tree at build) is kvm-patches/rrvm-kvm.h."""
    assert open(os.path.join(REPO, "qemu-patches", "src", HEADER)).read() == \
        open(os.path.join(REPO, "kvm-patches", "rrvm-kvm.h")).read()


def build_patched_kvm():
    """kvm.ko and kvm-amd.ko from kvm-patches/ in KVM_DIR (cached by build.sh)."""
    subprocess.run([os.path.join(REPO, "kvm-patches", "build.sh"), KVM_DIR], check=True)
    return KVM_DIR


def lines(out, tag):
    return [l[len(tag):] for l in out.splitlines() if l.startswith(tag)]


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def nested_run():
    kvm_dir = os.environ.get("RRVM_KVM_DIR")
    if not kvm_dir:
        kvm_dir = build_patched_kvm()
    extra = {"/opt/nested/kvm-rr/kvm.ko": os.path.join(kvm_dir, "kvm.ko"),
             "/opt/nested/kvm-rr/kvm-amd.ko": os.path.join(kvm_dir, "kvm-amd.ko")}
    r = nested.run(SCRIPT, l1_vcpus=1, l1_mem=2048, timeout=900, extra_files=extra)
    print(r.output)
    assert r.status == 0 and "NRR: done" in r.output, r.console[-3000:]
    assert vmrun.parse_console(r.console)[0] == 0
    return r.output


def rec_results(out):
    return [l for l in lines(out, "NRR: rec: ") if l.startswith("RESULT ipc")]


def test_nested_kvm_recording_uses_rdtsc_pause_exits(nested_run):
    out = nested_run
    # stock KVM: the warning names the missing capability
    assert lines(out, "NRR: stock: ") == ["lacks KVM_CAP_RRVM_EXITS"], out
    assert "NRR: rmmod failed" not in out and "NRR: insmod failed" not in out, out

    # patched KVM: the recording finishes, with the exits' RDTSC values logged
    assert "NRR: record status 0" in out, out
    assert len(rec_results(out)) == 1, out
    assert not any("lacks KVM_CAP_RRVM_EXITS" in l for l in lines(out, "NRR: rec: ")), out
    m = re.search(r"KVM: (\d+) deterministic exits, of which (\d+) RDTSC/RDTSCP and (\d+) PAUSE "
                  r"\(KVM_CAP_RRVM_EXITS on\)", out)
    assert m and int(m.group(2)) > 100, out
    m = re.search(r"NRR: info:\s+time_read\s+(\d+)", out)
    assert m and int(m.group(1)) > 100, out


def test_nested_kvm_replay_matches_recording(nested_run):
    out = nested_run
    assert "NRR: replay status 0" in out, out
    rep = lines(out, "NRR: rep: ")
    assert [l for l in rep if l.startswith("RESULT ipc")] == rec_results(out), out
    assert any("REPLAY OK" in l for l in rep), out


def test_nested_kvm_smp_page_crew_recording_replays(nested_run):
    """2 vCPUs through the patched KVM's per-vCPU page rights (kvm-patches
    0002, qemu 0028), recorded until 10 s after Linux's INIT of the AP is in
    the log, at most 300 s (the L2 vCPUs share one L1 vCPU), then ended by
    SIGTERM (a complete log whose last checkpoint hashes both vCPUs'
    registers and guest RAM).
    The AP's INIT and SIPI are in the log as vCPU 1 interrupts, page
    transfers are logged, and the replay follows the recording past
    Linux's INIT of the AP.  Before qemu 0045-0050 it diverged in early
    boot (events ~2750 and ~8750, then later ones as each cause went): the
    replay took pages on its own (0045), lost an MMIO read to a register
    sync (0046), woke a halted AP for a stale SIPI (0047), zeroed the AP's
    MTRRs at the replayed INIT (0049) and hashed "halted" differently at a
    HLT exit (0050); 0048 made the nested walks hardware-like.  Since then
    it reached REPLAY OK with the last checkpoint matching in most runs,
    but some were reported stalled (event 27,009 of a clean-clone make
    test, then 3 of 5 runs and 1 of 4).  The one traced had matched the
    whole log, final checkpoint included, but the last vCPU at that
    checkpoint did not see the End record, which the reader had not
    reached yet, and both ran on past the end (qemu 0057 reads on to it;
    5 of 5 REPLAY OK since, so REPLAY OK is asserted)."""
    out = nested_run
    # recorded until 10 s after Linux's INIT of the AP is in the log (how
    # long the boot takes to get there depends on the host's load)
    assert lines(out, "NRR: smp linux started the ap by "), out
    assert re.search(r"^NRR: smp record status (0|143)$", out, re.M), out
    assert "NRR: smp: page CREW through per-vCPU page rights is experimental" in out, out
    ap = [(l.split()[0], int(l.split()[1])) for l in lines(out, "NRR: smp ap ")]
    inits = [i for k, i in ap if k == "init"]
    sipis = [i for k, i in ap if k == "sipi"]
    # SeaBIOS starts the AP, then Linux does again (INIT, SIPI, SIPI)
    assert len(inits) >= 2 and len(sipis) >= 2 and inits[0] < sipis[0] < inits[-1], out
    m = re.search(r"NRR: smp transfers (\d+) by ap (\d+)", out)
    assert m and int(m.group(1)) > 100 and int(m.group(2)) > 10, out
    rep = lines(out, "NRR: smp rep: ")
    assert rep and re.match(r"REPLAY OK: \d+ events$", rep[0]), out
    assert re.search(r"NRR: smp rep detail: replay-vm: REPLAY OK: \d+ events replayed, "
                     r"1 checkpoints matched; the recording was stopped", out), out
    assert "NRR: smp replay status 0" in out, out


# --- every kernel-intensive workload at 1 vCPU (bench/nested_kvm_workloads.py)

import sys  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
import nested_kvm_workloads as nkw  # noqa: E402

FULL = os.environ.get("REPLAYVM_FULL") == "1"

NB_SAMPLE = """NB plain:ipc:0 41.69 0 RESULT,ipc,messages=2000,checksum=1d
NB record:ipc:0 52.44 0 RESULT,ipc,messages=2000,checksum=1d
NBE record:ipc:0 74199 8400761
NB replay:ipc:0 47.82 0 RESULT,ipc,messages=2000,checksum=1d
NBV replay:ipc:0 REPLAY OK: 74199 events replayed, 1 checkpoints matched
NB plain:read:0 20.0 0 RESULT,read,checksum=ef
NB record:read:0 30.0 0 RESULT,read,checksum=ef
NB replay:read:0 30.0 0 RESULT,read,checksum=00
NBV replay:read:0 REPLAY OK: 7 events replayed
"""


def test_nested_workload_bench_judges_rows():
    """The bench passes a row only when record and replay print the same
    RESULT and the replay says REPLAY OK; a missing run is a failure."""
    ipc, read, forkwait = nkw.parse(NB_SAMPLE, ["ipc", "read", "forkwait"], 1, 1)
    assert ipc["ok"] == 1 and ipc["failures"] == "" and ipc["events"] == "74199", ipc
    assert ipc["record_over_plain"] == "1.26", ipc
    assert read["ok"] == 0 and "RESULT record" in read["failures"], read
    assert forkwait["ok"] == 0 and "L1 ended early" in forkwait["failures"], forkwait
    bad = NB_SAMPLE.replace("NBV replay:ipc:0 REPLAY OK: 74199 events replayed, 1 checkpoints "
                            "matched", "NBV replay:ipc:0 DIVERGENCE at event #17")
    assert "DIVERGENCE at event #17" in nkw.parse(bad, ["ipc"], 1, 1)[0]["failures"]


@pytest.mark.skipif(not FULL, reason="REPLAYVM_FULL=1 / make test-full (~15 min)")
def test_nested_kvm_every_kernel_workload_replays_at_one_vcpu():
    """Issue 10, 1 vCPU: read, readdir, ipc, socket, forkwait, http and
    racy_kernel, each recorded under nested KVM through the patched kvm-amd
    and replayed to REPLAY OK with the recording's RESULT line."""
    wls = list(nkw.WORKLOADS)
    build_patched_kvm()
    r = nested.run(nkw.script(wls, 1, 1, 400), l1_vcpus=1, l1_mem=2048,
                   timeout=300 + len(wls) * 3 * 400, kvm_dir=KVM_DIR)
    assert "NB done" in r.output, r.console[-3000:]
    rows = nkw.parse(r.output, wls, 1, 1)
    assert [x["workload"] for x in rows if x["ok"] != 1] == [], rows


@pytest.mark.skipif(not FULL, reason="REPLAYVM_FULL=1 / make test-full (~10 min)")
def test_nested_kvm_racy_kernel_two_vcpus_replays_with_timescale():
    """Issue 10, page CREW through the patched kvm-amd: racy_kernel on a
    2-vCPU L2 (lost records and arrival orders depend on the schedule),
    recorded with the guest's clocks 10 times slower (qemu 0051: without
    it the tick's page transfers take all of the nested guest's time and
    the boot never reaches the workload) and replayed to REPLAY OK with
    the recording's RESULT line.  Known to fail now and then: 3 of 21
    such recordings stopped logging in a guest livelock that the degraded
    timing mode creates (zap_pte_range waiting for a reschedule IPI that
    waits for a deterministic exit; README "Known limits")."""
    build_patched_kvm()
    r = nested.run(nkw.script(["racy_kernel"], 2, 1, 900, 10), l1_vcpus=1, l1_mem=2048,
                   timeout=300 + 3 * 900, kvm_dir=KVM_DIR)
    assert "NB done" in r.output, r.console[-3000:]
    row = nkw.parse(r.output, ["racy_kernel"], 2, 1)[0]
    assert row["ok"] == 1, row


# one vCPU spins in user mode: its timer interrupt waits for a deterministic
# exit it never takes, and the other vCPU's next page transfer from it waits
# for it forever
SPIN_SCRIPT = r'''
kvm_load
L2_APPEND="$L2_APPEND tsc_early_khz=2000000 lpj=4000000"
export RRVM_STALL_SECONDS=20
( eval "exec $(l2_argv 2 'sh -c "while :; do :; done" & sleep 30; echo SPIN-DONE')" -rr record,log=/tmp/spin.rr,timescale=10 ) > /tmp/spin.out 2>&1 &
qp=$!
t=0
while [ $t -lt 500 ] && kill -0 $qp 2>/dev/null && ! grep -q "has logged no event" /tmp/spin.out; do
	sleep 5; t=$((t + 5))
done
sleep 2
kill -9 $qp 2>/dev/null
wait $qp
grep -a -e "replay-vm:" -e "SPIN-DONE" /tmp/spin.out | sed "s/^/NSP: /"
echo "NSP: done"
'''


@pytest.mark.skipif(not FULL, reason="REPLAYVM_FULL=1 / make test-full (~6 min)")
def test_a_recording_that_stops_logging_says_where_each_vcpu_is():
    """qemu 0052: a 2-vCPU recording under the degraded timing mode in which
    one vCPU spins in user mode (no exit of any kind) stops logging once
    the other needs a page from it; after RRVM_STALL_SECONDS QEMU says
    which vCPU is in the guest with a stop requested, which one waits to
    hold it, and that the waiting one holds the world lock."""
    build_patched_kvm()
    r = nested.run(SPIN_SCRIPT, l1_vcpus=1, l1_mem=2048, timeout=900, kvm_dir=KVM_DIR)
    out = r.output
    assert "NSP: done" in out, r.console[-3000:]
    assert "SPIN-DONE" not in out, out
    m = re.search(r"NSP: replay-vm: +vcpu (\d): in the guest; last deterministic exit #\d+ "
                  r"at rip 0x[0-9a-f]+ rcx 0x[0-9a-f]+; a stop is requested", out)
    h = re.search(r"NSP: replay-vm: +vcpu (\d): waits to hold \(for a deterministic point "
                  r"of\) vcpu (\d);", out)
    assert m and h and h.group(2) == m.group(1) != h.group(1), out
    assert "the world lock is held by vcpu %s" % h.group(1) in out, out
    assert "has taken no deterministic exit since: without a PMU" in out, out


def test_timescale_option_is_refused_where_it_cannot_hold(tmp_path):
    """-rr timescale=N (qemu 0051) slows a KVM recording's clocks: a replay
    takes its time from the log, and under TCG the guest's TSC follows the
    host's cycle counter, so both refuse it, as they do a bad factor."""
    log = str(tmp_path / "t.rr")
    base = [vmrun.QEMU, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios", "-M", "pc",
            "-display", "none", "-nic", "none", "-accel", "tcg"]
    cases = [("replay,log=%s,timescale=3" % log, "timescale is a record option"),
             ("record,log=%s,timescale=0" % log, "timescale wants 1 to 1000, not '0'"),
             ("record,log=%s,timescale=1001" % log, "timescale wants 1 to 1000"),
             ("record,log=%s,timescale=4" % log, "-rr timescale is for the KVM backend")]
    for rr, msg in cases:
        p = subprocess.run(base + ["-rr", rr], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        out = p.stdout.decode(errors="replace")
        assert p.returncode != 0 and msg in out, (rr, out)


# qemu 0055: the 1-vCPU boot has kernel loops that take no deterministic
# exit for longer than 300 ms with the timer interrupt pending
# (apply_returns patching the kernel's return thunks, over 400 ms nested
# here); a kick lands where a replay can find the vCPU about every other
# time (2 of 5 recordings had none on 2026-11-30), so up to six recordings
# are made until one has a forced stop.  Finding one costs the replay a
# breakpoint exit per pass over its rip since the vCPU's last exit: a
# stop in the boot's RSA arithmetic (mpihelp_divrem) took over 600 s
# nested in 2 of 6 runs that day, hence the replay's 1200 s
# (bench/results/2026-11-30-kvm-exit-cost/)
FORCED_SCRIPT = r'''
kvm_load
L2_APPEND="$L2_APPEND tsc_early_khz=2000000"
export RRVM_FORCE_MS=300
for i in 1 2 3 4 5 6; do
	eval "timeout -s KILL 150 $(l2_argv 1 '/opt/rv/bin/ipc -n 50 | tail -1')" -rr record,log=/tmp/f.rr > /tmp/frec.out 2>&1
	echo "NFS: record $i status $?"
	grep -a -h "forced stops" /tmp/frec.out | sed "s/^/NFS: rec: /"
	/opt/nested/bin/replay-vm dump /tmp/f.rr 2>/dev/null | grep -a ',dp=' > /tmp/dp.txt
	n=$(wc -l < /tmp/dp.txt)
	echo "NFS: forced events $n"
	[ "$n" -gt 0 ] && break
done
sed "s/^/NFS: dp: /" /tmp/dp.txt
grep -a "^RESULT" /tmp/frec.out | sed "s/^/NFS: rec: /"
unset RRVM_FORCE_MS
eval "timeout -s KILL 1200 $(l2_argv 1 '/opt/rv/bin/ipc -n 50 | tail -1')" -rr replay,log=/tmp/f.rr > /tmp/frep.out 2>&1
echo "NFS: replay status $?"
grep -a -e "^RESULT" -e "replay-vm" -e "expected at" -e "found at" /tmp/frep.out | sed "s/^/NFS: rep: /"
echo "NFS: done"
'''


@pytest.mark.skipif(not FULL, reason="REPLAYVM_FULL=1 / make test-full (2-25 min)")
def test_nested_kvm_forced_stops_are_found_on_replay():
    """qemu 0055: a vCPU that ran kernel code RRVM_FORCE_MS without a
    deterministic exit while its timer interrupt waited is kicked out; the
    interrupt is injected there and logged at a position with a register
    hash (Position.detpoints), and the replay finds each such place with a
    hardware breakpoint (qemu 0054 makes those work in TCG's SVM) and
    reaches REPLAY OK with the recording's RESULT."""
    build_patched_kvm()
    r = nested.run(FORCED_SCRIPT, l1_vcpus=1, l1_mem=2048, timeout=2100, kvm_dir=KVM_DIR)
    out = r.output
    assert "NFS: done" in out, r.console[-3000:]
    events = [int(n) for n in re.findall(r"^NFS: forced events (\d+)$", out, re.M)]
    assert events and events[-1] > 0, out
    m = re.findall(r"NFS: rec: .*KVM: (\d+) forced stops \(and kicks not taken", out)
    f = re.search(r"NFS: rep: replay-vm: KVM: (\d+) forced stops found with (\d+) breakpoint hits",
                  out)
    assert m and f and 0 < int(f.group(1)) <= min(events[-1], int(m[-1])), out
    assert "NFS: replay status 0" in out and "NFS: rep: replay-vm: REPLAY OK" in out, out
    rec = [l for l in out.splitlines() if l.startswith("NFS: rec: RESULT")]
    rep = [l for l in out.splitlines() if l.startswith("NFS: rep: RESULT")]
    assert len(rec) == 1 and [l.replace("rep:", "rec:", 1) for l in rep] == rec, out
