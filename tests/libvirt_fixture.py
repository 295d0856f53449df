"""A private, privileged libvirtd for the tests (no systemd, nothing set up by hand).

libvirt 9.0's privileged daemon has fixed paths (/etc/libvirt, /run/libvirt,
/var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt).  The daemon runs in
its own mount namespace (unshare -m) where those paths are bind mounts of
directories under a temporary root, so it reads our qemu.conf and never
touches a system libvirt's files, domains or socket.  The socket is then
outside the namespace at ROOT/run/libvirt-sock, and virsh reaches it with
qemu:///system?socket=ROOT/run/libvirt-sock.

qemu.conf: QEMU runs as root with no security driver, no ownership changes
(the images must stay byte-identical for the replay's SHA-256 check), no
cgroups (none usable in a container) and its stdout/stderr written to a
plain file (no virtlogd).
"""
import os
import shutil
import signal
import subprocess
import time

import pytest

import vmrun

LIBVIRTD_CONF = """\
unix_sock_group = "root"
unix_sock_rw_perms = "0700"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
"""

QEMU_CONF = """\
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
stdio_handler = "file"
namespaces = [ ]
"""

# system path -> directory under the private root
MOUNTS = (("/etc/libvirt", "etc"), ("/run/libvirt", "run"), ("/var/lib/libvirt", "lib"),
          ("/var/log/libvirt", "log"), ("/var/cache/libvirt", "cache"))

NS_SCRIPT = """set -e
root=$1
while [ $# -gt 1 ]; do shift; mkdir -p "${1%%:*}"; mount --bind "$root/${1#*:}" "${1%%:*}"; done
exec libvirtd --config /etc/libvirt/libvirtd.conf --pid-file /run/libvirt/libvirtd.pid
"""


class Libvirtd:
    def __init__(self, root):
        self.root = str(root)
        self.sock = os.path.join(self.root, "run", "libvirt-sock")
        self.uri = "qemu:///system?socket=" + self.sock
        self.proc = None

    def unavailable(self):
        """Why this machine cannot run it, or None."""
        for tool in ("libvirtd", "virsh", "unshare"):
            if not shutil.which(tool):
                return "%s is not installed (make deps: libvirt-daemon-system, libvirt-clients)" % tool
        if os.geteuid() != 0:
            return "a privileged libvirtd needs root"
        if subprocess.run(["unshare", "-m", "true"], stderr=subprocess.DEVNULL).returncode:
            return "no mount namespaces here (unshare -m failed)"
        return None

    def start(self, timeout=60):
        for _, sub in MOUNTS:
            os.makedirs(os.path.join(self.root, sub), exist_ok=True)
        with open(os.path.join(self.root, "etc", "libvirtd.conf"), "w") as f:
            f.write(LIBVIRTD_CONF)
        with open(os.path.join(self.root, "etc", "qemu.conf"), "w") as f:
            f.write(QEMU_CONF)
        out = open(os.path.join(self.root, "daemon.out"), "wb")
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", NS_SCRIPT, "libvirt-ns",
             self.root] + ["%s:%s" % m for m in MOUNTS],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("libvirtd exited (%d): %s" % (self.proc.returncode, self.log_tail()))
            if os.path.exists(self.sock) and self.virsh("list", check=False).returncode == 0:
                return self
            time.sleep(0.2)
        raise RuntimeError("libvirtd did not answer in %d s: %s" % (timeout, self.log_tail()))

    def virsh(self, *args, check=True, timeout=120):
        p = subprocess.run(["virsh", "-q", "-c", self.uri] + [str(a) for a in args],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
        if check and p.returncode:
            raise RuntimeError("virsh %s failed (%d): %s%s" % (" ".join(map(str, args)), p.returncode,
                                                                p.stderr, self.log_tail()))
        return p

    def state(self, name):
        return self.virsh("domstate", name).stdout.strip()

    def wait_state(self, name, state, timeout, console=None):
        """console: the domain's console file, whose tail the error shows
        (where a guest that never got there stopped)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.state(name) == state:
                return time.monotonic() - t0
            time.sleep(0.25)
        raise AssertionError("domain %s not '%s' after %d s (it is '%s')%s" % (
            name, state, timeout, self.state(name), self.diagnose(name, console)))

    def diagnose(self, name, console=None):
        """What a domain that never got somewhere shows: its console tail,
        libvirt's QEMU log, each vCPU's registers (if the monitor answers)
        and each QEMU thread's backtrace."""
        text = ""
        if console:
            try:
                with open(console, errors="replace") as f:
                    text = "\n--- console tail:\n" + f.read()[-3000:]
            except OSError as e:
                text = "\n--- no console: %s" % e
        text += "\n--- qemu log tail:\n" + self.qemu_log(name)[-2000:]
        try:
            p = self.virsh("qemu-monitor-command", "--hmp", name, "info registers -a",
                           check=False, timeout=30)
            cpus = vmrun.parse_registers(p.stdout)
            text += "\n--- vcpus:\n" + (vmrun.describe_vcpus(cpus) if cpus
                                         else p.stdout[-1500:] + p.stderr[-500:])
        except subprocess.TimeoutExpired:
            text += "\n--- vcpus: the monitor did not answer in 30 s"
        return text + self.qemu_threads(name)

    def qemu_threads(self, name):
        """Where the domain's QEMU threads are: what a hung recording waits on."""
        try:
            return "\n--- qemu threads:\n" + vmrun.qemu_threads(self.qemu_pid(name))
        except (OSError, ValueError) as e:
            return "\n--- no qemu pid: %s" % e

    def qemu_pid(self, name):
        with open(os.path.join(self.root, "run", "qemu", name + ".pid")) as f:
            return int(f.read())

    def qemu_log(self, name):
        """What libvirt saved of the domain's QEMU (command line, stderr)."""
        try:
            with open(os.path.join(self.root, "log", "qemu", name + ".log")) as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=3000):
        text = ""
        for f in ("daemon.out", os.path.join("log", "libvirtd.log")):
            try:
                with open(os.path.join(self.root, f), errors="replace") as fh:
                    text += fh.read()
            except OSError:
                pass
        return "\n" + text[-n:] if text else ""

    def stop(self):
        if not self.proc:
            return
        if self.proc.poll() is None:
            # domains outlive their daemon: end ours first
            names = self.virsh("list", "--all", "--name", check=False).stdout.split()
            for name in names:
                if self.state(name) != "shut off":
                    self.virsh("destroy", name, check=False)
                self.virsh("undefine", name, check=False)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="module")
def libvirtd(tmp_path_factory):
    """A running private libvirtd (see the module's docstring); stopped, with
    every domain it still has destroyed and undefined, after the module."""
    d = Libvirtd(tmp_path_factory.mktemp("libvirt"))
    why = d.unavailable()
    if why:
        pytest.skip(why)
    d.start()
    try:
        yield d
    finally:
        d.stop()
