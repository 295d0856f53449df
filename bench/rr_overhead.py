#!/usr/bin/env python3
"""Record/replay overhead vs plain TCG, per workload and vCPU count.

Variants run interleaved (plain, record, replay, plain, record, replay, ...)
so that load on a shared machine hits them alike; the report gives medians
and ratios to plain, the log's growth rate and, with several vCPUs, CREW
page transfers per second.  Times are whole VM runs (boot included).

  bench/rr_overhead.py --vcpus 1 --reps 3 read socket
"""
import argparse
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


def log_info(log):
    out = subprocess.run([rrtest.REPLAY_VM, "info", log], stdout=subprocess.PIPE, check=True).stdout.decode()
    events = int(re.search(r"events: (\d+)", out).group(1))
    crew = re.search(r"crew_transfer\s+(\d+)", out)
    return events, int(crew.group(1)) if crew else 0, os.path.getsize(log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vcpus", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("workloads", nargs="*", default=["read", "readdir", "ipc", "socket", "forkwait", "http"])
    a = ap.parse_args()
    print("| workload | vCPUs | plain s | record s | replay s | record/plain | replay/plain | log MB/s | events | CREW transfers/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for w in a.workloads:
        t = {"plain": [], "record": [], "replay": []}
        info = None
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "run.rr")
            for _ in range(a.reps):
                s = time.monotonic()
                r = vmrun.run(vcpus=a.vcpus, workload=w, accel="tcg", timeout=900)
                assert r.status == 0, r.console[-1000:]
                t["plain"].append(time.monotonic() - s)
                s = time.monotonic()
                rrtest.record(log, vcpus=a.vcpus, workload=w, timeout=900)
                t["record"].append(time.monotonic() - s)
                info = log_info(log)
                s = time.monotonic()
                rrtest.replay(log, timeout=900)
                t["replay"].append(time.monotonic() - s)
        m = {k: statistics.median(v) for k, v in t.items()}
        events, crew, size = info
        print("| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %d | %.0f |" % (
            w, a.vcpus, m["plain"], m["record"], m["replay"], m["record"] / m["plain"],
            m["replay"] / m["plain"], size / 1e6 / m["record"], events, crew / m["record"]), flush=True)


if __name__ == "__main__":
    main()
