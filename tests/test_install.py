"""make install: replay-vm on PATH, the patched QEMU and the guest runner
under PREFIX/libexec/replay-vm, the guest image under
PREFIX/share/replay-vm, a man page made from --help; a recording made and
replayed from another directory with nothing but PREFIX/bin on PATH;
make uninstall takes it all away."""
import os
import re
import subprocess

import vmrun

REPO = vmrun.REPO


def make(*args):
    # the build itself is make test's (-o: taken as up to date here)
    r = subprocess.run(["make", "-C", REPO, "--no-print-directory", "-o", "qemu", "-o", "image",
                        "-o", "tools", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_install_record_replay_from_anywhere_then_uninstall(tmp_path):
    prefix, work = tmp_path / "prefix", tmp_path / "work"
    work.mkdir()
    make("install", "PREFIX=%s" % prefix)
    tool = prefix / "bin" / "replay-vm"
    env = dict(os.environ, PATH="%s:/usr/bin:/bin" % tool.parent)
    env.pop("RV_IMAGE", None)
    env.pop("RV_QEMU", None)

    def rv(*args, timeout=600):
        return subprocess.run(["replay-vm", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=timeout)

    v = rv("--version")
    assert v.returncode == 0 and re.fullmatch(r"replay-vm \S+\n", v.stdout), v.stdout + v.stderr
    assert "unknown" not in v.stdout
    helps = rv("--help").stdout
    for cmd in ("record", "replay", "info", "dump", "verify", "crew-stats", "version"):
        assert re.search(r"^  %s\s+\S" % cmd, helps, re.M), helps

    rec = rv("record", "--log", "run.rr", "--vcpus", "2", "--cmd", "echo RESULT installed $((6*7))")
    assert rec.returncode == 0 and "RESULT installed 42" in rec.stdout, rec.stdout + rec.stderr[-2000:]
    info = rv("info", "run.rr").stdout
    # the installed QEMU and image, not the source tree's
    assert str(prefix / "libexec" / "replay-vm" / "qemu-system-x86_64") in info, info
    assert str(prefix / "share" / "replay-vm" / "image" / "vmlinux") in info, info
    rp = rv("--log", "run.rr")
    assert rp.returncode == 0 and "REPLAY OK" in rp.stderr, rp.stderr[-2000:]
    assert "RESULT installed 42" in rp.stdout

    man = (prefix / "share" / "man" / "man1" / "replay-vm.1").read_text()
    assert man.startswith(".TH REPLAY-VM 1") and ".SS record" in man
    assert "\\-\\-binary FILE" in man, man[:3000]

    make("uninstall", "PREFIX=%s" % prefix)
    left = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs]
    assert not left, left
