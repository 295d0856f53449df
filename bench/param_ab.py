#!/usr/bin/python3
"""One guest image, two sets of guest-module parameters, interleaved:
record each workload with byte CREW at N vCPUs under A's parameters and
B's, round after round, the order alternating; report the median of the
workload's own time (its "NAME: T s" line) and B/A.  Recordings only: a
parameter that changes what is recorded needs bench/module_ab.py's replays.

  bench/param_ab.py --a '' --b bdebug=4096 --vcpus 2 --rounds 2 read ipc
  bench/param_ab.py --a '' --b host_fence=1 read ipc   # QEMU 0043's fences
  bench/param_ab.py --crew-b byte+user http ipc          # QEMU 0059's user page CREW
  bench/param_ab.py --crew-a byte+user --crew-b byte+user --qemu-a OLD --qemu-b NEW http forkwait

Each run's console lines about remote fences are printed with its time.
"""
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vm-images"))
sys.path.insert(0, HERE)
import vmrun  # noqa: E402
from module_ab import own_time  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", default="", help="module parameters of A (comma-separated, RV_BYTE_EXTRA)")
    ap.add_argument("--b", default="", help="module parameters of B")
    ap.add_argument("--crew-a", default="byte", choices=["byte", "byte+user"], help="CREW mode of A")
    ap.add_argument("--crew-b", default="byte", choices=["byte", "byte+user"], help="CREW mode of B")
    ap.add_argument("--qemu-a", default=vmrun.QEMU, help="QEMU binary of A")
    ap.add_argument("--qemu-b", default=vmrun.QEMU, help="QEMU binary of B")
    ap.add_argument("--image", default=vmrun.IMAGE)
    ap.add_argument("--vcpus", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=1200)
    ap.add_argument("workloads", nargs="+")
    a = ap.parse_args(argv)
    if (a.a, a.crew_a, a.qemu_a) == (a.b, a.crew_b, a.qemu_b):
        ap.error("A and B are the same")
    times = {}
    with tempfile.TemporaryDirectory(prefix="param-ab-") as d:
        for r in range(a.rounds):
            for w in a.workloads:
                for side in (("A", "B") if r % 2 == 0 else ("B", "A")):
                    os.environ["RV_BYTE_EXTRA"] = a.a if side == "A" else a.b
                    rec = vmrun.run(accel="tcg", image=a.image, vcpus=a.vcpus, workload=w,
                                    record=os.path.join(d, "run.rr"),
                                    crew=a.crew_a if side == "A" else a.crew_b, timeout=a.timeout,
                                    qemu=a.qemu_a if side == "A" else a.qemu_b)
                    t = own_time(w, rec.output) if rec.status == 0 else None
                    times.setdefault((w, side), []).append(t)
                    notes = [l.split("byte CREW: ", 1)[1] for l in rec.console.splitlines()
                             if "remote fence" in l]
                    print("round %d %s %s: %s s %s" % (r + 1, w, side, t, "; ".join(notes)), flush=True)
    print("A = '%s' (%s, %s), B = '%s' (%s, %s), %d vCPUs, %d rounds, medians of the workload's "
          "own time" % (a.a, a.crew_a, a.qemu_a, a.b, a.crew_b, a.qemu_b, a.vcpus, a.rounds))
    for w in a.workloads:
        ta = [x for x in times[(w, "A")] if x]
        tb = [x for x in times[(w, "B")] if x]
        if ta and tb:
            ma, mb = statistics.median(ta), statistics.median(tb)
            print("%s: A %.2f s, B %.2f s, B/A %.2f" % (w, ma, mb, mb / ma))
        else:
            print("%s: a run failed (A %s, B %s)" % (w, ta, tb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
