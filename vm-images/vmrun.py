"""Boot the replay-vm guest under QEMU, run one command, return its output.

Used by the `vm-images/run` CLI, the integration tests and the record/replay
front end.  The guest's init (vm-images/init) prints RV-BEGIN, the command's
output, then RV-EXIT <status>; everything else on the console is boot noise.
"""
import base64
import ctypes
import dataclasses
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# installed (make install): this runner sits in PREFIX/libexec/replay-vm
# beside the patched QEMU; the image is in PREFIX/share/replay-vm/image
INSTALLED = os.path.exists(os.path.join(HERE, "qemu-system-x86_64"))
if INSTALLED:
    _IMAGE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "share", "replay-vm", "image")
    _QEMU = os.path.join(HERE, "qemu-system-x86_64")
else:
    _IMAGE = os.path.join(REPO, "build", "image")
    _QEMU = os.path.join(REPO, "build", "qemu", "qemu-system-x86_64")
# RV_IMAGE=dir: another guest image (an A/B of two guest modules, say)
IMAGE = os.environ.get("RV_IMAGE") or _IMAGE
# RV_QEMU=path: another QEMU binary (a long benchmark kept on one build
# while the tree moves on; its VERSION file, if any, sits next to it)
QEMU = os.environ.get("RV_QEMU") or _QEMU

# default arguments of each workload: small enough for an emulated guest
WORKLOADS = {
    "read": "read -n 5000",
    "readdir": "readdir -f 100 -n 1000",
    "ipc": "ipc -n 50000",
    "socket": "socket -n 20000",
    "forkwait": "forkwait -n 500",
    "http": "http -n 1000 -c 10",
    "racy_counter": "racy_counter -n 5M -a 5000",
    "racy_kernel": "racy_kernel -n 1000",
    "tscrand": "tscrand",
    "diskread": "diskread",
    "netclient": "netclient",
}

EXIT_TIMEOUT = 124      # the guest did not finish in time
EXIT_NO_RESULT = 125    # the guest stopped without reporting a status
EXIT_SETUP = 126        # missing image/QEMU, bad arguments


class SetupError(Exception):
    pass


@dataclasses.dataclass
class Result:
    status: int             # workload exit status, or EXIT_TIMEOUT/EXIT_NO_RESULT
    output: str             # what the command printed (between the markers)
    console: str            # whole serial console
    qemu_status: int
    seconds: float
    argv: list
    marks: list = dataclasses.field(default_factory=list)  # (seconds, line) of RVMARK lines
    mark_log_bytes: list = dataclasses.field(default_factory=list)  # recording's size at each mark
    untrained: dict = None  # trained list: untrained accesses to shared bytes (training.untrained_summary)
    untrained_total: int = 0  # the same, counted by the module at the end (End.untrained_shared)


# QEMU 0021's warning at the end of a recording made with a trained list
UNTRAINED_END = re.compile(r"replay-vm: byte CREW: (\d+) access\(es\) by instructions not in the trained list[^\n]*")
# QEMU 0058: threads of one process ran user code at once under byte CREW
USER_SHARED = re.compile(r"replay-vm: byte CREW: user space was not share-nothing[^\n]*")


class MarkClock:
    """Host arrival time of the guest's "RVMARK ..." console lines, so that a
    benchmark can time the workload itself (boot excluded) the same way in
    a plain run, a recording and a replay."""
    def __init__(self, t0, watch=None):
        # watch: a file (the log being recorded) whose size is noted at
        # every mark, in sizes[], for log growth during the workload
        self.t0, self.partial, self.marks, self.watch, self.sizes = t0, b"", [], watch, []

    def feed(self, data):
        now = time.monotonic() - self.t0
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for l in lines:
            l = l.decode(errors="replace").strip()
            if l.startswith("RVMARK"):
                self.marks.append((now, l))
                if self.watch:
                    try:
                        self.sizes.append(os.path.getsize(self.watch))
                    except OSError:
                        self.sizes.append(None)


def hw_kvm_available():
    """/dev/kvm backed by VMX/SVM (a paravirtual KVM cannot boot our guest)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = re.search(r"^flags\s*:(.*)$", f.read(), re.M)
        return bool(flags) and bool({"vmx", "svm"} & set(flags.group(1).split()))
    except OSError:
        return False


def guest_command(workload=None, args=(), binary=None, cmd=None):
    if cmd:
        return cmd
    if binary:
        return shlex.join(["/opt/user/" + os.path.basename(binary)] + list(args))
    if workload:
        if workload not in WORKLOADS:
            raise SetupError("unknown workload %r (known: %s)" % (workload, ", ".join(sorted(WORKLOADS))))
        # absolute path: "read" is also a shell builtin
        argv = WORKLOADS[workload].split()
        return shlex.join(["/opt/rv/bin/" + argv[0]] + argv[1:] + list(args))
    return "uname -a"


WORKLOAD_STATUS = re.compile(r"^WORKLOAD-STATUS (\S+) (\d+)$", re.M)


def workloads_in_turn(workloads):
    """One guest command running each (workload, args) in turn, each
    followed by a "WORKLOAD-STATUS name status" line (workload_status):
    tests share one boot between workloads, which cost less than it."""
    return "; ".join("%s; echo WORKLOAD-STATUS %s $?" % (guest_command(name, args), name)
                     for name, args in workloads)


def workload_status(output):
    """{workload: exit status} from the output of workloads_in_turn's command."""
    return {name: int(st) for name, st in WORKLOAD_STATUS.findall(output)}


def static_binary(src, exe, flags=()):
    """Compile a test program for the guest (run(binary=...)): static,
    since the image has no C library of the host's version."""
    subprocess.run(["gcc", "-static", "-O2", *flags, "-o", str(exe), str(src)], check=True)
    return str(exe)


def user_initrd(base, binary, tmpdir, out=None):
    """The base initramfs followed by a second cpio holding the user's program
    (the kernel unpacks concatenated archives in order), written to out
    (default: in tmpdir)."""
    if not os.path.isfile(binary):
        raise SetupError("--binary %s: no such file" % binary)
    stage = os.path.join(tmpdir, "user")
    os.makedirs(os.path.join(stage, "opt", "user"))
    dst = os.path.join(stage, "opt", "user", os.path.basename(binary))
    shutil.copy(binary, dst)
    os.chmod(dst, 0o755)
    extra = os.path.join(tmpdir, "user.cpio")
    with open(extra, "wb") as f:
        subprocess.run("find . | sort | cpio -o -H newc --owner 0:0 --quiet", shell=True,
                       cwd=stage, stdout=f, check=True)
    out = out or os.path.join(tmpdir, "initrd")
    with open(out, "wb") as f:
        for part in (base, extra):
            with open(part, "rb") as p:
                shutil.copyfileobj(p, f)
            # cpio archives are concatenated on 4-byte boundaries
            f.write(b"\0" * (-f.tell() % 4))
    return out


def kernel_file(image):
    """The image's uncompressed vmlinux (PVH boot, no decompression in the
    guest) where the image has one, else its vmlinuz (older images)."""
    vmlinux = os.path.join(image, "vmlinux")
    return vmlinux if os.path.isfile(vmlinux) else os.path.join(image, "vmlinuz")


def qemu_argv(vcpus=1, mem=512, accel="tcg", image=IMAGE, qemu=QEMU, command="uname -a",
              initrd=None, module=False, net=True, disk=True, extra=(), append_extra="", cpu=None,
              monitor=None):
    for p in (qemu,):
        if not os.access(p, os.X_OK):
            raise SetupError("QEMU not built: %s missing (run 'make qemu')" % p)
    for f in ("vmlinuz", "initramfs.cpio.gz", "data.img"):
        if not os.path.isfile(os.path.join(image, f)):
            raise SetupError("guest image incomplete: %s missing (run 'make image')" % os.path.join(image, f))
    enc = base64.b64encode(command.encode()).decode()
    append = ("console=ttyS0 loglevel=4 panic=-1 oops=panic nokaslr nopti mitigations=off nmi_watchdog=0 "
              "tsc=reliable no_timer_check rv.cmd=%s" % enc)
    if module:
        append += " rv.module=1"
    if append_extra:
        append += " " + append_extra
    argv = [qemu, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios",
            "-M", "pc", "-m", str(mem), "-smp", str(vcpus),
            "-display", "none", "-serial", "stdio", "-no-reboot",
            "-monitor", "unix:%s,server=on,wait=off" % monitor if monitor else "none",
            "-kernel", kernel_file(image),
            "-initrd", initrd or os.path.join(image, "initramfs.cpio.gz"),
            "-append", append]
    if accel == "kvm":
        argv += ["-accel", "kvm", "-cpu", "host"]
    else:
        argv += ["-accel", "tcg,thread=multi", "-cpu", cpu or "qemu64,+rdrand"]
    if disk:
        argv += ["-drive", "file=%s,if=virtio,format=raw,snapshot=on" % os.path.join(image, "data.img")]
    if net:
        argv += ["-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0,romfile="]
    else:
        argv += ["-nic", "none"]
    return argv + list(extra)


# Byte-granular CREW: the guest gets 1 GiB; the kernel uses the low 480 MiB
# (mem=), the 480 MiB from 512 MiB are its module's shadow memory (one owner
# byte per byte of kernel RAM; the gap below is where its mapping starts, see
# guest-module/crew/byte.c), the top keeps the firmware's ACPI tables.  The
# module loads at boot with translation and byte CREW on.
BYTE_MEM = 1024
BYTE_SHADOW = "mem=480M"
# vdso=0: after the switch user accesses are not ordered against the
# kernel's, and the vDSO's clock_gettime reads the vvar page that another
# vCPU's timekeeping writes: its seqlock retries (and the rdtsc values it
# logs) would differ between record and replay.  Without a vDSO, libc's
# clock calls are system calls, ordered like any other kernel access.
BYTE_NO_VDSO = "vdso=0"
BYTE_MODPARAMS = "rv.modparams=dbt=1,crew=byte,shadow_base=0x20000000,shadow_size=0x1e000000"


def byte_crew_args(kw, mode="byte", params=()):
    """RV_BYTE_EXTRA (environment, read now): more guest-module parameters,
    comma-separated (debugging and tests, e.g. bdebug=32).  mode "train":
    the module's training mode (same memory layout, no recording host)."""
    extra = ",".join([p for p in params] +
                     [p for p in os.environ.get("RV_BYTE_EXTRA", "").split(",") if p])
    modparams = BYTE_MODPARAMS.replace("crew=byte", "crew=" + mode)
    kw["mem"] = BYTE_MEM
    kw["module"] = True
    kw["append_extra"] = " ".join(x for x in (kw.get("append_extra", ""), BYTE_SHADOW, BYTE_NO_VDSO,
                                              modparams + ("," + extra if extra else ""))
                                  if x)


def hung_vcpus(monitor, image=IMAGE, wait=5.0):
    """Where each vCPU of a VM that ran out of time was: stops it through the
    HMP socket, asks for its registers and the top of each running kernel
    stack, so that a hang in CI names a place (kernel text is symbolized;
    anything else in the kernel half is a module or the guest module's code
    cache)."""
    import socket

    def ask(s, cmd, until):
        s.sendall(cmd.encode() + b"\n")
        out, end = b"", time.monotonic() + wait
        while time.monotonic() < end and until not in out[len(cmd):]:
            try:
                data = s.recv(65536)
            except socket.timeout:
                continue
            if not data:
                break
            out += data
        return out.decode(errors="replace")

    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1.0)
        s.connect(monitor)
        ask(s, "stop", b"(qemu)")
        regs = ask(s, "info registers -a", b"(qemu)")
        cpus = parse_registers(regs)
        for c in cpus:
            if c["cpl"] == 0 and not c["halted"] and c["long"]:
                ask(s, "cpu %d" % c["index"], b"(qemu)")
                c["stack"] = [int(w, 16) for w in re.findall(
                    r"0x([0-9a-f]{16})", ask(s, "x/32gx 0x%x" % c["rsp"], b"(qemu)").split(":", 1)[-1])]
        s.close()
    except OSError as e:
        return "  (no registers: monitor %s: %s)\n" % (monitor, e)
    return describe_vcpus(cpus, image)


def qemu_threads(pid, timeout=90):
    """Where QEMU's own threads are, for a VM that ran out of time (taken
    before the monitor stops it): a hang in QEMU (a blocked main loop
    answers no monitor) or a vCPU thread that stays in one place.  A short
    gdb backtrace of each thread, else each thread's name and wait channel."""
    gdb = shutil.which("gdb")
    if gdb:
        try:
            out = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx",
                                  "-ex", "set pagination off", "-ex", "thread apply all bt 14"],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=timeout).stdout
            text = compact_backtraces(out)
            if text:
                return text
        except (OSError, subprocess.TimeoutExpired):
            pass
    lines = []
    try:
        tasks = sorted(os.listdir("/proc/%d/task" % pid), key=int)
    except OSError as e:
        return "  (no threads: %s)\n" % e
    for t in tasks:
        try:
            base = "/proc/%d/task/%s/" % (pid, t)
            lines.append("  %s %s: %s\n" % (t, open(base + "comm").read().strip(),
                                           open(base + "wchan").read().strip() or "running"))
        except OSError:
            pass
    return "".join(lines)


def compact_backtraces(gdb_out):
    """gdb's 'thread apply all bt', one line per thread (innermost first):
    C library frames dropped, so that the console's tail shows every thread."""
    threads = []
    for line in gdb_out.splitlines():
        t = re.match(r"Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)", line)
        if t:
            threads.append([t.group(1)])
            continue
        f = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*?\)(?: at (\S+))?", line)
        if f and threads and f.group(2) and not f.group(2).startswith(("./", "../sysdeps", "/usr")):
            where = f.group(2).replace("../", "")
            threads[-1].append(f.group(1) if len(threads[-1]) > 1 else
                               "%s (%s)" % (f.group(1), where))
    return "".join("  LWP %s: %s\n" % (t[0], " < ".join(t[1:])) for t in threads)


def parse_registers(text):
    """vCPUs from HMP 'info registers -a' output.  A vCPU outside 64-bit
    mode shows EIP/ESP (firmware; or, in a nested L1, the L2 guest it runs,
    whose state is the vCPU's while in SVM guest mode): long is False."""
    cpus = []
    for block in re.split(r"^\s*CPU#", text, flags=re.M)[1:]:
        m = re.search(r"([RE])IP=([0-9a-f]+) .*CPL=(\d)(?:.* HLT=(\d))?", block)
        r = re.search(r"[RE]SP=([0-9a-f]+)", block)
        if m and r:
            cpus.append({"index": int(re.match(r"\d+", block).group(0)), "rip": int(m.group(2), 16),
                         "cpl": int(m.group(3)), "halted": m.group(4) == "1",
                         "rsp": int(r.group(1), 16), "stack": [], "long": m.group(1) == "R"})
    return cpus


def describe_vcpus(cpus, image=IMAGE):
    """One line per vCPU, then the kernel-text words on its stack (a rough
    backtrace, newest first)."""
    import training
    sym = training.Symbols(image)
    modules = 0xffffffffa0000000        # x86-64 module space: modules, the code cache

    def in_text(a):
        return bool(sym.addrs) and sym.addrs[0] <= a < modules

    lines = []
    for c in cpus:
        rip = c["rip"]
        place = "not in 64-bit mode" if not c["long"] else \
            "user" if c["cpl"] == 3 else sym(rip) if in_text(rip) else \
            "module or code cache" if rip >= modules else "?"
        lines.append("  CPU#%d RIP=%x (%s)%s" % (c["index"], rip, place,
                                                 " halted" if c["halted"] else ""))
        text = [sym(w) for w in c["stack"] if in_text(w)]
        if text:
            lines.append("    stack: " + " < ".join(text[:12]))
    return "".join(l + "\n" for l in lines) or "  (no registers in the monitor's answer)\n"


def parse_console(console):
    begin = console.find("RV-BEGIN\n")
    m = None
    for m in re.finditer(r"^RV-EXIT (\d+)\s*$", console, re.M):
        pass
    if begin < 0 or m is None:
        return None, console[begin + 9:] if begin >= 0 else ""
    return int(m.group(1)), console[begin + 9:m.start()]


_prctl = ctypes.CDLL(None, use_errno=True).prctl
PR_SET_PDEATHSIG = 1


def _die_with_runner():
    """In QEMU's child before exec: QEMU runs in its own session (so the
    runner's timeout can kill its threads' group), which a runner killed
    outright (timeout(1), kill -9) does not reach; QEMU then ran on for
    hours.  SIGTERM when the runner dies: a recording ends with its log
    closed, as on `virsh destroy`."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def run(vcpus=1, workload=None, args=(), binary=None, cmd=None, timeout=300, accel="auto",
        serial_log=None, echo=False, record=None, crew=None, trained=None, untrained_report=False,
        **kw):
    """record=PATH: record the run into PATH (replay it with `replay-vm --log PATH`);
    crew: the CREW mode of a multi-vCPU recording: "page", or "byte" (the guest
    module's byte-granular CREW: see byte_crew_args; user space must share
    nothing), or "byte+user" (byte CREW, and page CREW for every access to
    a user address: QEMU's user=page), or "train" (no
    recording: the module's training mode, vm-images/training.py).
    trained=LIST (crew="byte"): record with a trained list (training.py): the
    guest gets it as the fw_cfg file opt/replayvm/trained and instruments only
    its pcs; untrained accesses to shared bytes come back in Result.untrained
    (and a "vmrun: warning: UNTRAINED ..." line at the end of the console),
    from the module's debug console, kept in RECORD.untrained) when
    untrained_report (the module's untrained_report=1: such a recording may
    not replay, see guest-module/crew/train.c)."""
    if accel == "auto":
        accel = "kvm" if hw_kvm_available() else "tcg"
    env = dict(os.environ)
    untrained_file = None
    if trained:
        import training
        if crew != "byte" or not record:
            raise SetupError("a trained list is for byte-CREW recordings (crew=byte, record=LOG)")
        try:
            training.check_image(training.load(trained, strict=False), kw.get("image", IMAGE))
        except (OSError, training.ListError) as e:
            raise SetupError("trained list %s: %s" % (trained, e))
        kw["extra"] = list(kw.get("extra", ())) + [
            "-fw_cfg", "name=opt/replayvm/trained,file=%s" % os.path.abspath(trained)]
        if untrained_report:
            untrained_file = os.path.abspath(record) + ".untrained"
            if os.path.exists(untrained_file):
                os.unlink(untrained_file)
            kw["extra"] += ["-debugcon", "file:%s" % untrained_file]
    if crew == "train":
        if record:
            raise SetupError("training runs are not recorded")
        byte_crew_args(kw, mode="train")
    if record:
        if accel != "tcg":
            raise SetupError("recording runs under TCG (the KVM backend is not built yet)")
        rr = "record,log=%s" % os.path.abspath(record)
        if crew == "byte+user":
            # byte CREW for the kernel's memory, page CREW for user addresses
            rr += ",crew=byte,user=page"
        elif crew:
            rr += ",crew=%s" % crew
        if crew in ("byte", "byte+user"):
            byte_crew_args(kw, params=(["trained=1"] if trained else []) +
                           (["untrained_report=1"] if untrained_report else []))
        kw["extra"] = list(kw.get("extra", ())) + ["-rr", rr]
        version = os.path.join(os.path.dirname(kw.get("qemu", QEMU)), "VERSION")
        if os.path.exists(version):
            env["RRVM_SERIES"] = open(version).read().strip()
    command = guest_command(workload, args, binary, cmd)
    with tempfile.TemporaryDirectory(prefix="rv-run-") as tmp:
        initrd = kw.pop("initrd", None)
        if binary:
            # a recording's replay needs this initrd: it is kept beside the
            # log (replay-vm looks there when the log has moved)
            initrd = user_initrd(os.path.join(kw.get("image", IMAGE), "initramfs.cpio.gz"), binary, tmp,
                                 out=os.path.abspath(record) + ".initrd" if record else None)
        monitor = os.path.join(tmp, "hmp")
        argv = qemu_argv(vcpus=vcpus, accel=accel, command=command, initrd=initrd,
                         monitor=monitor, **kw)
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True, env=env,
                             preexec_fn=_die_with_runner)
        chunks, timed_out = [], False
        clock = MarkClock(t0, watch=os.path.abspath(record) if record else None)
        os.set_blocking(p.stdout.fileno(), False)
        while True:
            data = p.stdout.read()
            if data:
                chunks.append(data)
                clock.feed(data)
                if echo:
                    sys.stderr.write(data.decode(errors="replace"))
                    sys.stderr.flush()
            if p.poll() is not None:
                rest = p.stdout.read()
                if rest:
                    chunks.append(rest)
                break
            if time.monotonic() - t0 > timeout:
                timed_out = True
                # QEMU's threads first: the monitor's stop moves them
                threads = qemu_threads(p.pid)
                hung = hung_vcpus(monitor, kw.get("image", IMAGE)) + "QEMU's threads:\n" + threads
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                break
            select.select([p.stdout], [], [], 0.05)     # wake on output (RVMARK times)
        seconds = time.monotonic() - t0
        console = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
        if serial_log:
            with open(serial_log, "w") as f:
                f.write(console)
        status, output = parse_console(console)
        if timed_out:
            status = EXIT_TIMEOUT
            console += "vmrun: timed out after %d s; where the vCPUs were:\n%s" % (timeout, hung)
        elif status is None:
            status = EXIT_NO_RESULT
        if crew in ("byte", "byte+user", "train") and "replayvm.ko failed to load" in console:
            # the VM ran on under page CREW: not the recording that was asked for
            console += "vmrun: crew=%s, but the guest module did not load (see above)\n" % crew
            status = EXIT_SETUP
        untrained = None
        if untrained_file and os.path.exists(untrained_file):
            import training
            with open(untrained_file, errors="replace") as f:
                untrained = training.untrained_summary(
                    f.read(), training.Symbols(kw.get("image", IMAGE)))
            if untrained:
                console += "vmrun: warning: %s (a replay may diverge; retrain with these workloads)\n" % \
                    training.untrained_line(untrained)
        m = UNTRAINED_END.search(console)
        return Result(status, output, console, p.returncode, seconds, argv, clock.marks,
                      clock.sizes, untrained, int(m.group(1)) if m else 0)
