"""Issue 7: byte-granular CREW through the guest module (crew=byte).

The guest module runs the kernel translated, checks byte ownership before
every kernel memory access and logs ownership transfers; QEMU switches from
page CREW (boot) to byte CREW when the module asks, positions kernel events
by deterministic points, drains the module's rings into the log and feeds
them back on replay.  A recording replays only if every kernel access and
interrupt happens in the recorded order: each replay below must end
REPLAY OK (registers of every vCPU and guest RAM matched at every
checkpoint) and print the recording's interleaving-dependent results."""
import os
import re
import subprocess

import pytest
import rrtest

FULL = os.environ.get("REPLAYVM_FULL") == "1"
full_only = pytest.mark.skipif(not FULL, reason="REPLAYVM_FULL=1 / make test-full")


def record_byte(log, vcpus, crew_user=False, **kw):
    """crew_user: byte+user (page CREW for user addresses, QEMU 0059)."""
    rec = rrtest.record(log, vcpus=vcpus, crew="byte+user" if crew_user else "byte",
                        timeout=900, **kw)
    info = subprocess.run([rrtest.REPLAY_VM, "info", str(log)], capture_output=True,
                          text=True, check=True).stdout
    assert "crew mode          byte" in info, info
    rec.info = info
    return rec


def byte_transfers(log):
    return rrtest.crew_stats(log)["byte_transfers"]


# At 2 vCPUs this failed 4 of 8 runs on 2026-11-26, with a different
# symptom each time (a wait cycle the guest module reported while
# recording, a RAM hash in module code, a kernel rdtsc logged 15 det points
# away from where replay reached it, an APIC read where the log has a
# rdtsc), with and without QEMU 0023/0024.  The first was a livelock in
# the module's take (guest-module/crew/crewslow.c, take_all), fixed; after it
# 6 of 6 runs passed.  Whether the other symptoms had the same cause is
# not known.  It runs with REPLAYVM_FULL=1 (`make test-full`): at 165-210 s
# it does not fit make test's 40 minutes, where byte CREW is recorded and
# replayed by the virsh, record-command, dense-checkpoint and training tests.
@pytest.mark.parametrize("vcpus", [pytest.param(2, marks=full_only),
                                   pytest.param(4, marks=full_only)])
def test_kernel_race_replays_three_times(tmp_path, vcpus):
    """racy_kernel: processes append to one file, race on lseek+write,
    share a pipe and a socket: the result depends on the kernel's
    interleaving, which the byte-CREW log reproduces."""
    log = tmp_path / "run.rr"
    rec = record_byte(log, vcpus, workload="racy_kernel", args=["-p", str(vcpus), "-n", "400"])
    want = rrtest.results(rec.output)
    assert len(want) == 1, rec.output
    assert byte_transfers(log) > 1000
    for _ in range(3):
        rp = rrtest.replay(log, timeout=900)
        assert rrtest.results(rp.output) == want, (want, rp.stderr[-3000:])
        assert rp.checkpoints >= 3


WAITS = re.compile(r"byte CREW: (\d+) long CREW wait\(s\) handed to the host")


def host_waits(text):
    return sum(int(n) for n in WAITS.findall(text))


def test_vcpus_outnumbering_host_cores_wait_in_the_host(tmp_path):
    """Two vCPUs on one host core (the whole run pinned to it).  A byte-CREW
    wait (for an owner's access in flight while recording, for the logged
    order while replaying) that spun in guest code kept the core until the
    spinner's time slice ended, and only then could the vCPU it waited for
    move: a 2-vCPU replay of ipc took 33 s on two cores and did not finish
    in 360 s on one.  The module now hands a wait to the host after a few
    spins (RVG_CMD_WAIT), which yields the core or sleeps until that vCPU's
    sequence number moves; QEMU counts those waits.  Both the recording and
    its replay must hand waits to the host here, and the replay must still
    be exact."""
    log = tmp_path / "run.rr"
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        rec = record_byte(log, 2, workload="racy_kernel", args=["-p", "2", "-n", "60"])
        want = rrtest.results(rec.output)
        assert len(want) == 1, rec.output
        rp = rrtest.replay(log, timeout=900)
    finally:
        os.sched_setaffinity(0, cpus)
    assert rrtest.results(rp.output) == want, rp.stderr[-3000:]
    assert host_waits(rec.console) > 0, rec.console[-3000:]
    assert host_waits(rp.stderr) > 0, rp.stderr[-3000:]
    # processes, no threads: user space shared nothing (QEMU 0058)
    assert "NOT share-nothing" not in rec.info, rec.info


USER_PARALLEL = re.compile(r"user space: NOT share-nothing: threads of one process "
                           r"\(cr3 0x([0-9a-f]+)\) ran user code on vCPUs \(mask 0x([0-9a-f]+)\) "
                           r"at once, (\d+) time\(s\), first at pc 0x([0-9a-f]+)")


def test_threads_running_at_once_are_said(tmp_path):
    """Byte CREW orders kernel memory only: user space must share nothing.
    Two threads of one process racing on a counter in user mode on two
    vCPUs break that, and such a recording replays only by luck (a replay
    of this one diverged here 38 s in, at a user-mode position).  The recording says so at
    its end and in its End record (QEMU 0058), `replay-vm info` shows it
    and a replay says it before it starts.  The processes of racy_kernel
    (test above) are not counted."""
    log = tmp_path / "run.rr"
    rec = record_byte(log, 2, workload="racy_counter", args=["-t", "2", "-n", "2000000"])
    m = USER_PARALLEL.search(rec.info)
    assert m, rec.info[-2000:]
    assert int(m.group(2), 16) == 0x3 and int(m.group(3)) >= 1, m.group(0)
    # the pc is in the workload (a static binary linked at 0x400000)
    assert 0x400000 <= int(m.group(4), 16) < 0x800000, m.group(0)
    # what vm-images/run (and so `replay-vm record`) repeats as its warning
    said = rrtest.vmrun.USER_SHARED.search(rec.console)
    assert said and "vCPUs 0 and 1 ran user code" in said.group(0), rec.console[-2000:]
    rp = subprocess.run([rrtest.REPLAY_VM, "--log", str(log), "--until", "1000", "--no-progress"],
                        capture_output=True, text=True, timeout=300)
    assert "recording's user space was not share-nothing" in rp.stderr, rp.stderr[-2000:]


def test_dense_checkpoints_replay_identically(tmp_path, monkeypatch):
    """One vCPU reading files, a checkpoint every 500 ms (RRVM_CKPT_MS; the
    default is 2 s), each hashing guest RAM and the registers at a det
    point.  Dense checkpoints found what 2 s ones showed 1 run in 30: a
    device's DMA landing between a checkpoint and its log entry (QEMU
    0013), dead flags that record and replay left differently (seen in
    exception frames and in the lahf of a det point), code-cache addresses
    left on kernel stacks by text_poke's invalidation, and (the last one,
    1 run in 3 before it was fixed) the guest module's text_poke callbacks
    returning with code-cache addresses in dead scratch registers, which a
    det point's register hash and ret_tramp's saved registers on the
    kernel stack then saw (translate.c, rv_native_return).  After that
    fix: 15 of 15 runs replayed."""
    monkeypatch.setenv("RRVM_CKPT_MS", "500")
    log = tmp_path / "run.rr"
    want = rrtest.results(record_byte(log, 1, workload="read", args=["-n", "3000"]).output)
    assert want
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == want, rp.stderr[-3000:]
    # 8-12 s of byte CREW here: 16-24 checkpoints, where the 2 s default
    # makes at most 6 (20 failed one clean-clone run on an idle host)
    assert rp.checkpoints >= 12, rp.stderr[-2000:]


@full_only
def test_a_replay_behind_its_reading_of_the_log_is_not_stalled(tmp_path, monkeypatch):
    """One vCPU: byte CREW's ring refill reads the log ahead to that vCPU's
    next transfers, and with one vCPU there are only the ring's end
    markers, so the whole log is read early in the replay.  The stall
    watchdog counted events read as progress and called every replay
    still running RRVM_STALL_SECONDS (default 120) later a divergence: a
    200 s socket run failed 3 of 3 replays in the experiment, each at a
    different place (QEMU 0042: events done with count now).  Full only
    (148 s of make test's 40 minutes): every replay in make test runs
    under the same watchdog."""
    log = tmp_path / "run.rr"
    want = rrtest.results(record_byte(log, 1, workload="socket", args=["-n", "5000"]).output)
    assert want
    monkeypatch.setenv("RRVM_STALL_SECONDS", "30")   # boot has gaps of seconds
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == want, rp.stderr[-3000:]


def kernel_takes(log):
    """Page transfers whose acquirer is kernel code at a take position
    (QEMU 0059: rcx = 0x1000 + takes since the det point)."""
    out = subprocess.run([rrtest.REPLAY_VM, "dump", str(log)], capture_output=True, text=True,
                         check=True).stdout
    n = 0
    for line in out.splitlines():
        if "crew_transfer page" not in line:
            continue
        m = re.search(r" @br=\d+,rip=0xffff[0-9a-f]+,rcx=(\d+),", line)
        n += bool(m and 0x1000 <= int(m.group(1)) < 0x1800)
    return n


def test_threads_replay_with_user_page_crew(tmp_path):
    """crew=byte+user (QEMU 0059): byte CREW for the kernel's memory and
    page CREW for every access to a user address, by user code or by the
    kernel's user copies.  The threads of racy_counter race on a counter
    and an array in user memory (their result depends on the interleaving)
    and meet in the kernel through futexes and set_child_tid: the
    recording must order both, so its replay reproduces the result, and
    QEMU must not call such a recording not share-nothing.  Without user
    page CREW the same recording diverged (the test above).  Then both
    threads write into each page of a fresh mapping in the same order
    (-f): one faults on a page whose entry the other is filling in, so
    the walks must be ordered with the kernel's writes to the tables
    (QEMU 0062; before it 2 of 2 replays of that phase diverged)."""
    log = tmp_path / "run.rr"
    rec = record_byte(log, 2, crew_user=True, workload="racy_counter",
                      args=["-t", "2", "-n", "2000000", "-f", "20000"])
    want = rrtest.results(rec.output)
    assert len(want) == 1, rec.output
    assert "page CREW for user addresses" in rec.info, rec.info
    assert "NOT share-nothing" not in rec.info, rec.info
    assert kernel_takes(log) > 0
    # pages a user walk made page tables (QEMU 0062: page transfers of len 0)
    assert rrtest.crew_stats(log)["table_marks"] > 0
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == want, rp.stderr[-3000:]


@pytest.mark.parametrize("name", ["read", "readdir", "ipc", "socket", "forkwait", "http"])
@pytest.mark.parametrize("vcpus", [2, 4])
@full_only
def test_workload_replays(tmp_path, name, vcpus):
    """Each Table 4.1 workload recorded once and replayed three times.
    http's server and load generator run threads, so its user space is not
    share-nothing (QEMU 0058 says so): those replays hold only while its
    threads' shared user data (a mutex, counters) did not race."""
    log = tmp_path / "run.rr"
    rec = record_byte(log, vcpus, workload=name)
    want = rrtest.results(rec.output)
    assert want
    assert ("NOT share-nothing" in rec.info) == (name == "http"), rec.info[-1500:]
    for _ in range(3):
        rp = rrtest.replay(log, timeout=900)
        assert rrtest.results(rp.output) == want, rp.stderr[-3000:]


# make test runs the first (a damaged ring record); the second (a
# well-formed record whose site lies outside guest RAM) and the last (a bad
# wait request) run with REPLAYVM_FULL=1, for make test's 40 minutes (each
# is a byte-CREW recording and its replay, ~50 s here)
@pytest.mark.parametrize("bdebug,why", [
    ("32", "vCPU 0: record 0 of its ring: bad checksum"),
    pytest.param("64", "vCPU 0: record 0 of its ring: site address outside the RAM the shadow covers",
                 marks=full_only),
    pytest.param("128", "vCPU 0: a CREW wait for vCPU 11 (the VM has 2, this is 0)",
                 marks=full_only)])
def test_hostile_guest_records_are_an_error_not_a_crash(tmp_path, bdebug, why):
    """A guest writing garbage into its transfer ring (the module's test
    switch bdebug=32 writes one record with a bad checksum, bdebug=64 a
    well-formed one whose site lies beyond guest RAM) or asking the host to
    wait for a vCPU that does not exist (bdebug=128): QEMU stops the
    recording with a message naming the vCPU and what was wrong, the log is
    closed cleanly and replays up to there."""
    log = tmp_path / "run.rr"
    os.environ["RV_BYTE_EXTRA"] = "bdebug=%s," % bdebug
    try:
        r = rrtest.vmrun.run(vcpus=2, accel="tcg", record=str(log), crew="byte", cmd="sleep 5",
                             timeout=300)
    finally:
        del os.environ["RV_BYTE_EXTRA"]
    assert "%s; recording stopped" % why in r.console, r.console[-2000:]
    v = subprocess.run([rrtest.REPLAY_VM, "verify", str(log)], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    rp = rrtest.replay(log, timeout=600)
    assert "the guest module broke the byte-CREW protocol" in rp.stderr


SITE = re.compile(r"^#(\d+) cpu(\d) @br=0,rip=(0x[0-9a-f]+),crew=\d+ crew_transfer byte "
                  r"(?:read|write) addr=(0x[0-9a-f]+) len=(\d+) ")


def test_replay_checks_every_transfer_site(tmp_path):
    """Each byte-CREW transfer is logged with its site: the pc of the
    access that took the bytes and the range taken.  The replay checks
    every one against the access it meets at that sequence number, so a
    replay that has left the recording's path is stopped at the first
    transfer after the fork, naming both sites, not later at some det
    point or I/O read (or never).  Here the path is kept and the log is
    edited instead: a transfer's pc, then another's address."""
    log = tmp_path / "run.rr"
    record_byte(log, 2, workload="racy_kernel", args=["-p", "2", "-n", "50"])
    first = rrtest.find_event(log, r"crew_transfer byte ")
    assert first is not None
    # about a quarter of the events there are transfers (89 of 400 once);
    # marks (a vCPU's sequence number, no owners: "from []") have no site
    sites = [m for m in map(SITE.match, rrtest.dump(log, first + 1000, 2000))
             if m and m.group(3) != "0x0"]
    assert len(sites) > 100, "too few byte transfers with a site after #%d" % first
    for m in sites:
        pc, addr, n = int(m.group(3), 16), int(m.group(4), 16), int(m.group(5))
        assert pc >= 0xffffffff80000000 and 0 < addr < 1 << 30 and 1 <= n <= 4096, m.group(0)
    a, b = sites[0], sites[len(sites) // 2]
    edits = ((a, "--rip", int(a.group(3), 16) + 1), (b, "--addr", int(b.group(4), 16) + 0x100000))
    bad = []
    for i, (ev, opt, val) in enumerate(edits):
        bad.append(tmp_path / ("bad%d.rr" % i))
        subprocess.run([rrtest.REPLAY_VM, "edit", str(log), str(bad[i]), "--event", ev.group(1),
                        opt, hex(val)], check=True)
    # both replays at once: each is mostly a boot and the module's switch
    replays = rrtest.replay_each(bad, timeout=600, expect_ok=False)
    for (ev, _, _), rp in zip(edits, replays):
        assert rp.status != 0
        assert "DIVERGENCE at event #%s (vcpu %s): byte CREW: the replay left the " \
               "recording's path" % (ev.group(1), ev.group(2)) in rp.stderr, rp.stderr[-3000:]
        assert "is at pc %s" % ev.group(3) in rp.stderr, rp.stderr[-3000:]
        # replay-vm names the kernel function of each address in the report
        assert re.search(r"^  %s [a-z_0-9.]+\+0x[0-9a-f]+$" % ev.group(3), rp.stderr, re.M), \
            rp.stderr[-3000:]
    # --until at a transfer: its vCPU holds at that access, a vCPU waiting
    # in the module for a held one holds where it waits, the same accesses
    # on every replay (before QEMU 0061 the vCPUs ran past the point, one
    # then waited for a held one and the stall watchdog ended the replay)
    n = int(b.group(1))
    held = [until_seqs(log, n) for log in (log, log)]
    assert held[0] == held[1], held
    assert len(held[0]) == 2, held


UNTIL_POS = re.compile(r"^replay-vm:   vcpu (\d+) at \(.*detpoints=(\d+) crew_seq=(\d+)\)$", re.M)


def until_seqs(log, n):
    """Replay to --until n; each vCPU's det points and byte-CREW seq there
    (its rip may be anywhere in a wait loop)."""
    p = subprocess.run([rrtest.REPLAY_VM, "--log", str(log), "--until", str(n), "--timeout", "600"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=660)
    err = p.stderr.decode()
    assert p.returncode == 0 and "STOPPED before event #%d as asked" % n in err, err[-3000:]
    return UNTIL_POS.findall(err)


# one vCPU faults in kernel copies to fresh user pages all the time (dd
# reading /dev/zero into a new 1 MiB buffer), the other reads the disk
# (each request's data lands by DMA: a barrier holding every vCPU).  30
# copies and one disk pass logged 155 positions in exception entries
# (2026-11-29), 12 copies 75; 60 and two passes took 25 s more
EXC_CMD = ("(i=0; while [ $i -lt 30 ]; do dd if=/dev/zero of=/dev/null bs=1M count=2 2>/dev/null; "
           "i=$((i+1)); done) & "
           "(echo 3 > /proc/sys/vm/drop_caches; "
           "dd if=/dev/vda of=/dev/null bs=16k 2>/dev/null) & wait; echo RESULT exc done")
EXC_POSITIONS = re.compile(r"(\d+) vCPU position\(s\) logged inside a kernel exception's entry")


def test_barrier_inside_a_kernel_exception_replays(tmp_path):
    """A barrier (a device write into guest RAM) can hold a kernel-mode
    vCPU where it takes the BQL to deliver an exception (a fault in a
    user copy): between det points, some accesses past the last one.
    The 4-vCPU race stress found two such recordings whose replays
    stopped the vCPU at that det point and reported a divergence (QEMU
    0031: replay meets the barrier at the exception).  The recording
    says how many positions it logged there; this needs at least one."""
    log = tmp_path / "run.rr"
    rec = record_byte(log, 2, cmd=EXC_CMD)
    m = EXC_POSITIONS.search(rec.console)
    assert m, rec.console[-3000:]
    assert int(m.group(1)) > 0, "no barrier met a vCPU in an exception entry: " + m.group(0)
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == rrtest.results(rec.output) == ["RESULT exc done"]


# a static key with sites in the scheduler's hot paths flipped 200 times,
# and a trace event turned on and off 50 times (a static key and a static
# call each), while two processes ping-pong through a pipe on the vCPUs
EVENT = "/sys/kernel/tracing/events/sched/sched_switch/enable"
STATIC_KEY_CMD = ("mount -t tracefs nodev /sys/kernel/tracing; "
                  "(i=0; while [ $i -lt 100 ]; do echo 1 > /proc/sys/kernel/sched_schedstats; "
                  "echo 0 > /proc/sys/kernel/sched_schedstats; i=$((i+1)); done; "
                  "echo RESULT toggled $i) & "
                  "(j=0; while [ $j -lt 50 ]; do echo 1 > %s; echo 0 > %s; j=$((j+1)); done; "
                  "echo RESULT traced $j) & /opt/rv/bin/ipc -n 20000; wait; "
                  "cat /sys/module/replayvm/parameters/jl_keys" % (EVENT, EVENT))


def test_static_keys_flipped_during_a_recording_replay(tmp_path):
    """A static key flips by rewriting its jump-label sites, a static
    call by rewriting its call sites; which version another vCPU ran used
    to depend on when its translation of the site was dropped, which
    nothing logged, and a block translated while text_poke_bp's int3 was
    in place left the vCPU in native code.  The module now translates
    each site as a CREW-ordered read of its key (guest-module/dbt/jumplabel.c,
    staticcall.c) and drops no block for such pokes.  Before that the
    schedstats toggles stalled the recording with the kernel running
    natively, and the trace-event toggles alone recorded with native
    kernel code at a static-call site in __schedule and diverged there."""
    log = tmp_path / "run.rr"
    rec = record_byte(log, 2, cmd=STATIC_KEY_CMD)
    assert "RESULT toggled 100" in rec.output, rec.console[-3000:]
    assert "RESULT traced 50" in rec.output, rec.console[-3000:]
    assert re.search(r"^Y$", rec.output, re.M), rec.output[-500:]
    assert "runs kernel text natively" not in rec.output + rec.console, rec.console[-3000:]
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == rrtest.results(rec.output)


T = "/sys/kernel/tracing"
# function tracing of hot functions turned on and off ten times, a kprobe
# event at a function's entry (ftrace-based) five times, then tracing of
# every function for a second, beside ipc
FTRACE_CMD = ("mount -t tracefs nodev {t}; "
              "echo pipe_read pipe_write schedule mutex_lock > {t}/set_ftrace_filter; "
              "(i=0; while [ $i -lt 10 ]; do echo function > {t}/current_tracer; "
              "echo nop > {t}/current_tracer; i=$((i+1)); done; echo RESULT ftraced $i; "
              "j=0; while [ $j -lt 5 ]; do echo 'p:rvprobe pipe_write' > {t}/kprobe_events && "
              "echo 1 > {t}/events/kprobes/rvprobe/enable && "
              "echo 0 > {t}/events/kprobes/rvprobe/enable && echo > {t}/kprobe_events; "
              "j=$((j+1)); done; echo RESULT kprobed $j; echo > {t}/set_ftrace_filter; "
              "echo function > {t}/current_tracer; sleep 1; echo nop > {t}/current_tracer; "
              "echo RESULT traced every function) & "
              "/opt/rv/bin/ipc -n 20000; wait").format(t=T)


def test_function_tracing_turned_on_during_a_recording_replays(tmp_path):
    """ftrace rewrites the call at each traced function's entry with
    text_poke_bp batches (int3, tail, first byte, a sync of every CPU after
    each).  The module used to copy those bytes and drop the blocks after
    the batch, so which version another vCPU ran depended on when its
    block went, and a block translated while the int3 was in place ran the
    kernel natively: this recording stalled in function_trace_call,
    reached natively.  Now the sites of a batch in flight are translated
    from the batch (guest-module/dbt/pokebatch.c): the old instruction until
    the vCPU has run the batch's last sync (an IPI, at a deterministic
    point), the new one after; and an ftrace trampoline stays translated
    until it is freed, not only while ftrace lists it.  Tracing every
    function also rewrote the entries of the kernel functions the module
    calls natively (a double fault) and of the module's own (a stall):
    the module has no ftrace sites now, and takes the former out of the
    function tracer (guest-module/dbt/notrace.h)."""
    log = tmp_path / "run.rr"
    rec = record_byte(log, 2, cmd=FTRACE_CMD)
    assert "RESULT ftraced 10" in rec.output, rec.console[-3000:]
    assert "RESULT kprobed 5" in rec.output, rec.console[-3000:]
    assert "RESULT traced every function" in rec.output, rec.console[-3000:]
    assert "runs kernel text natively" not in rec.output + rec.console, rec.console[-3000:]
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == rrtest.results(rec.output)


# Kprobes inside a function (after pipe_write's ftrace call): an int3
# written by text_poke alone, which the kprobe optimizer replaces a few
# jiffies later with a jump to a detour buffer where it can (6.1.0-57 did
# that to pipe_write+5 before ipc first hit it, and the recording ran
# opt_pre_handler natively and stalled).
PROBE_CANDIDATES = ["pipe_write+5", "pipe_write+7", "pipe_write+8", "pipe_write+9",
                    "pipe_write+0xf", "pipe_write+0x13"]
DEBUGFS = "/sys/kernel/debug"


def optimizable_kprobe():
    """A probe point inside a function that this kernel optimizes: armed in
    a plain boot (no module), which the kprobe list shows [OPTIMIZED]."""
    arm = "; ".join("echo 'p:rvp%d %s' >> %s/kprobe_events" % (i, p, T)
                    for i, p in enumerate(PROBE_CANDIDATES))
    cmd = ("mount -t tracefs nodev {t}; mount -t debugfs nodev {d}; {arm}; "
           "echo 1 > {t}/events/kprobes/enable; sleep 1; cat {d}/kprobes/list").format(
               t=T, d=DEBUGFS, arm=arm)
    r = rrtest.vmrun.run(vcpus=1, accel="tcg", cmd=cmd, timeout=120, net=False)
    m = re.search(r"^([0-9a-f]{16})\s+k\s+(pipe_write\+0x[0-9a-f]+)\s+\[OPTIMIZED\]", r.output, re.M)
    assert m, "no kprobe in pipe_write is optimized on this kernel:\n" + r.output[-2000:]
    return m.group(2), int(m.group(1), 16)


def kprobe_inside_cmd(probe, optimize):
    """Arms @probe and waits (the optimizer runs within a few jiffies),
    then runs ipc, which hits it.  optimize: the sysctl the module
    switched off is turned back on first."""
    return ("mount -t tracefs nodev {t}; echo RESULT optimization $(cat /proc/sys/debug/kprobes-optimization); "
            "{opt}echo 'p:rvp {p}' > {t}/kprobe_events && echo 1 > {t}/events/kprobes/rvp/enable && "
            "echo RESULT armed; sleep 1; /opt/rv/bin/ipc -n 2000").format(
                t=T, p=probe, opt="echo 1 > /proc/sys/debug/kprobes-optimization; " if optimize else "")


INT3_ERROR = re.compile(r"translator error 102 \(an int3 in kernel code that nothing orders, "
                        r"most likely a kprobe inside a function.*\), at pc (0x[0-9a-f]+); "
                        r"recording stopped")


@pytest.fixture(scope="module")
def optimizable_probe():
    return optimizable_kprobe()


@pytest.mark.parametrize("optimize", [False, True], ids=["as-loaded", "optimizer-on"])
def test_kprobe_inside_a_function_stops_the_recording_saying_so(tmp_path, optimizable_probe, optimize):
    """A kprobe inside a function is not ordered: its int3 handler resumes
    the kernel natively, and so does the detour an optimized one jumps to.
    The recording stops at once, naming the probe's pc (RVG_ERR_INT3, QEMU
    0066), and its log is closed cleanly.  The probe point is one this
    kernel optimizes, and ipc first hits it after the optimizer has run:
    the module switches kprobe optimization off (as-loaded: the int3 stays
    and the translator meets it), and a batch that optimizes a probe anyway
    (optimizer-on: the sysctl turned back on) is reported when it starts."""
    probe, addr = optimizable_probe
    log = tmp_path / "run.rr"
    r = rrtest.vmrun.run(vcpus=2, accel="tcg", record=str(log), crew="byte",
                         cmd=kprobe_inside_cmd(probe, optimize), timeout=600)
    assert "RESULT optimization 0" in r.output, r.console[-2000:]
    assert "RESULT armed" in r.output, r.console[-2000:]
    m = INT3_ERROR.search(r.console)
    assert m, r.console[-3000:]
    assert int(m.group(1), 16) == addr, (probe, hex(addr), m.group(0))
    assert "runs kernel text natively" not in r.console, r.console[-3000:]
    v = subprocess.run([rrtest.REPLAY_VM, "verify", str(log)], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr


# a module loaded and unloaded ten times (its text and data are vmalloc'd,
# and freed with TLB flushes, so their addresses come back with other
# pages), then forks (vmalloc'd kernel stacks)
VTLB_CMD = ("i=0; while [ $i -lt 10 ]; do insmod /lib/modules/evdev.ko && rmmod evdev || "
            "echo MODFAIL; i=$((i+1)); done; cd /opt/rv/bin && ./forkwait -n 100 >/dev/null; "
            "grep -E '^(byte_(vtlb_checked|vtlb_stale|foreign_calls)|stage_bypassed) ' /proc/replayvm; "
            "echo RESULT vtlb done")
VTLB = re.compile(r"^(?:byte_(?:vtlb_)?)?(checked|stale|foreign_calls|stage_bypassed) (\d+)", re.M)


def vtlb_record(log, bdebug):
    os.environ["RV_BYTE_EXTRA"] = "bdebug=%d," % bdebug
    try:
        rec = record_byte(log, 2, cmd=VTLB_CMD)
    finally:
        del os.environ["RV_BYTE_EXTRA"]
    assert "MODFAIL" not in rec.output, rec.console[-3000:]
    return rec, {k: int(v) for k, v in VTLB.findall(rec.output)}


def test_vtlb_entries_match_the_page_tables(tmp_path):
    """The inline check finds the shadow of kernel addresses outside the
    direct map and the kernel image (vmalloc'd stacks, vmemmap, module
    memory) through a per-CPU software TLB, which the translated kernel's
    TLB flushes (invlpg, invpcid, mov to cr3/cr4) empty.  With bdebug=512
    every access that would use an entry goes to the slow path instead,
    which compares the entry with the page tables: none may differ.

    The recording loads and unloads a module, which stopped every byte-CREW
    recording before 2026-11-28 (the module init's call into native code
    slept, and the per-CPU stack of such calls lost it: "CREW error 100").
    No kernel code may run natively after the switch (byte_foreign_calls
    counts calls from translated code into native code other than the
    guest module's): until 2026-11-28 a module's init (init text) and
    its exit function (run while the module is GOING) were not
    translated; with only the init fixed this counted ten, one per
    unload.

    And no translation stored into the code cache around its staging
    (stage_bypassed, guest-module/dbt/cache.c: such a store is undone when the
    block's scratch copy is copied in)."""
    _, n = vtlb_record(tmp_path / "run.rr", 512)
    assert n["checked"] > 100000 and n["stale"] == 0, n
    assert n["foreign_calls"] == 0, n
    assert n["stage_bypassed"] == 0, n


# module loads beside forks on the other vCPU
MODLOAD_CMD = ("(cd /opt/rv/bin && ./forkwait -n 300 >/dev/null) & i=0; while [ $i -lt 10 ]; do "
               "insmod /lib/modules/evdev.ko && rmmod evdev || echo MODFAIL; i=$((i+1)); done; "
               "wait; echo RESULT modload done")


@full_only
def test_module_loads_during_a_byte_recording_replay(tmp_path):
    """Modules loaded and unloaded during a byte-CREW recording: their
    init and exit functions ran natively, without ownership checks or det
    points, and a replay diverged at a spin lock during the loads.  (Full
    only, for time: the vtlb test above checks in every run that no
    kernel code runs natively.)"""
    log = tmp_path / "run.rr"
    rec = record_byte(log, 2, cmd=MODLOAD_CMD)
    assert "MODFAIL" not in rec.output, rec.console[-3000:]
    rp = rrtest.replay(log, timeout=900)
    assert rrtest.results(rp.output) == rrtest.results(rec.output) == ["RESULT modload done"]


@full_only
def test_vtlb_checker_sees_entries_that_missed_a_flush(tmp_path):
    """The check above can fail: with the flushes left out (bdebug=1024)
    the entries of the reloaded module's pages go stale, and it says so."""
    _, n = vtlb_record(tmp_path / "run.rr", 512 | 1024)
    assert n["stale"] > 0, n


def test_byte_crew_needs_a_host(tmp_path):
    """The module refuses crew=byte in a VM that is not being recorded or
    replayed (nothing would enforce kernel interrupts at deterministic
    points), and the kernel goes on natively."""
    r = rrtest.vmrun.run(vcpus=2, accel="tcg", module=True, mem=1024,
                         append_extra="mem=480M rv.modparams=dbt=1,crew=byte,"
                         "shadow_base=0x20000000,shadow_size=0x1e000000",
                         cmd="cat /proc/modules | grep -c replayvm; echo done", timeout=300)
    assert r.status == 0, r.console[-2000:]
    assert "crew=byte needs a host recording or replaying it" in r.console
    assert "done" in r.output
