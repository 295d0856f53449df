#!/usr/bin/python3
"""tests/guest/xmodify.c in a 2-vCPU guest with each of several QEMU builds,
interleaved, optionally with busy-looping host processes ("hogs") so that
vCPU threads get preempted: prints each run's stale rounds and seconds.
DELAY_US sets QEMU's RRVM_TEST_CODE_WRITE_DELAY_US test hook (0038).

  bench/xmodify_ab.py RUNS HOGS ROUNDS DELAY_US QEMU [QEMU...]
"""
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vm-images"))
import vmrun  # noqa: E402


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    runs, hogs, rounds, delay = (int(sys.argv[1]), int(sys.argv[2]),
                                 sys.argv[3], sys.argv[4])
    qemus = sys.argv[5:]
    exe = vmrun.static_binary(os.path.join(HERE, "..", "tests", "guest", "xmodify.c"),
                              os.path.join(tempfile.mkdtemp(), "xmodify"), ["-pthread"])
    os.environ["RRVM_TEST_CODE_WRITE_DELAY_US"] = delay
    hp = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(hogs)]
    res = {q: [] for q in qemus}
    try:
        for i in range(runs):
            for q in qemus:
                t = time.time()
                r = vmrun.run(vcpus=2, binary=exe, args=[rounds], timeout=900,
                              accel="tcg", net=False, qemu=q)
                m = re.search(r"RESULT xmodify rounds=(\d+) stale=(\d+)", r.output)
                stale = int(m.group(2)) if m else None     # None: no result
                res[q].append((stale, time.time() - t))
                print(f"run {i} {q} stale={stale} {time.time() - t:.0f}s", flush=True)
    finally:
        for p in hp:
            p.kill()
    for q in qemus:
        print(q, "stale", [s for s, _ in res[q]], "seconds", [round(d) for _, d in res[q]])


if __name__ == "__main__":
    main()
