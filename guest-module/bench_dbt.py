#!/usr/bin/env python3
"""Identity-translation overhead of the kernel DBT vs the native kernel.

One guest boot, same accelerator: for each repetition every workload runs
natively and translated (module loaded with dbt=1, after one untimed warm-up
pass that fills the code cache), in alternating order (ABBA).  Times are the
workloads' own elapsed-time lines; the table shows medians and their ratio.

  guest-module/bench_dbt.py --vcpus 2 --reps 3 read socket forkwait
"""
import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vm-images"))
import vmrun  # noqa: E402

DEFAULT = ["read", "readdir", "ipc", "socket", "forkwait", "http", "racy_kernel", "diskread"]
TIME = re.compile(r"^(\w+): (?:\d+ requests in )?([0-9.]+) s[,;( ]", re.M)


def guest_script(workloads, reps):
    # the kernel command line holds at most 2048 bytes (base64): shell functions
    cmds = " ".join("'%s'" % vmrun.WORKLOADS[w] for w in workloads)
    return "\n".join([
        "cd /opt/rv/bin",
        "R(){ m=$1;shift;echo \"BENCH $m ${1%% *}\";./$1 2>&1|grep -E ' s[,;( ]|^RESULT';}",
        "A(){ m=$1;shift;for c in \"$@\";do R $m \"$c\";done;}",
        "W(){ for c in \"$@\";do ./$c >/dev/null 2>&1;done;}",
        "ON(){ insmod /opt/rv/replayvm.ko dbt=1||echo BENCH-FAIL;W \"$@\";}",
        "OFF(){ grep -E '^(kernel_time|entries_tr|blocks)' /proc/replayvm;rmmod replayvm||echo BENCH-FAIL;}",
        "set -- " + cmds,
        "W \"$@\"",   # warm the page cache and the workloads' files natively first
        "r=0;while [ $r -lt %d ];do" % reps,
        " if [ $((r%2)) = 0 ];then A native \"$@\";ON \"$@\";A dbt \"$@\";OFF",
        " else ON \"$@\";A dbt \"$@\";OFF;A native \"$@\";fi;r=$((r+1))",
        "done",
    ])


def parse(out):
    times = {}
    cur = None
    for line in out.splitlines():
        m = re.match(r"BENCH (\w+) (\w+)", line)
        if m:
            cur = (m.group(1), m.group(2))
            continue
        m = TIME.match(line)
        if m and cur and m.group(1) == cur[1]:
            times.setdefault(cur, []).append(float(m.group(2)))
            cur = None
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--vcpus", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--image", default=os.environ.get("RV_IMAGE", vmrun.IMAGE))
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--serial-log")
    ap.add_argument("workloads", nargs="*", default=DEFAULT)
    a = ap.parse_args()
    r = vmrun.run(vcpus=a.vcpus, cmd=guest_script(a.workloads, a.reps), timeout=a.timeout,
                  accel="tcg", image=a.image, serial_log=a.serial_log)
    if r.status != 0 or "BENCH-FAIL" in r.output:
        print(r.console[-4000:])
        return 1
    t = parse(r.output)
    print("vcpus=%d reps=%d (MTTCG, medians of the workloads' own timings)" % (a.vcpus, a.reps))
    print("| workload | native s | dbt s | dbt/native |")
    print("|---|---|---|---|")
    ratios = []
    for w in a.workloads:
        n, d = t.get(("native", w)), t.get(("dbt", w))
        if not n or not d:
            print("| %s | ? | ? | ? |" % w)
            continue
        mn, md = statistics.median(n), statistics.median(d)
        ratios.append(md / mn)
        print("| %s | %.3f | %.3f | %.2f |" % (w, mn, md, md / mn))
    if ratios:
        print("geometric mean dbt/native: %.3f" % statistics.geometric_mean(ratios))
    for line in r.output.splitlines():
        if line.startswith(("kernel_time", "entries_translated", "blocks")):
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
