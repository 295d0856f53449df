#!/usr/bin/python3
"""Two guest images (two builds of the guest module), interleaved: record
each workload with byte CREW at N vCPUs on each image and replay it, round
after round, A and B alternating first, with an unrecorded run of the
workload beside them; report medians of the workload's own time (the
"NAME: T s" line it prints, boot excluded) and of the record and replay
wall times, the ratios B/A and to unrecorded.  Every replay must end
REPLAY OK with the recorded RESULT lines.

  bench/module_ab.py --a build/image-old --b build/image --vcpus 1,2 \\
      --rounds 3 read ipc --out bench/results/x.md
"""
import argparse
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "vm-images"))
import rrtest  # noqa: E402
import vmrun  # noqa: E402

TIME = re.compile(r"^(\w+): (?:\d+ requests in )?([0-9.]+) s[,;( ]", re.M)


def own_time(name, output):
    """The workload's own time in seconds, or None."""
    for m in TIME.finditer(output):
        if m.group(1) == name:
            return float(m.group(2))
    return None


def recorded(image, name, vcpus, log, timeout):
    """(own s, record s, replay s, ok)"""
    t0 = time.monotonic()
    rec = vmrun.run(accel="tcg", image=image, vcpus=vcpus, workload=name, record=log,
                    crew="byte", timeout=timeout)
    t1 = time.monotonic()
    want = rrtest.results(rec.output)
    rp = rrtest.replay(log, timeout=timeout, expect_ok=False)
    t2 = time.monotonic()
    ok = rec.status == 0 and rp.status == 0 and "REPLAY OK" in rp.stderr and \
        bool(want) and rrtest.results(rp.output) == want
    return own_time(name, rec.output), t1 - t0, t2 - t1, ok


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec="%.2f"):
    return spec % x if x is not None else "?"


def ratio(a, b):
    return b / a if a and b else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="image dir A (the baseline)")
    ap.add_argument("--b", required=True, help="image dir B")
    ap.add_argument("--vcpus", default="1,2", help="vCPU counts, e.g. 1,2 (default 1,2)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--out", help="also write the table here")
    ap.add_argument("workloads", nargs="*", default=["read", "readdir", "ipc", "socket", "forkwait", "http"])
    a = ap.parse_args(argv)
    for w in a.workloads:
        if w not in vmrun.WORKLOADS:
            ap.error("unknown workload %r" % w)
    lines = ["A = %s, B = %s; %d rounds, medians; own = the workload's own time (s), "
             "rec/rep = whole record/replay runs (s, boot included); plain = unrecorded, image A"
             % (a.a, a.b, a.rounds), "",
             "| workload | vCPUs | plain own | A own | B own | B/A own | A/plain | B/plain "
             "| A rec | B rec | B/A rec | A rep | B rep | B/A rep | failed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    bad = 0
    with tempfile.TemporaryDirectory(prefix="module-ab-") as tmp:
        for vcpus in [int(v) for v in a.vcpus.split(",")]:
            for w in a.workloads:
                t = {k: [] for k in ("plain", "A", "B")}
                failed = 0
                for r in range(a.rounds):
                    order = ("A", "B") if r % 2 == 0 else ("B", "A")
                    p = vmrun.run(accel="tcg", image=a.a, vcpus=vcpus, workload=w, timeout=a.timeout)
                    t["plain"].append((own_time(w, p.output), None, None))
                    for v in order:
                        res = recorded(a.a if v == "A" else a.b, w, vcpus,
                                       os.path.join(tmp, "%s.rr" % v), a.timeout)
                        if not res[3]:
                            failed += 1
                        t[v].append(res[:3])
                m = {k: [med([x[i] for x in t[k]]) for i in range(3)] for k in t}
                row = "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
                    w, vcpus, fmt(m["plain"][0], "%.3f"), fmt(m["A"][0], "%.3f"), fmt(m["B"][0], "%.3f"),
                    fmt(ratio(m["A"][0], m["B"][0])), fmt(ratio(m["plain"][0], m["A"][0]), "%.1f"),
                    fmt(ratio(m["plain"][0], m["B"][0]), "%.1f"),
                    fmt(m["A"][1], "%.1f"), fmt(m["B"][1], "%.1f"), fmt(ratio(m["A"][1], m["B"][1])),
                    fmt(m["A"][2], "%.1f"), fmt(m["B"][2], "%.1f"), fmt(ratio(m["A"][2], m["B"][2])),
                    failed)
                bad += failed
                lines.append(row)
                print(row, flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    if bad:
        print("%d run(s) FAILED (no REPLAY OK, or other results)" % bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
