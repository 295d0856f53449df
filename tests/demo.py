#!/usr/bin/env python3
"""make demo: record a guest from power-on, replay it, print the verdict.

The guest runs programs whose output depends on timing, randomness and
thread interleaving (tscrand: rdtsc/rdrand/clocks; racy_counter: lost
updates between threads), so a replay that was not faithful would show.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm-images"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rrtest  # noqa: E402

VCPUS = int(os.environ.get("DEMO_VCPUS", "1"))
CREW = os.environ.get("DEMO_CREW", "page")
CMD = "tscrand | tail -1; racy_counter -t 2 -n 1M -a 2000 | tail -1; diskread | tail -1"
if CREW == "byte":
    # byte CREW orders kernel memory; user space shares nothing, so the
    # race is between processes in the kernel (one file, pipe, socket)
    CMD = "tscrand | tail -1; racy_kernel -p %d -n 200 | tail -1; diskread | tail -1" % max(VCPUS, 2)


def main():
    with tempfile.TemporaryDirectory(prefix="rv-demo-") as tmp:
        log = os.path.join(tmp, "run.rr")
        print("== recording a %d-vCPU VM (MTTCG, %s-granular CREW) into %s" % (VCPUS, CREW, log),
              flush=True)
        rec = rrtest.record(log, vcpus=VCPUS, cmd=CMD, crew=CREW if VCPUS > 1 else None,
                            timeout=600)
        want = rrtest.results(rec.output)
        print("\n".join("   recorded: " + r for r in want))
        ok = True
        for i in range(2):
            rp = rrtest.replay(log, expect_ok=False)
            got = rrtest.results(rp.output)
            same = got == want and rp.status == 0
            ok &= same
            print("== replay %d: %s (%s events, %s checkpoints verified)" % (
                i + 1, "IDENTICAL" if same else "DIFFERENT", rp.events, rp.checkpoints))
            if not same:
                print(rp.stderr[-2000:])
        print("VERDICT: %s" % ("replay matched the recording" if ok else "replay FAILED"))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
