#!/usr/bin/env python3
"""Mixed stress for the kernel DBT: every workload loops concurrently while
the module is loaded with dbt=1 and unloaded again N times (switch-on /
switch-off under load).  Prints per-workload run/fail counts, the
translator statistics of each load, and any kernel complaint.

  guest-module/stress_dbt.py --vcpus 4 --seconds 600 --reloads 50

--dwell 0 unloads right after each load, while most exits are still
unchained: tasks are then often preempted in exit stubs and the dispatcher,
which is where switch-off must wait for them (entry.c).  The totals of the
module's switch-off lines (retries, mid-instruction frames) are printed.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vm-images"))
import vmrun  # noqa: E402

WORKLOADS = ["read", "readdir", "ipc", "socket", "forkwait", "http", "racy_counter",
             "racy_kernel", "tscrand", "diskread"]
SMALL = {"read": "read -n 2000", "readdir": "readdir -f 50 -n 300", "ipc": "ipc -n 20000",
         "socket": "socket -n 5000", "forkwait": "forkwait -n 200", "http": "http -n 300 -c 10",
         "racy_counter": "racy_counter -n 1M -a 1000", "racy_kernel": "racy_kernel -n 300",
         "tscrand": "tscrand", "diskread": "diskread"}
BAD = re.compile(r"WARNING:|BUG:|Oops|general protection|double fault|still in use|hung_task|soft lockup|rcu.*stall")


def script(seconds, reloads, params, dwell):
    # the kernel command line holds at most 2048 bytes (base64): keep it short
    return "\n".join([
        "cd /opt/rv/bin; rm -f /tmp/stop; t0=$(date +%s)",
        "L(){ k=0;f=0;while [ ! -e /tmp/stop ];do ./$2 >/tmp/o.$1 2>&1;grep -q RESULT /tmp/o.$1||"
        "{ f=$((f+1));echo \"FAIL $1\";tail -3 /tmp/o.$1;};k=$((k+1));done;echo \"DONE $1 runs=$k fails=$f\";}",
        "".join("L %s '%s'& " % (w, SMALL[w]) for w in WORKLOADS),
        "n=0;while [ $n -lt %d ]||[ $(($(date +%%s)-t0)) -lt %d ];do" % (reloads, seconds),
        " insmod /opt/rv/replayvm.ko %s||echo INSFAIL;sleep %s" % (params, dwell),
        " echo \"LOAD $n $(grep -E '^(blocks|entries_tr|kernel_time_tr|exc_rip_un)' /proc/replayvm|tr '\\n' ' ')\"",
        " rmmod replayvm||echo RMFAIL;n=$((n+1));sleep 1",
        "done",
        "echo RELOADS $n SECONDS $(($(date +%s)-t0))",
        "touch /tmp/stop;wait",
        "dmesg|grep 'switch-off'",
        "echo END",
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--vcpus", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--reloads", type=int, default=50)
    ap.add_argument("--params", default="dbt=1")
    ap.add_argument("--dwell", default="2", help="seconds between a load and its unload (default 2)")
    ap.add_argument("--timeout", type=int,
                    help="seconds for the whole boot (default: --seconds + 900 + 15 per reload; "
                         "a starved guest at nice 19 needs 25 s or more per reload)")
    ap.add_argument("--image", default=os.environ.get("RV_IMAGE", vmrun.IMAGE))
    ap.add_argument("--serial-log")
    a = ap.parse_args()
    r = vmrun.run(vcpus=a.vcpus, cmd=script(a.seconds, a.reloads, a.params, a.dwell),
                  timeout=a.timeout or a.seconds + 900 + 15 * a.reloads,
                  accel="tcg", image=a.image, serial_log=a.serial_log)
    out = r.output
    for line in out.splitlines():
        if line.startswith(("DONE", "FAIL", "RELOADS", "INSFAIL", "RMFAIL", "FINAL")) or "switch-off" in line:
            print(line)
    offs = re.findall(r"switch-off: (\d+) code-cache addresses on stacks made native, (\d+) retries"
                      r".*, (\d+) mid-instruction frames", out)
    print("switch-offs %d: %d retries, %d mid-instruction frames waited for" %
          (len(offs), sum(int(o[1]) for o in offs), sum(int(o[2]) for o in offs)))
    loads = [l for l in out.splitlines() if l.startswith("LOAD")]
    print("%d loads; first: %s" % (len(loads), loads[0] if loads else "-"))
    print("last: %s" % (loads[-1] if loads else "-"))
    bad = [l for l in r.console.splitlines() if BAD.search(l)]
    for l in bad[:20]:
        print("KERNEL: " + l)
    ok = (r.status == 0 and "END" in out and not bad and "FAIL" not in out
          and re.search(r"RELOADS (\d+)", out) and int(re.search(r"RELOADS (\d+)", out).group(1)) >= a.reloads)
    print("STRESS %s (status %d, %.0f s)" % ("PASS" if ok else "FAIL", r.status, r.seconds))
    if bad:
        # the first report with its trace: enough to tell where it happened
        lines = r.console.splitlines()
        first = next(i for i, l in enumerate(lines) if BAD.search(l))
        print("\n".join(lines[max(0, first - 5):first + 60]))
    elif not ok:
        print(r.console[-3000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
