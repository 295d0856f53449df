#!/usr/bin/env python3
"""Identity-translation overhead of the kernel DBT vs the native kernel.

One guest boot, same accelerator: for each repetition every workload runs
natively and translated (module loaded with dbt=1, after one untimed warm-up
pass that fills the code cache), in alternating order (ABBA).  Times are the
workloads' own elapsed-time lines; the table shows medians and their ratio.
--variant NAME='PARAMS' adds a translated variant with other module
parameters (each loaded on its own, in the same ABBA order), e.g. to
compare two translator settings against native in one boot.

--insns counts instead of timing: QEMU runs with the kinsns plugin
(bench/plugins/kinsns.c, `make plugins`), each workload run is bracketed by
the guest's `mark` program, and the table shows the kernel-mode
instructions a run took (median, millions) and their ratio to native: what
the translator adds on any accelerator, free of TCG's TB lookups and of
this host's noise.

  guest-module/bench_dbt.py --vcpus 2 --reps 3 read socket forkwait
  guest-module/bench_dbt.py --reps 4 --variant nosb='dbt=1 sb=0' socket
"""
import argparse
import os
import tempfile
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vm-images"))
import vmrun  # noqa: E402

PLUGIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "build", "plugins", "libkinsns.so")
DEFAULT = ["read", "readdir", "ipc", "socket", "forkwait", "http", "racy_kernel", "diskread"]
TIME = re.compile(r"^(\w+): (?:\d+ requests in )?([0-9.]+) s[,;( ]", re.M)


def guest_script(workloads, reps, variants, mark=False):
    """variants: (name, module parameters or None for native), run in
    this order on even repetitions and reversed on odd ones.  mark: each
    timed run between two runs of the kinsns marker."""
    mk = "./mark;" if mark else ""
    # the kernel command line holds at most 2048 bytes (base64): shell functions
    cmds = " ".join("'%s'" % vmrun.WORKLOADS[w] for w in workloads)
    lines = [
        "cd /opt/rv/bin",
        "R(){ m=$1;shift;echo \"BENCH $m ${1%% *}\";" + mk + "./$1 2>&1|grep -E ' s[,;( ]|^RESULT';" + mk + "}",
        "A(){ m=$1;shift;for c in \"$@\";do R $m \"$c\";done;}",
        "W(){ for c in \"$@\";do ./$c >/dev/null 2>&1;done;}",
        "OFF(){ grep -E '^(kernel_time|entries_tr|blocks)' /proc/replayvm;rmmod replayvm||echo BENCH-FAIL;}",
        # V name params|- workloads...: one variant's pass, the module loaded with params
        "V(){ v=$1;p=$2;shift 2;if [ \"$p\" = - ];then A $v \"$@\";"
        "else insmod /opt/rv/replayvm.ko $p||echo BENCH-FAIL;W \"$@\";A $v \"$@\";OFF;fi;}",
        "set -- " + cmds,
        "W \"$@\"",   # warm the page cache and the workloads' files natively first
    ]
    for r in range(reps):
        for name, params in (variants if r % 2 == 0 else variants[::-1]):
            lines.append("V %s '%s' \"$@\"" % (name, params or "-"))
    return "\n".join(lines)


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


KINSNS = re.compile(r"^KINSNS \d+ (\d+) \d+$", re.M)


def parse_insns(out, log):
    """Kernel instructions of each timed run: the console's BENCH lines in
    order, each with the difference between its pair of marks in the
    plugin's log."""
    runs = re.findall(r"^BENCH (\w+) (\w+)", out, re.M)
    marks = [int(k) for k in KINSNS.findall(log)]
    if len(marks) != 2 * len(runs):
        raise SystemExit("bench_dbt: %d marks in the plugin log for %d runs (want 2 a run)"
                         % (len(marks), len(runs)))
    counts = {}
    for i, key in enumerate(runs):
        counts.setdefault(key, []).append(marks[2 * i + 1] - marks[2 * i])
    return counts


def table(t, workloads, variants, unit, scale):
    """Medians per workload and variant, their ratio to native, geometric means."""
    names = [v for v, _ in variants[1:]]
    print("| workload | native %s | %s |" % (unit, " | ".join("%s %s | %s/native" % (v, unit, v) for v in names)))
    print("|---|---|" + "---|---|" * len(names))
    ratios = {v: [] for v in names}
    for w in workloads:
        n = t.get(("native", w))
        mn = statistics.median(n) if n else None
        row = ["%.3f" % (mn * scale) if n else "?"]
        for v in names:
            d = t.get((v, w))
            if not n or not d or not mn:
                row += ["?", "?"]
                continue
            md = statistics.median(d)
            ratios[v].append(md / mn)
            row += ["%.3f" % (md * scale), "%.2f" % (md / mn)]
        print("| %s | %s |" % (w, " | ".join(row)))
    for v in names:
        if ratios[v]:
            print("geometric mean %s/native: %.3f" % (v, statistics.geometric_mean(ratios[v])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--vcpus", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--image", default=os.environ.get("RV_IMAGE", vmrun.IMAGE))
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--serial-log")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PARAMS",
                    help="another translated variant: module parameters for insmod")
    ap.add_argument("--insns", action="store_true",
                    help="count kernel-mode instructions (kinsns plugin) instead of timing")
    ap.add_argument("workloads", nargs="*", default=DEFAULT)
    a = ap.parse_args()
    variants = [("native", None), ("dbt", "dbt=1")]
    for v in a.variant:
        name, sep, params = v.partition("=")
        if not sep or not re.fullmatch(r"\w+", name) or name in dict(variants) \
                or not re.fullmatch(r"[\w=, ]+", params):
            ap.error("--variant %r: want NAME='module parameters' with a new NAME" % v)
        if not re.search(r"\bdbt=", params):
            params = "dbt=1 " + params      # a translated variant, not native with the module in
        variants.append((name, params))
    extra = []
    if a.insns:
        if not os.path.exists(PLUGIN):
            ap.error("--insns: no %s (make plugins)" % PLUGIN)
        fd, log = tempfile.mkstemp(prefix="kinsns-", suffix=".log")
        os.close(fd)
        extra = ["-plugin", PLUGIN, "-d", "plugin", "-D", log]
    try:
        r = vmrun.run(vcpus=a.vcpus, cmd=guest_script(a.workloads, a.reps, variants, mark=a.insns),
                      timeout=a.timeout, accel="tcg", image=a.image, serial_log=a.serial_log,
                      extra=extra)
        plugin_log = ""
        if a.insns:
            with open(log) as f:
                plugin_log = f.read()
    finally:
        if a.insns:
            os.unlink(log)
    if r.status != 0 or "BENCH-FAIL" in r.output:
        print(r.console[-4000:])
        return 1
    if a.insns:
        t = parse_insns(r.output, plugin_log)
        print("vcpus=%d reps=%d (kernel-mode instructions per run, kinsns plugin, medians)" % (a.vcpus, a.reps))
        table(t, a.workloads, variants, "M insns", 1e-6)
    else:
        t = parse(r.output)
        print("vcpus=%d reps=%d (MTTCG, medians of the workloads' own timings)" % (a.vcpus, a.reps))
        table(t, a.workloads, variants, "s", 1)
    for line in r.output.splitlines():
        if line.startswith(("kernel_time", "entries_translated", "blocks")):
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
