#!/usr/bin/env python3
"""Page- vs byte-granular CREW, side by side (thesis Table 4.1, Fig. 4.8/4.9).

For each vCPU count the variants run interleaved, rep after rep, so that
load on a shared machine hits them alike:

  plain         unrecorded TCG (MTTCG), no guest module
  dbt           guest module loaded with identity translation (dbt=1)
  page-record   recording with page-granular CREW (softmmu TLB)
  page-replay   replay of that recording
  byte-record   recording with byte-granular CREW (guest module)
  byte-replay   replay of that recording

Each variant is one VM run of all the workloads in turn (each after its
own warm-up): a boot, and for byte CREW the module's first translations,
cost 15-55 s a run here, more than most workloads.  Time is a workload's
own runtime seen from the host: the arrival of the guest's "RVMARK start
NAME" and "RVMARK end NAME" console lines, the same clock for a plain run,
a recording and a replay.  Medians over the reps; ratios to plain.  From
the last recording of each kind, what the recorder wrote while the
workload ran (the log's size at its two marks; `replay-vm crew-stats
--file-bytes`): log growth MB/s, events, CREW transfers per second and,
for page-CREW, the false-sharing estimate.  The log size is the whole
recording's.

A variant that cannot run is reported, not hidden: byte-CREW recording is
refused by QEMU until the guest module provides it (issue 7), and its cells
say so ("n/a").  A run that fails is FAIL in its cell and the rest goes on;
its error (a replay's whole divergence report) is kept in reps.jsonl, and
a recording whose replay failed is moved to DIR/failed/.

Writes into --out DIR: results.csv, results.md (table + machine), and
fig_overhead.png (Fig. 4.8 style: runtime / plain per workload and variant,
one panel per vCPU count), fig_log.png (Fig. 4.9 style: log growth MB/s) and
fig_transfers.png (ownership transfers/s).

  bench/experiment.py --out bench/results/experiment       # full (hours)
  bench/experiment.py --quick --out /tmp/exp                # a few minutes

The full run takes hours on a small host (byte-CREW runs at 10-100x here),
so it can be accumulated: with --resume, rows already in DIR's results.csv
that have at least --reps reps and no failure are kept, and only the other
cells run (all of one vCPU count's missing workloads in one VM run per
variant).  Every finished rep is also appended to DIR/reps.jsonl, and
--resume reuses the reps there that the same QEMU build and image made
for those workloads, so a run stopped in the middle of a vCPU count loses
only the rep it was in.  To keep one build across sessions, copy the image and QEMU and
point RV_IMAGE and RV_QEMU at the copies.  Each row carries when it was measured and with which
QEMU build, tree and guest image (both taken when the run started: the
image holds the guest module), and results.md lists them, so a table
assembled over several runs says so.
"""
import argparse
import csv
import datetime
import hashlib
import json
import os
import platform
import shutil
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
from rr_overhead import fmt, parse_vcpus  # noqa: E402

# Table 4.1 workloads, sized for TCG on a small host (plain: 1-3 s at
# 2 vCPUs; ipc and socket are ping-pongs whose speed depends on where the
# scheduler puts the two ends, up to 10x between runs), each with a short warm-up run before the timed one (untimed, in
# every variant alike: the translator's code cache, the page cache)
WORKLOADS = {
    "read": ("read -n 15000", "read -n 500"),
    "readdir": ("readdir -f 100 -n 20000", "readdir -f 100 -n 50"),
    "ipc": ("ipc -n 60000", "ipc -n 2000"),
    "socket": ("socket -n 25000", "socket -n 500"),
    "forkwait": ("forkwait -n 1000", "forkwait -n 20"),
    "http": ("http -n 1000 -c 10", "http -n 50 -c 10"),
}
QUICK_WORKLOADS = {"read": ("read -n 2000", "read -n 100")}
# spans shorter than this are dominated by how fast console lines arrive
TOO_SHORT_S = 0.5
VARIANTS = ["plain", "dbt", "page-record", "page-replay", "byte-record", "byte-replay"]
BYTE_NA = "byte-CREW recording is not available (this QEMU refuses crew=byte: built without patch 0012?)"
COLUMNS = (["workload", "vcpus"] + ["%s_s" % v for v in VARIANTS] +
           ["%s_ratio" % v for v in VARIANTS if v != "plain"] +
           ["page_log_mb", "page_log_mb_per_s", "page_events", "page_transfers_per_s",
            "page_false_sharing", "byte_log_mb", "byte_log_mb_per_s", "byte_events", "byte_transfers_per_s",
            "reps", "failures", "not_available", "measured", "qemu", "tree", "image"])
INT_COLUMNS = {"vcpus", "reps", "page_events", "byte_events"}
TEXT_COLUMNS = {"workload", "failures", "not_available", "measured", "qemu", "tree", "image"}


class Failed(Exception):
    pass


def guest_cmd(works, dbt=False):
    """One VM run times every workload of @works in turn: its warm-up, then
    "RVMARK start NAME", the timed run, "RVMARK end NAME" ("RVMARK fail
    NAME" when it exits non-zero).  The run exits 0 only if all did."""
    body = "fail=0; "
    for name, (cmd, warm) in works:
        body += ("/opt/rv/bin/%s >/dev/null; echo RVMARK start %s; /opt/rv/bin/%s || "
                 "{ echo RVMARK fail %s; fail=1; }; echo RVMARK end %s; " % (warm, name, cmd, name, name))
    if dbt:
        return ("insmod /opt/rv/replayvm.ko dbt=1 || exit 90; " + body +
                "rmmod replayvm || exit 91; exit $fail")
    return body + "exit $fail"


def spans(marks, names, sizes=None):
    """-> {name: (seconds, log bytes at start, at end)} for the workloads
    whose start and end marks arrived and that did not fail."""
    at, failed = {}, set()
    for i, (t, line) in enumerate(marks):
        p = line.split()
        if len(p) < 3:
            continue
        if p[1] == "fail":
            failed.add(p[2])
        at[(p[1], p[2])] = (t, sizes[i] if sizes and i < len(sizes) else None)
    out = {}
    for n in names:
        if n in failed or ("start", n) not in at or ("end", n) not in at:
            continue
        (t0, b0), (t1, b1) = at[("start", n)], at[("end", n)]
        out[n] = (t1 - t0, b0, b1)
    return out


def run_plain(vcpus, works, timeout, dbt=False):
    r = vmrun.run(vcpus=vcpus, cmd=guest_cmd(works, dbt), accel="tcg", timeout=timeout)
    got = spans(r.marks, [n for n, _ in works])
    if r.status != 0 and not got:
        raise Failed("exit %d: %s" % (r.status, r.console[-300:]))
    return got


def run_record(vcpus, works, timeout, log, crew):
    """-> {name: (seconds, log size at start, at end)}"""
    r = vmrun.run(vcpus=vcpus, cmd=guest_cmd(works), accel="tcg", timeout=timeout, record=log,
                  crew=crew if vcpus > 1 or crew == "byte" else None)
    if r.status != 0:
        # the log of a failed recording is not replayed: every workload failed
        raise Failed("recording exit %d: %s" % (r.status, r.console[-300:]))
    return spans(r.marks, [n for n, _ in works], r.mark_log_bytes)


def run_replay(log, names, timeout):
    t0 = time.monotonic()
    p = subprocess.Popen([rrtest.REPLAY_VM, "--log", log, "--timeout", str(timeout), "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    clock = vmrun.MarkClock(t0)
    for line in iter(p.stdout.readline, b""):
        clock.feed(line)
    err = p.stderr.read().decode(errors="replace")
    if p.wait() != 0 or "REPLAY OK" not in err:
        # the whole divergence report, not just its last line
        raise Failed("replay: " + "\n".join(l for l in err.strip().splitlines()
                                            if not l.startswith("qemu-system"))[-3000:])
    return spans(clock.marks, names)


def log_stats(log, kind, span_s, b0, b1):
    """Of one workload in a recording of several: its log growth and CREW
    transfers are what the recorder wrote while the guest ran it, from the
    log's size when its start and end marks arrived (the recorder writes a
    chunk at least every 200 ms; `replay-vm crew-stats --file-bytes`)."""
    if b0 is None or b1 is None or not span_s:
        return {"log_mb": os.path.getsize(log) / 1e6}
    out = subprocess.run([rrtest.REPLAY_VM, "crew-stats", log, "--json", "--top", "0",
                          "--file-bytes", "%d:%d" % (b0, b1)], check=True, stdout=subprocess.PIPE)
    s = json.loads(out.stdout.decode())
    n = s["byte_transfers"] if kind == "byte" else s["transfers"]
    return {"log_mb": os.path.getsize(log) / 1e6, "log_mb_per_s": (b1 - b0) / 1e6 / span_s,
            "events": s["events"], "transfers_per_s": n / span_s,
            "false_sharing": s.get("false_sharing_share") if s.get("page_transfers") else None}


def byte_crew_available():
    """Does this QEMU accept crew=byte?  (It refuses at option parsing.)"""
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([vmrun.QEMU, "-rr", "record,log=%s/x.rr,crew=byte" % d, "-M", "none",
                            "-display", "none", "-nodefaults", "-S", "-qmp", "stdio"],
                           input=b'{"execute":"qmp_capabilities"}{"execute":"quit"}',
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return b"crew=byte" not in p.stderr


def run_rep(works, vcpus, rep, timeout, byte_ok, verbose, tmp, keep=None):
    """One rep of every variant, interleaved (a replay needs this rep's
    recording).  -> {variant: {"times": {name: s}, "stats": {name: {...}}}},
    with "error" where a variant failed: a workload missing from "times"
    failed in that variant.  A recording whose replay failed is moved into
    @keep/failed/ (when given), for replay-vm to look at."""
    names = [n for n, _ in works]
    logs = {"page": os.path.join(tmp, "page.rr"), "byte": os.path.join(tmp, "byte.rr")}
    out = {}
    for v in VARIANTS:
        kind = v.split("-")[0]
        if kind == "byte" and not byte_ok:
            continue
        stats = {}
        if v.endswith("replay") and not os.path.exists(logs[kind]):
            out[v] = {"times": {}, "stats": {}}
            continue
        if verbose:
            print("  %s, %d vCPU, rep %d: %s" % (" ".join(names), vcpus, rep + 1, v),
                  file=sys.stderr, flush=True)
        try:
            if v in ("plain", "dbt"):
                got = run_plain(vcpus, works, timeout, dbt=v == "dbt")
            elif v.endswith("record"):
                if os.path.exists(logs[kind]):
                    os.unlink(logs[kind])
                got = run_record(vcpus, works, timeout, logs[kind], kind)
                for n, (sec, b0, b1) in got.items():
                    stats[n] = log_stats(logs[kind], kind, sec, b0, b1)
            else:
                got = run_replay(logs[kind], names, timeout)
        except (Failed, subprocess.SubprocessError, OSError, ValueError, vmrun.SetupError) as e:
            print("  ! %s %d vCPU %s: %s" % (" ".join(names), vcpus, v, str(e)[-1500:]),
                  file=sys.stderr, flush=True)
            out[v] = {"times": {}, "stats": {}, "error": str(e)[-3000:]}
            if v.endswith("record") and os.path.exists(logs[kind]):
                os.unlink(logs[kind])
            if v.endswith("replay") and keep:
                os.makedirs(os.path.join(keep, "failed"), exist_ok=True)
                shutil.move(logs[kind], os.path.join(keep, "failed", "%dvcpu-rep%d-%s.rr" %
                                                     (vcpus, rep + 1, kind)))
            continue
        out[v] = {"times": {n: got[n][0] for n in names if n in got}, "stats": stats}
    return out


def rows_from(names, vcpus, reps_data, byte_ok, stamps=()):
    """Rows of @names from the reps' results (run_rep), medians over the
    reps; log statistics from the last rep that has them.  @stamps: each
    rep's provenance (when it was measured, from which tree); a row's
    "measured" spans them and its "tree" names them (reps taken from the
    journal may come from earlier runs)."""
    rows = {}
    for n in names:
        times = {v: [] for v in VARIANTS}
        fails, stats = set(), {}
        for rd in reps_data:
            for v in VARIANTS:
                if v not in rd:
                    continue
                if n in rd[v]["times"]:
                    times[v].append(rd[v]["times"][n])
                else:
                    fails.add(v)
                if n in rd[v]["stats"]:
                    stats[v.split("-")[0]] = rd[v]["stats"][n]
        row = {"workload": n, "vcpus": vcpus, "reps": len(reps_data), "failures": " ".join(sorted(fails)),
               "not_available": "" if byte_ok else "byte-record byte-replay"}
        row.update(provenance())
        if stamps:
            when = [st["measured"] for st in stamps]
            first, last = min(when), max(when)
            row["measured"] = first if first == last else "%s to %s" % (first, last)
            row["tree"] = "+".join(dict.fromkeys(st["tree"] for st in stamps))
        med = {v: statistics.median(t) if t else None for v, t in times.items()}
        for v in VARIANTS:
            row["%s_s" % v] = med[v]
            if v != "plain":
                row["%s_ratio" % v] = med[v] / med["plain"] if med[v] and med["plain"] else None
        for kind in ("page", "byte"):
            for k, val in stats.get(kind, {}).items():
                row["%s_%s" % (kind, k)] = val
        rows[n] = row
    return rows


def journal_reps(path, vcpus, names):
    """Reps of @names at @vcpus in the journal @path that this run's QEMU
    and image made, each as (its provenance, what run_rep returned),
    cut to @names (only reps that ran all of them)."""
    if not path or not os.path.exists(path):
        return []
    qemu = qemu_build()
    out = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            try:
                j = json.loads(line)
                if (j["vcpus"] != vcpus or j["qemu"] != qemu or j["image"] != RUN["image"] or
                        not set(names) <= set(j["workloads"])):
                    continue
                out.append(({"measured": j["measured"], "tree": j["tree"]},
                            {v: {"times": {n: t for n, t in d["times"].items() if n in names},
                                 "stats": {n: st for n, st in d["stats"].items() if n in names}}
                             for v, d in j["result"].items()}))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                print("experiment: %s line %d ignored: %s" % (path, i, e), file=sys.stderr)
    return out


def measure(works, vcpus, reps, timeout, byte_ok, verbose, journal=None):
    """The cells of @works at @vcpus: each variant is one VM run of all the
    workloads (a boot per workload cost more than most workloads here),
    variants interleaved rep after rep.  Each finished rep is appended to
    @journal (JSON lines), and reps already there from the same QEMU and
    image count: a run stopped in the middle of a vCPU count loses at most
    the rep it was in.  -> {name: row}"""
    names = [n for n, _ in works]
    done = journal_reps(journal, vcpus, names)[:reps]
    if done and verbose:
        print("  %s, %d vCPU: %d rep(s) from %s" % (" ".join(names), vcpus, len(done), journal),
              file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="rv-exp-") as tmp:
        for rep in range(len(done), reps):
            rd = run_rep(works, vcpus, rep, timeout * len(works), byte_ok, verbose, tmp,
                         os.path.dirname(journal) if journal else None)
            stamp = provenance()
            done.append((stamp, rd))
            if journal:
                with open(journal, "a") as f:
                    f.write(json.dumps(dict(stamp, vcpus=vcpus, workloads=names, rep=rep,
                                            result=rd)) + "\n")
    return rows_from(names, vcpus, [rd for _, rd in done], byte_ok, [st for st, _ in done])


def cell(row, v):
    if v.startswith("byte") and v in row["not_available"].split():
        return "n/a"
    t = row.get("%s_s" % v)
    txt = "-" if t is None else "%.2f" % t
    if t is not None and t < TOO_SHORT_S:
        txt += " (too short)"
    if v != "plain" and row.get("%s_ratio" % v) is not None:
        txt += " (%.2fx)" % row["%s_ratio" % v]
    if v in row["failures"].split():
        txt += " FAIL"
    return txt


def markdown(rows, machine):
    reps = sorted({r["reps"] for r in rows})
    out = ["Workload runtime in seconds (host clock between the guest's RVMARK lines; "
           "median of %s reps) and ratio to plain." % " or ".join(map(str, reps)), "",
           "| workload | vCPUs | " + " | ".join(VARIANTS) + " | page log MB/s | page transfers/s "
           "| page false sharing | byte log MB/s | byte transfers/s |",
           "|" + "---|" * (len(VARIANTS) + 7)]
    for r in rows:
        fs = r.get("page_false_sharing")
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            r["workload"], r["vcpus"], " | ".join(cell(r, v) for v in VARIANTS),
            fmt(r.get("page_log_mb_per_s"), "%.2f"),
            fmt(r.get("page_transfers_per_s") if r["vcpus"] > 1 else None, "%.0f"),
            "-" if fs is None else "%.0f%%" % (100 * fs),
            "n/a" if r["not_available"] else fmt(r.get("byte_log_mb_per_s"), "%.2f"),
            "n/a" if r["not_available"] else fmt(r.get("byte_transfers_per_s"), "%.0f")))
    out += ["", "Machine: " + ", ".join("%s %s" % kv for kv in machine.items())]
    out += ["", "Rows measured (a table kept with --resume comes from several runs):", ""]
    groups = {}
    for r in rows:
        groups.setdefault((r.get("qemu") or "?", r.get("tree") or "?", r.get("image") or "?"),
                          []).append(r)
    for (q, t, im), rs in groups.items():
        # a row's "measured" is a time, or "FIRST to LAST" over its reps
        when = sorted(w for r in rs for w in (r.get("measured") or "?").split(" to "))
        out.append("- %s (%s to %s): QEMU %s, tree %s, image %s" % (
            ", ".join("%s/%d" % (r["workload"], r["vcpus"]) for r in rs), when[0], when[-1], q, t, im))
    out += ["", "(too short): the timed span was under %.1f s, where how fast the console "
            "lines reach the host dominates; size the workload up." % TOO_SHORT_S]
    if any(r["not_available"] for r in rows):
        out += ["", "n/a: " + BYTE_NA + "."]
    return "\n".join(out) + "\n"


def plots(rows, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    vcpus = sorted({r["vcpus"] for r in rows})
    wls = list(dict.fromkeys(r["workload"] for r in rows))
    by = {(r["workload"], r["vcpus"]): r for r in rows}

    def bars(fname, series, ylabel, title, log=False):
        fig, axes = plt.subplots(1, len(vcpus), figsize=(5 * len(vcpus), 4), squeeze=False)
        width = 0.8 / len(series)
        for ax, n in zip(axes[0], vcpus):
            for i, (label, key) in enumerate(series):
                ys = [by.get((w, n), {}).get(key) or 0 for w in wls]
                ax.bar([x + i * width for x in range(len(wls))], ys, width, label=label)
            ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(wls))])
            ax.set_xticklabels(wls, rotation=30)
            ax.set_title("%s, %d vCPU%s" % (title, n, "s" if n > 1 else ""))
            ax.set_ylabel(ylabel)
            if log:
                ax.set_yscale("log")
            ax.grid(axis="y", alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, fname), dpi=90)
        plt.close(fig)

    bars("fig_overhead.png", [(v, "%s_ratio" % v) for v in VARIANTS if v != "plain"],
         "runtime / unrecorded", "Overhead (Fig. 4.8)")
    bars("fig_log.png", [("page-CREW", "page_log_mb_per_s"), ("byte-CREW", "byte_log_mb_per_s")],
         "log growth MB/s", "Log growth (Fig. 4.9)")
    bars("fig_transfers.png", [("page-CREW", "page_transfers_per_s"), ("byte-CREW", "byte_transfers_per_s")],
         "ownership transfers / s", "CREW transfers")


def tree_rev():
    try:
        p = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
        return p.stdout.decode().strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def qemu_build():
    ver = os.path.join(os.path.dirname(vmrun.QEMU), "VERSION")
    return open(ver).read().strip() if os.path.exists(ver) else "?"


def image_id():
    """The guest image's initramfs (kernel modules, guest module,
    workloads), sha256 cut to 12 digits."""
    try:
        with open(os.path.join(vmrun.IMAGE, "initramfs.cpio.gz"), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:12]
    except OSError:
        return "?"


# taken when the run starts: the tree may move on while it runs, and the
# image (which holds the guest module) is what was built before it
RUN = {}


def provenance():
    if not RUN:
        RUN.update(tree=tree_rev(), image=image_id())
    return {"measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "qemu": qemu_build(), "tree": RUN["tree"], "image": RUN["image"]}


def read_rows(path):
    """Rows of an earlier results.csv, typed as measure() makes them."""
    rows = []
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), 2):
            row = {}
            try:
                for k, v in r.items():
                    if k is None or k not in COLUMNS:
                        continue
                    if k in TEXT_COLUMNS:
                        row[k] = v or ""
                    elif v == "" or v is None:
                        row[k] = None
                    else:
                        row[k] = int(v) if k in INT_COLUMNS else float(v)
            except ValueError as e:
                raise SystemExit("experiment: %s line %d: %s" % (path, i, e))
            if not row.get("workload") or not row.get("vcpus"):
                raise SystemExit("experiment: %s line %d: no workload or vcpus" % (path, i))
            rows.append(row)
    return rows


def keepable(row, reps):
    """A finished cell: enough reps and nothing failed."""
    return (row.get("reps") or 0) >= reps and not row.get("failures")


def plan(cells, old, reps):
    """-> (rows to keep, cells to run).  Every requested cell appears once:
    kept from @old when finished, else run; finished rows of @old that were
    not requested are kept as well (results, not requested this time)."""
    done = {(r["workload"], r["vcpus"]): r for r in old if keepable(r, reps)}
    todo = [c for c in cells if c not in done]
    return list(done.values()), todo


def machine_info():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    now = provenance()
    # the run that wrote the report: with --resume its rows may have been
    # measured by earlier runs ("Rows measured" says when and from which tree)
    return {"report made": now["measured"], "host": platform.node(), "cpus": os.cpu_count(), "cpu": model,
            "load": "%.1f" % os.getloadavg()[0], "accel": "TCG (MTTCG)",
            "qemu": now["qemu"], "report tree": now["tree"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[2:]))
    ap.add_argument("--vcpus", type=parse_vcpus, help="vCPU counts (default 1,2,4; --quick 1,2)")
    ap.add_argument("--reps", type=int, help="repetitions (default 3; --quick 1)")
    ap.add_argument("--quick", action="store_true", help="read only, 1 and 2 vCPUs, 1 rep (checks the pipeline)")
    ap.add_argument("--timeout", type=int, default=900,
                    help="seconds per workload (a VM run of N workloads gets N times this; default 900)")
    ap.add_argument("--out", required=True, metavar="DIR", help="results folder")
    ap.add_argument("--resume", action="store_true",
                    help="keep finished rows of DIR/results.csv, run only the other cells")
    ap.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    ap.add_argument("workloads", nargs="*", help="subset of: " + ", ".join(WORKLOADS))
    a = ap.parse_args()
    provenance()        # pins the tree and image of this run
    table = QUICK_WORKLOADS if a.quick else WORKLOADS
    for w in a.workloads:
        if w not in table:
            ap.error("unknown workload %r (known: %s)" % (w, ", ".join(table)))
    wls = a.workloads or list(table)
    vcpus = a.vcpus or ([1, 2] if a.quick else [1, 2, 4])
    reps = a.reps or (1 if a.quick else 3)
    if reps < 1:
        ap.error("--reps must be >= 1")
    os.makedirs(a.out, exist_ok=True)
    csv_path = os.path.join(a.out, "results.csv")
    cells = [(w, n) for w in wls for n in vcpus]
    old = read_rows(csv_path) if a.resume and os.path.exists(csv_path) else []
    kept, todo = plan(cells, old, reps)
    if a.resume:
        print("experiment: %d cell(s) kept from %s, %d to run" % (len(kept), csv_path, len(todo)),
              file=sys.stderr, flush=True)
    byte_ok = byte_crew_available() if todo else True
    if not byte_ok:
        print("experiment: " + BYTE_NA + "; those columns are n/a", file=sys.stderr)
    machine = machine_info()
    fresh = {}

    def ordered():
        """requested cells in order, then kept rows not requested this time"""
        have = {(r["workload"], r["vcpus"]): r for r in kept}
        have.update(fresh)
        first = [have[c] for c in cells if c in have]
        return first + [r for c, r in have.items() if c not in cells]

    def write_csv():
        # rewritten whole after each cell (a temporary, then renamed): an
        # interrupted run leaves every finished cell for --resume
        with open(csv_path + ".tmp", "w", newline="") as f:
            cw = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
            cw.writeheader()
            for r in ordered():
                cw.writerow({k: ("%.4g" % v if isinstance(v, float) else ("" if v is None else v))
                             for k, v in r.items()})
        os.replace(csv_path + ".tmp", csv_path)

    def write_report():
        # after each vCPU count too: a run stopped later leaves a report
        # of what it finished
        rows = ordered()
        machine["load_end"] = "%.1f" % os.getloadavg()[0]
        with open(os.path.join(a.out, "results.md"), "w") as f:
            f.write(markdown(rows, machine))
        plots(rows, a.out)
        return rows

    journal = os.path.join(a.out, "reps.jsonl")
    if not a.resume:
        open(journal, "w").close()      # a fresh table: forget earlier reps
    write_csv()
    for n in vcpus:
        works = [(w, table[w]) for w, m in todo if m == n]
        if not works:
            continue
        for w, r in measure(works, n, reps, a.timeout, byte_ok, a.verbose, journal).items():
            fresh[(w, n)] = r
            print("%s %d vCPU: %s" % (w, n, "  ".join("%s %s" % (v, cell(r, v)) for v in VARIANTS)),
                  flush=True)
        write_csv()
        write_report()
    rows = write_report()
    print("experiment: results in %s (results.csv, results.md, fig_*.png)" % a.out)
    return 1 if any(r["failures"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
