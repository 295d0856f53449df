"""Training mode (issue 7, thesis 4.2.2): the host side.

A training run boots the guest with the module in training mode
(crew=train: every kernel memory access byte CREW would check is checked
against the shadow, no recording), runs workloads at several vCPUs and reads
/proc/replayvm_train: every executed instrumented instruction (native pc)
with its execution count, marked S when it touched a byte another vCPU
owned (a transfer a recording would log), P otherwise.

Files (text, one record per line, "# key value" header lines first):

  LIST        "# replayvm trained-pcs 1", the header, then one line per
              shared pc: "S <hex pc> <count> <sym+off/len>".  This is the
              input of a recording (vmrun.run(trained=LIST), `vm-images/run
              --trained LIST`): QEMU hands it to the guest as the fw_cfg
              file opt/replayvm/trained, the module instruments only these
              pcs.
  LIST.all    the same header and every executed pc, S and P lines: what
              merging and the coverage numbers are computed from.

Header keys: kernel-release, kernel-version, build-id (the guest module
refuses a list whose build-id is not its kernel's), kernel-sha256 (of the
image's vmlinuz; the host refuses a list made for another image before
booting), vcpus, runs, workloads, and the coverage numbers: executed-pcs,
accesses, shared-pcs, shared-accesses (see coverage()).
"""
import hashlib
import os
import re

MAGIC = "# replayvm trained-pcs 1"
HEADER_ORDER = ["kernel-release", "kernel-version", "build-id", "kernel-sha256", "vcpus", "runs",
                "workloads", "executed-pcs", "accesses", "shared-pcs", "shared-accesses"]
LINE = re.compile(r"^([SP]) ([0-9a-f]+) (\d+)(?: (.*))?$")


class ListError(Exception):
    pass


class TrainedList:
    def __init__(self, header=None, pcs=None):
        self.header = dict(header or {})
        # pc -> [shared (bool), count, symbol]
        self.pcs = dict(pcs or {})

    def shared(self):
        return sorted(pc for pc, (s, _, _) in self.pcs.items() if s)


def parse(text, strict=True):
    """A list or .all file; strict: a malformed data line is an error (a
    truncated last line is skipped either way)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != MAGIC:
        raise ListError("not a replayvm trained-pcs file (first line must be %r)" % MAGIC)
    t = TrainedList()
    truncated = not text.endswith("\n")
    for i, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        if line.startswith("# "):
            k, _, v = line[2:].partition(" ")
            t.header[k] = v
            continue
        m = LINE.match(line)
        if not m:
            if truncated and i == len(lines):
                continue
            if strict:
                raise ListError("line %d: %r is not 'S|P <hex pc> <count> [symbol]'" % (i, line))
            continue
        pc = int(m.group(2), 16)
        shared = m.group(1) == "S"
        old = t.pcs.get(pc)
        if old:
            old[0] = old[0] or shared
            old[1] += int(m.group(3))
        else:
            t.pcs[pc] = [shared, int(m.group(3)), m.group(4) or ""]
    if "build-id" not in t.header:
        raise ListError("no build-id in the header")
    return t


def load(path, strict=True):
    with open(path) as f:
        return parse(f.read(), strict=strict)


def coverage(t):
    """What the list covers, from the pcs it holds (a .all file: exact)."""
    acc = sum(c for _, c, _ in t.pcs.values())
    sacc = sum(c for s, c, _ in t.pcs.values() if s)
    return {
        "executed_pcs": len(t.pcs),
        "shared_pcs": sum(1 for s, _, _ in t.pcs.values() if s),
        "accesses": acc,
        "shared_accesses": sacc,
        "shared_access_share": sacc / acc if acc else 0.0,
    }


def _with_coverage(t):
    c = coverage(t)
    t.header.update({"executed-pcs": str(c["executed_pcs"]), "accesses": str(c["accesses"]),
                     "shared-pcs": str(c["shared_pcs"]),
                     "shared-accesses": str(c["shared_accesses"])})
    return t


def format(t, only_shared=True):
    out = [MAGIC]
    keys = [k for k in HEADER_ORDER if k in t.header] + \
        sorted(k for k in t.header if k not in HEADER_ORDER)
    out += ["# %s %s" % (k, t.header[k]) for k in keys]
    for pc in sorted(t.pcs):
        s, c, sym = t.pcs[pc]
        if s or not only_shared:
            out.append(("%s %x %d %s" % ("S" if s else "P", pc, c, sym)).rstrip())
    return "\n".join(out) + "\n"


def merge(lists):
    """Union: a pc is shared if any run found it shared; counts add up.  All
    lists must be for the same kernel build."""
    if not lists:
        raise ListError("nothing to merge")
    ids = {t.header.get("build-id") for t in lists}
    if len(ids) != 1:
        raise ListError("lists for different kernel builds: %s" % ", ".join(sorted(map(str, ids))))
    m = TrainedList(dict(lists[0].header))
    runs, workloads, vcpus = 0, [], set()
    for t in lists:
        for pc, (s, c, sym) in t.pcs.items():
            old = m.pcs.get(pc)
            if old:
                old[0] = old[0] or s
                old[1] += c
            else:
                m.pcs[pc] = [s, c, sym]
        runs += int(t.header.get("runs", "1"))
        workloads += [w for w in t.header.get("workloads", "").split(",") if w]
        vcpus |= {v for v in t.header.get("vcpus", "").split(",") if v}
    m.header["runs"] = str(runs)
    m.header["workloads"] = ",".join(workloads)
    m.header["vcpus"] = ",".join(sorted(vcpus, key=int)) if vcpus else ""
    return _with_coverage(m)


def save(t, path):
    """LIST (shared pcs) and LIST.all (every pc)."""
    _with_coverage(t)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    for p, only in ((path, True), (path + ".all", False)):
        tmp = p + ".tmp"
        with open(tmp, "w") as f:
            f.write(format(t, only_shared=only))
        os.replace(tmp, p)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def check_image(t, image_dir):
    """Refuse a list made for another kernel than the image's (before boot;
    the module checks the build id itself)."""
    vml = os.path.join(image_dir, "vmlinuz")
    want = t.header.get("kernel-sha256")
    if want and os.path.exists(vml) and sha256(vml) != want:
        kver = ""
        try:
            kver = open(os.path.join(image_dir, "KVER")).read().strip()
        except OSError:
            pass
        raise ListError("the trained list is for another kernel (%s, vmlinuz sha256 %s...); the image's "
                        "kernel is %s (sha256 %s...): train again for this kernel" %
                        (t.header.get("kernel-release", "?"), want[:12], kver or "?", sha256(vml)[:12]))


def default_path(image_dir):
    try:
        kver = open(os.path.join(image_dir, "KVER")).read().strip()
    except OSError:
        kver = "kernel"
    return os.path.join(os.path.dirname(os.path.abspath(image_dir)), "training", kver + ".pcs")


# ---- untrained accesses reported by a recording (debug console) ----------

UNTRAINED = re.compile(r"^RVUNTRAINED cpu=(\d+) pc=([0-9a-f]+) n=(\d+) (read|write)", re.M)
UNTRAINED_TOTAL = re.compile(r"^RVUNTRAINED-TOTAL cpu=(\d+) n=(\d+)", re.M)


def untrained_summary(text, symbolize=None):
    """From the module's debug-console lines: per pc the highest count seen
    (the module prints at the 1st, 2nd, 4th ... occurrence per vCPU, so a
    count is exact to within a factor of 2), the total as a lower bound."""
    per = {}
    for m in UNTRAINED.finditer(text):
        key = (int(m.group(1)), int(m.group(2), 16))
        per[key] = max(per.get(key, 0), int(m.group(3)))
    if not per:
        return None
    bypc = {}
    for (_, pc), n in per.items():
        bypc[pc] = bypc.get(pc, 0) + n
    totals = {}
    for m in UNTRAINED_TOTAL.finditer(text):
        totals[int(m.group(1))] = max(totals.get(int(m.group(1)), 0), int(m.group(2)))
    n = max(sum(totals.values()), sum(bypc.values()))
    top = sorted(bypc.items(), key=lambda kv: -kv[1])
    names = [(symbolize(pc) if symbolize else "%x" % pc) for pc, _ in top]
    return {"accesses": n, "pcs": len(bypc), "top": [(pc, c, nm) for (pc, c), nm in zip(top, names)]}


def untrained_line(summary, limit=8):
    return "UNTRAINED >=%d accesses at %d PCs: %s%s" % (
        summary["accesses"], summary["pcs"],
        " ".join("%s(%d)" % (nm, c) for _, c, nm in summary["top"][:limit]),
        " ..." if summary["pcs"] > limit else "")


class Symbols:
    """Kernel text symbols from build/image/kallsyms.txt (make symbols)."""
    def __init__(self, image_dir):
        self.addrs, self.names = [], []
        p = os.path.join(image_dir, "kallsyms.txt")
        if os.path.exists(p):
            rows = []
            with open(p) as f:
                for line in f:
                    w = line.split()      # "addr name" or "addr type name"
                    if len(w) >= 2 and (len(w) == 2 or w[1] in "tTwW"):
                        rows.append((int(w[0], 16), w[-1]))
            rows.sort()
            self.addrs = [a for a, _ in rows]
            self.names = [n for _, n in rows]

    def __call__(self, pc):
        import bisect
        i = bisect.bisect_right(self.addrs, pc) - 1
        if i < 0:
            return "%x" % pc
        return "%s+0x%x" % (self.names[i], pc - self.addrs[i])


# ---- a training run ---------------------------------------------------------

BEGIN, END = "RVTRAIN-BEGIN", "RVTRAIN-END"


def guest_export(text):
    """The list a training run printed (gzip | base64 between markers)."""
    import base64
    import gzip
    b = text.find(BEGIN + "\n")
    e = text.find("\n" + END, b)
    if b < 0 or e < 0:
        raise ListError("the training run printed no list (see its console)")
    raw = "".join(text[b + len(BEGIN) + 1:e].split())
    return parse(gzip.decompress(base64.b64decode(raw)).decode(errors="replace"))


def train(workloads, vcpus=2, image=None, timeout=1800, echo=False, serial_log=None):
    """One training boot: the workloads (vmrun.WORKLOADS names or "name args...")
    one after the other, then the module's list.  Returns a TrainedList."""
    import vmrun
    image = image or vmrun.IMAGE
    cmds, names = [], []
    for w in workloads:
        argv = w.split()
        cmds.append(vmrun.guest_command(argv[0], argv[1:]) + " >/dev/null")
        names.append(argv[0])
    cmd = "; ".join(cmds + ["echo %s" % BEGIN, "gzip -c /proc/replayvm_train | base64",
                            "echo %s" % END])
    r = vmrun.run(vcpus=vcpus, accel="tcg", cmd=cmd, crew="train", timeout=timeout, echo=echo,
                  serial_log=serial_log, image=image)
    if r.status != 0:
        raise ListError("training run failed (status %d):\n%s" % (r.status, r.console[-3000:]))
    t = guest_export(r.output)
    t.header["kernel-sha256"] = sha256(os.path.join(image, "vmlinuz"))
    t.header["vcpus"] = str(vcpus)
    t.header["runs"] = "1"
    t.header["workloads"] = ",".join(names)
    for k in ("instrumented-pcs", "slow-paths", "transfers", "table-full"):
        t.header.pop(k, None)        # per-run numbers that do not merge
    return _with_coverage(t)
