#!/usr/bin/python3
"""Byte CREW: waits that spin in guest code against waits handed to the host
(the guest module's host_wait parameter, RVG_CMD_WAIT).  Records a
workload with each, replays each recording, variants interleaved ABBA round
after round; reports median times and host/spin ratios.  --cpus pins the
whole run (QEMU included) to those host cores, e.g. --cpus 0 with --vcpus 2
puts two vCPU threads on one core (vCPUs outnumbering cores).

  bench/host_wait.py --vcpus 2 --rounds 3 --workload ipc --args='-n 20000' \\
      [--cpus 0] [--out bench/results/x.md]
"""
import argparse
import os
import shlex
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "vm-images"))
import qemu_ab  # noqa: E402
import rrtest  # noqa: E402

VARIANTS = {"spin": "host_wait=0", "host": ""}
WAITS = "CREW wait(s) handed to the host"


def one(variant, vcpus, workload, args, log, timeout):
    os.environ["RV_BYTE_EXTRA"] = VARIANTS[variant]
    try:
        rec_s, rep_s, ok, rec, rp = qemu_ab.record_replay(
            log, timeout, vcpus=vcpus, crew="byte", workload=workload, args=args)
    finally:
        del os.environ["RV_BYTE_EXTRA"]
    ok = ok and bool(rrtest.results(rec.output))
    waits = [l.strip() for l in (rec.console + rp.stderr).splitlines() if WAITS in l]
    return rec_s, rep_s, ok, waits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcpus", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workload", default="ipc")
    ap.add_argument("--args", default="", help="the workload's arguments")
    ap.add_argument("--cpus", help="host cores to pin to, e.g. 0 or 0,1")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--out", help="markdown table here too")
    a = ap.parse_args(argv)
    if a.cpus:
        os.sched_setaffinity(0, {int(c) for c in a.cpus.split(",")})
    args = shlex.split(a.args)
    times, bad = {"spin": [], "host": []}, 0
    with tempfile.TemporaryDirectory(prefix="host-wait-") as tmp:
        for r in range(a.rounds):
            for v in (("spin", "host") if r % 2 == 0 else ("host", "spin")):
                rec, rep, ok, waits = one(v, a.vcpus, a.workload, args,
                                          os.path.join(tmp, v + ".rr"), a.timeout)
                bad += not ok
                times[v].append((rec, rep))
                print("round %d %s: record %.1f s replay %.1f s %s%s" % (
                    r, v, rec, rep, "ok" if ok else "FAILED",
                    "".join("\n    " + w for w in waits)), flush=True)
    med = {v: (statistics.median(x[0] for x in t), statistics.median(x[1] for x in t))
           for v, t in times.items()}
    lines = ["`%s %s`, byte CREW, %d vCPUs, TCG, host cores %s, %d rounds ABBA (medians)" % (
        a.workload, a.args, a.vcpus, a.cpus or "all (%d)" % os.cpu_count(), a.rounds), "",
        "| | record | replay |", "|---|---|---|",
        "| spin in the guest (host_wait=0) | %.1f s | %.1f s |" % med["spin"],
        "| handed to the host (host_wait=32) | %.1f s | %.1f s |" % med["host"],
        "| host / spin | %.2f | %.2f |" % (med["host"][0] / med["spin"][0],
                                          med["host"][1] / med["spin"][1])]
    return qemu_ab.finish(lines, a.out, bad)


if __name__ == "__main__":
    sys.exit(main())
