#!/usr/bin/env python3
"""The kernel-intensive workloads recorded and replayed under nested KVM
(issue 10's degraded timing mode, no PMU), through replay-vm's patched
kvm-amd.

One L1 boot (TCG, SVM emulated, one L1 vCPU); in it, per workload and
repetition, interleaved: a plain L2 run, a recording, its replay.  A row
passes when the recording and the replay print the same RESULT line and
the replay's verdict is REPLAY OK.  Times are whole L2 runs (boot
included) inside an L1 that TCG emulates, so their ratios say how the
nested bench behaves, not what a real host would see; they are reported
because the brief wants numbers, not as a product figure.

  bench/nested_kvm_workloads.py --out bench/results/DATE-nested-kvm
  bench/nested_kvm_workloads.py --vcpus 2 --timescale 10 --limit 900

At 2 vCPUs (page CREW through the patched KVM's per-vCPU page rights)
the recording wants --timescale (qemu 0051, -rr record,timescale=N): the
guest's clocks then run N times slower than the host's, or its timer
ticks, each costing several page transfers of a millisecond nested, take
all its time and the boot never reaches the workload.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "vm-images"))
import nested  # noqa: E402
import vmrun  # noqa: E402

# small sizes: under nested KVM every exit crosses an emulated #VMEXIT
WORKLOADS = {
    "read": "read -n 500",
    "readdir": "readdir -f 100 -n 50",
    "ipc": "ipc -n 2000",
    "socket": "socket -n 500",
    "forkwait": "forkwait -n 20",
    "http": "http -n 50 -c 10",
    "racy_kernel": "racy_kernel -p 2 -n 200",
}

# one function per L2 run; NB lines carry the results out of L1
SCRIPT_HEAD = r'''
kvm_load || exit 1
L2_APPEND="$L2_APPEND tsc_early_khz=2000000 lpj=4000000"
now() { cut -d' ' -f1 /proc/uptime; }
one() {  # NAME VCPUS LIMIT CMD [QEMU ARGS]: NB NAME elapsed status RESULT-line
	name=$1 n=$2 lim=$3 c=$4; shift 4
	s=$(now)
	eval "timeout -s KILL $lim $(l2_argv "$n" "$c")" '"$@"' > /tmp/out.txt 2>&1
	st=$?
	echo "NB $name $(awk -v a=$s -v b=$(now) 'BEGIN{print b-a}') $st $(grep -a -m1 '^RESULT' /tmp/out.txt | tr ' ' ,)"
	grep -a -o -m1 -e 'REPLAY OK[^(]*' -e 'DIVERGENCE at event #[0-9]*' /tmp/out.txt | sed "s/^/NBV $name /"
}
'''

STEP = r'''
one plain:{w}:{r} {n} {lim} "/opt/rv/bin/{cmd} | tail -1"
one record:{w}:{r} {n} {lim} "/opt/rv/bin/{cmd} | tail -1" -rr record,log=/tmp/run.rr{ts}
echo "NBE record:{w}:{r} $(/opt/nested/bin/replay-vm info /tmp/run.rr 2>/dev/null | awk '/^events/ {{print $2}}') $(stat -c %s /tmp/run.rr)"
one replay:{w}:{r} {n} {lim} "/opt/rv/bin/{cmd} | tail -1" -rr replay,log=/tmp/run.rr
'''

COLUMNS = ["workload", "vcpus", "reps", "ok", "plain_s", "record_s", "replay_s",
           "record_over_plain", "replay_over_plain", "events", "log_bytes", "result",
           "failures"]


def script(workloads, vcpus, reps, limit, timescale=1):
    body = [SCRIPT_HEAD]
    ts = ",timescale=%d" % timescale if timescale > 1 else ""
    for w in workloads:
        for r in range(reps):
            body.append(STEP.format(w=w, r=r, n=vcpus, lim=limit, cmd=WORKLOADS[w], ts=ts))
    body.append('echo "NB done"\n')
    return "".join(body)


def parse(out, workloads, vcpus, reps):
    runs, verdicts, logs = {}, {}, {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "NB":
            runs[f[1]] = (float(f[2]), int(f[3]), f[4].replace(",", " ") if len(f) > 4 else "")
        elif len(f) >= 3 and f[0] == "NBV":
            verdicts[f[1]] = " ".join(f[2:])
        elif len(f) >= 2 and f[0] == "NBE":
            logs[f[1]] = f[2:]
    rows = []
    for w in workloads:
        t = {"plain": [], "record": [], "replay": []}
        fails, ok, events, size, result = [], 0, "", "", ""
        for r in range(reps):
            key = lambda v: "%s:%s:%d" % (v, w, r)  # noqa: E731
            missing = [v for v in t if key(v) not in runs]
            if missing:
                fails.append("rep %d: no %s run (L1 ended early)" % (r, "/".join(missing)))
                continue
            for v in t:
                t[v].append(runs[key(v)][0])
            rec, rep = runs[key("record")], runs[key("replay")]
            verdict = verdicts.get(key("replay"), "no verdict")
            if rec[1] or rep[1]:
                fails.append("rep %d: status record %d replay %d" % (r, rec[1], rep[1]))
            elif not rec[2] or rec[2] != rep[2]:
                fails.append("rep %d: RESULT record %r replay %r" % (r, rec[2], rep[2]))
            elif not verdict.startswith("REPLAY OK"):
                fails.append("rep %d: %s" % (r, verdict))
            else:
                ok += 1
            e = logs.get(key("record"), [])
            events, size = (e + ["", ""])[:2]
            result = rec[2]
        med = {v: statistics.median(x) if x else 0.0 for v, x in t.items()}
        ratio = lambda v: "%.2f" % (med[v] / med["plain"]) if med["plain"] else ""  # noqa: E731
        rows.append({"workload": w, "vcpus": vcpus, "reps": reps, "ok": ok,
                     "plain_s": "%.1f" % med["plain"], "record_s": "%.1f" % med["record"],
                     "replay_s": "%.1f" % med["replay"], "record_over_plain": ratio("record"),
                     "replay_over_plain": ratio("replay"), "events": events, "log_bytes": size,
                     "result": result, "failures": "; ".join(fails)})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog=__doc__.split("\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workloads", nargs="*", help="subset of: " + ", ".join(WORKLOADS))
    ap.add_argument("--vcpus", type=int, default=1, help="L2 vCPUs (2: page CREW in KVM)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--limit", type=int, default=400, help="seconds per L2 run")
    ap.add_argument("--timescale", type=int, default=1,
                    help="record with the guest's clocks N times slower (-rr timescale=N)")
    ap.add_argument("--kvm-dir", default=os.path.join(REPO, "build", "kvm"))
    ap.add_argument("--out", help="directory for results.csv, results.md, l1-output.txt")
    a = ap.parse_args()
    for w in a.workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %r (known: %s)" % (w, ", ".join(WORKLOADS)))
    wls = a.workloads or list(WORKLOADS)
    if a.reps < 1 or a.vcpus < 1:
        ap.error("--reps and --vcpus must be >= 1")
    subprocess.run([os.path.join(REPO, "kvm-patches", "build.sh"), a.kvm_dir], check=True)
    total = 300 + len(wls) * a.reps * 3 * a.limit
    r = nested.run(script(wls, a.vcpus, a.reps, a.limit, a.timescale), l1_vcpus=1, l1_mem=2048,
                   timeout=total, kvm_dir=a.kvm_dir)
    rows = parse(r.output, wls, a.vcpus, a.reps)
    md = ["timescale %d (record)" % a.timescale, "",
          "| workload | vCPUs | ok/reps | plain s | record s | replay s | record/plain "
          "| replay/plain | events | log bytes | failures |", "|" + "---|" * 11]
    for x in rows:
        md.append("| %s | %d | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            x["workload"], x["vcpus"], x["ok"], x["reps"], x["plain_s"], x["record_s"],
            x["replay_s"], x["record_over_plain"], x["replay_over_plain"], x["events"],
            x["log_bytes"], x["failures"] or "-"))
    print("\n".join(md))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
            wr = csv.DictWriter(f, COLUMNS)
            wr.writeheader()
            wr.writerows(rows)
        with open(os.path.join(a.out, "results.md"), "w") as f:
            f.write("\n".join(md) + "\n")
        with open(os.path.join(a.out, "l1-output.txt"), "w") as f:
            f.write(r.output)
    if "NB done" not in r.output:
        sys.stderr.write("L1 did not finish (status %d):\n%s\n" % (r.status, r.console[-3000:]))
        return 1
    return 0 if all(x["ok"] == x["reps"] for x in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
