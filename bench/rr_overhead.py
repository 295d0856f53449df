#!/usr/bin/env python3
"""Record/replay overhead vs plain TCG, per workload and vCPU count.

For each workload and each vCPU count, the variants run interleaved
(plain, record, replay, plain, record, replay, ...) so that load on a
shared machine hits them alike; the report gives medians and ratios to
plain.  Times are whole VM runs (boot included), plain runs under MTTCG
like the recordings.  From the (last) recording of each row:

  log MB/s          file size / recording duration (the End event's host
                    time, else the wall time of the record run)
  events            events in the log
  CREW transfers/s  page ownership transfers / recording duration
  false sharing     `replay-vm crew-stats` estimate: false / (false + true)
                    among classified transfers, and the share it could not
                    classify (unknown); see `replay-vm crew-stats --help`

The markdown table goes to stdout (one row as each finishes); --csv PATH
also writes the rows as CSV.  A run that fails is reported in its cell
(FAIL) and the benchmark goes on.

  bench/rr_overhead.py --vcpus 1,2,4 --reps 1 read socket --csv out.csv
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vm-images"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import rrtest  # noqa: E402
import vmrun  # noqa: E402

COLUMNS = ["workload", "vcpus", "plain_s", "record_s", "replay_s", "record_over_plain",
           "replay_over_plain", "log_mb_per_s", "events", "crew_transfers", "crew_transfers_per_s",
           "false_sharing_share", "crew_unknown_share", "failures"]
HEADER = ("| workload | vCPUs | plain s | record s | replay s | record/plain | replay/plain "
          "| log MB/s | events | CREW transfers/s | false sharing | unclassified |")


def log_stats(log):
    """events, CREW statistics and duration of a recording (crew-stats --json)."""
    s = rrtest.crew_stats(log)
    s["size"] = os.path.getsize(log)
    return s


def parse_vcpus(text):
    try:
        v = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("--vcpus wants N or N,N,...: %r" % text)
    if not v or min(v) < 1:
        raise argparse.ArgumentTypeError("--vcpus wants N or N,N,...: %r" % text)
    return v


def timed(fn):
    s = time.monotonic()
    try:
        fn()
    except (AssertionError, subprocess.SubprocessError, OSError) as e:
        lines = str(e).strip().splitlines() or ["failed"]
        keep = [l for l in lines if "DIVERGENCE" in l or "expected" in l or "found" in l][:10]
        print("  ! " + "\n  ! ".join([lines[0][:300]] + keep), file=sys.stderr, flush=True)
        return None
    return time.monotonic() - s


def plain_run(vcpus, w, timeout):
    r = vmrun.run(vcpus=vcpus, workload=w, accel="tcg", timeout=timeout)
    assert r.status == 0, "plain run failed (%d): %s" % (r.status, r.console[-300:])


def measure(w, vcpus, reps, timeout, verbose):
    t = {"plain": [], "record": [], "replay": []}
    fails = []
    stats = None
    with tempfile.TemporaryDirectory(prefix="rv-bench-") as tmp:
        log = os.path.join(tmp, "run.rr")
        for rep in range(reps):
            for variant, fn in (
                    ("plain", lambda: plain_run(vcpus, w, timeout)),
                    ("record", lambda: rrtest.record(log, vcpus=vcpus, workload=w, timeout=timeout)),
                    ("replay", lambda: rrtest.replay(log, timeout=timeout))):
                if variant == "replay" and not t["record"]:
                    continue
                if verbose:
                    print("  %s %d vCPU rep %d: %s" % (w, vcpus, rep + 1, variant), file=sys.stderr, flush=True)
                s = timed(fn)
                if s is None:
                    fails.append(variant)
                    continue
                t[variant].append(s)
                if variant == "record":
                    stats = log_stats(log)
    m = {k: statistics.median(v) if v else None for k, v in t.items()}
    row = dict(workload=w, vcpus=vcpus, plain_s=m["plain"], record_s=m["record"], replay_s=m["replay"],
               failures=" ".join(fails))
    ratio = lambda a, b: a / b if a and b else None  # noqa: E731
    row["record_over_plain"] = ratio(m["record"], m["plain"])
    row["replay_over_plain"] = ratio(m["replay"], m["plain"])
    if stats:
        dur = stats.get("duration_s") or m["record"]
        row["log_mb_per_s"] = stats["size"] / 1e6 / dur
        row["events"] = stats["events"]
        row["crew_transfers"] = stats["transfers"]
        row["crew_transfers_per_s"] = stats["transfers"] / dur if vcpus > 1 else None
        if vcpus > 1 and stats["page_transfers"]:
            row["false_sharing_share"] = stats["false_sharing_share"]
            row["crew_unknown_share"] = stats["unknown"] / stats["page_transfers"]
    return row


def fmt(v, spec):
    return "-" if v is None else spec % v


def pct(share):
    return "-" if share is None else "%.0f%%" % (100 * share)


def md_row(r):
    cells = [r["workload"], str(r["vcpus"]),
             fmt(r.get("plain_s"), "%.1f"), fmt(r.get("record_s"), "%.1f"), fmt(r.get("replay_s"), "%.1f"),
             fmt(r.get("record_over_plain"), "%.2f"), fmt(r.get("replay_over_plain"), "%.2f"),
             fmt(r.get("log_mb_per_s"), "%.2f"), fmt(r.get("events"), "%d"),
             fmt(r.get("crew_transfers_per_s"), "%.0f"),
             pct(r.get("false_sharing_share")), pct(r.get("crew_unknown_share"))]
    for k, i in (("plain", 2), ("record", 3), ("replay", 4)):
        if k in r["failures"].split():
            cells[i] = "FAIL" if cells[i] == "-" else cells[i] + " (FAIL)"
    return "| " + " | ".join(cells) + " |"


def csv_value(v):
    if isinstance(v, float):
        return "%.4g" % v
    return "" if v is None else v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[2:]))
    ap.add_argument("--vcpus", type=parse_vcpus, default=[1], help="vCPU counts, e.g. 1,2,4 (default 1)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per VM run (default 900)")
    ap.add_argument("--csv", metavar="PATH", help="also write the rows as CSV")
    ap.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    ap.add_argument("workloads", nargs="*", default=["read", "readdir", "ipc", "socket", "forkwait", "http"])
    a = ap.parse_args()
    for w in a.workloads:
        if w not in vmrun.WORKLOADS:
            ap.error("unknown workload %r (known: %s)" % (w, ", ".join(sorted(vmrun.WORKLOADS))))
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    rows = []
    out = None
    if a.csv:
        out = open(a.csv, "w", newline="")
        cw = csv.DictWriter(out, COLUMNS, extrasaction="ignore")
        cw.writeheader()
    for w in a.workloads:
        for v in a.vcpus:
            r = measure(w, v, a.reps, a.timeout, a.verbose)
            rows.append(r)
            print(md_row(r), flush=True)
            if out:
                cw.writerow({k: csv_value(r.get(k)) for k in COLUMNS})
                out.flush()
    if out:
        out.close()
    return 1 if any(r["failures"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
