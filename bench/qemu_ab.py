#!/usr/bin/python3
"""Two QEMU builds of the series, interleaved: record a command at N vCPUs
(page CREW) with each build and replay it with the same build, round after
round, A and B alternating first; report the median times and the B/A
ratios.  For patches that should change speed and not behaviour (every
replay must print REPLAY OK with the recorded RESULT lines).

  bench/qemu_ab.py --a OLD/qemu-system-x86_64 --b build/qemu/qemu-system-x86_64 \\
      --vcpus 2,4 --rounds 3 --cmd 'echo hi' --out bench/results/x.md
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "vm-images"))
import rrtest  # noqa: E402
import vmrun  # noqa: E402


def record_replay(log, timeout=900, **run_kw):
    """Record vmrun.run(**run_kw) into log, then replay it: (record s,
    replay s, ok, the recording's Result, the Replay)."""
    t0 = time.monotonic()
    rec = vmrun.run(accel="tcg", record=log, timeout=timeout, **run_kw)
    t1 = time.monotonic()
    want = rrtest.results(rec.output)
    rp = rrtest.replay(log, timeout=timeout, expect_ok=False)
    t2 = time.monotonic()
    ok = rec.status == 0 and rp.status == 0 and "REPLAY OK" in rp.stderr and \
        rrtest.results(rp.output) == want
    return t1 - t0, t2 - t1, ok, rec, rp


def one(qemu, vcpus, cmd, log):
    rec_s, rep_s, ok, _, rp = record_replay(log, vcpus=vcpus, cmd=cmd, qemu=qemu)
    return rec_s, rep_s, ok, rp.events


def finish(lines, out, bad):
    """Print the table (and write it to out); exit status 1 if a run failed."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)
    if bad:
        print("%d run(s) FAILED (no REPLAY OK or other results)" % bad, file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="QEMU binary A (the baseline)")
    ap.add_argument("--b", required=True, help="QEMU binary B")
    ap.add_argument("--vcpus", default="2,4")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cmd", default="echo hi")
    ap.add_argument("--out", help="markdown table here too")
    a = ap.parse_args(argv)
    rows, bad = {}, 0
    with tempfile.TemporaryDirectory(prefix="qemu-ab-") as tmp:
        for r in range(a.rounds):
            for v in [int(x) for x in a.vcpus.split(",")]:
                order = ("a", "b") if r % 2 == 0 else ("b", "a")
                for which in order:
                    q = getattr(a, which)
                    rec, rep, ok, ev = one(q, v, a.cmd, os.path.join(tmp, "%s%d.rr" % (which, v)))
                    bad += not ok
                    rows.setdefault((v, which), []).append((rec, rep))
                    print("round %d vcpus %d %s: record %.1f s replay %.1f s events %d %s" % (
                        r, v, which, rec, rep, ev or 0, "ok" if ok else "FAILED"), flush=True)
    lines = ["command: `%s`, page CREW, TCG, %d rounds, A/B interleaved (medians)" % (a.cmd, a.rounds),
             "", "| vCPUs | record A | record B | B/A | replay A | replay B | B/A |",
             "|---|---|---|---|---|---|---|"]
    for v in sorted({k[0] for k in rows}):
        ra = statistics.median(x[0] for x in rows[(v, "a")])
        rb = statistics.median(x[0] for x in rows[(v, "b")])
        pa = statistics.median(x[1] for x in rows[(v, "a")])
        pb = statistics.median(x[1] for x in rows[(v, "b")])
        lines.append("| %d | %.1f s | %.1f s | %.2f | %.1f s | %.1f s | %.2f |" % (
            v, ra, rb, rb / ra, pa, pb, pb / pa))
    lines.append("")
    lines.append("A: %s" % a.a)
    lines.append("B: %s" % a.b)
    return finish(lines, a.out, bad)


if __name__ == "__main__":
    sys.exit(main())
