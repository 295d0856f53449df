#!/usr/bin/env python3
"""Byte-CREW stress (issue 7): record the kernel race test N times and
replay every recording; any replay that is not REPLAY OK, or prints a
different result than its recording, is a failure.

    bench/stress_byte.py --rounds 50 --vcpus 2 [--workload racy_kernel] [--out DIR]
    bench/stress_byte.py --table41 --rounds 5 --replays 3 --vcpus 2
    bench/stress_byte.py --crew byte+user --workload http --vcpus 4 --rounds 6

--table41 records the experiment's VM run instead: the six Table 4.1
workloads in turn, each after its warm-up (bench/experiment.py); a round
fails if the recording or one of its replays does not pass every workload
(the replay's RVMARK lines must equal the recording's).

Prints one line per round and a summary; exit status 1 if a round failed.
Failed logs are kept in --out (default /tmp/rv-stress-byte)."""
import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm-images"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rrtest  # noqa: E402


def marks(text):
    """The RVMARK lines of a table41 run, or [] if one workload failed."""
    m = [l.strip() for l in text.splitlines() if l.startswith("RVMARK ")]
    return [] if any(" fail " in l for l in m) else m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--vcpus", type=int, default=2)
    ap.add_argument("--workload", default="racy_kernel")
    ap.add_argument("--replays", type=int, default=1, help="replays of each recording")
    ap.add_argument("--crew", default="byte", choices=["byte", "byte+user"],
                    help="byte+user: page CREW for user addresses too (QEMU 0059/0062)")
    ap.add_argument("--table41", action="store_true",
                    help="the six Table 4.1 workloads in one VM run (bench/experiment.py)")
    ap.add_argument("--out", default="/tmp/rv-stress-byte")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    args = ["-p", str(a.vcpus), "-n", "400"] if a.workload == "racy_kernel" else []
    run_kw = dict(workload=a.workload, args=args, timeout=900)
    if a.table41:
        import experiment
        works = list(experiment.WORKLOADS.items())
        run_kw = dict(cmd=experiment.guest_cmd(works), timeout=900 * len(works))
        a.workload = "table41"
    fails, t0, results = 0, time.time(), set()
    for i in range(a.rounds):
        log = os.path.join(a.out, "round-%03d.rr" % i)
        t = time.time()
        rec = rrtest.vmrun.run(vcpus=a.vcpus, accel="tcg", record=log, crew=a.crew, **run_kw)
        want = marks(rec.output) if a.table41 else rrtest.results(rec.output)
        verdict = "ok"
        native = [l.strip() for l in rec.console.splitlines() if "runs kernel text natively" in l]
        if rec.status != 0 or not want:
            verdict = "RECORD FAILED (status %d)" % rec.status
        elif native:
            # a module bug even when this replay happens to work
            verdict = "NATIVE KERNEL CODE: " + native[0]
        else:
            results.add(tuple(want))
            for _ in range(a.replays):
                rp = rrtest.replay(log, timeout=run_kw["timeout"], expect_ok=False)
                got = marks(rp.output) if a.table41 else rrtest.results(rp.output)
                if rp.status != 0 or got != want:
                    lines = rp.stderr.splitlines()
                    tail = [l for l in lines if "DIVERG" in l or "expected" in l or "found" in l]
                    # no report (a hang ended by the timeout, a crash): its last words
                    verdict = "REPLAY FAILED: " + " | ".join(tail[:3] or lines[-3:])
                    break
        ok = verdict == "ok"
        fails += not ok
        print("round %3d: %s (%.0f s)" % (i + 1, verdict, time.time() - t), flush=True)
        if ok:
            os.remove(log)
    print("%s x%d at %d vCPUs (%s): %d of %d rounds failed, %d distinct results, %.0f s" % (
        a.workload, a.rounds, a.vcpus, a.crew, fails, a.rounds, len(results), time.time() - t0))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
