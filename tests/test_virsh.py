"""Issue 8 (libvirt): a domain that records itself, ended by virsh.

A private libvirtd (tests/libvirt_fixture.py) runs a TCG domain generated
from vm-images/libvirt/record-domain.xml.in: the patched QEMU records the
whole 2-vCPU VM (page CREW) running a racy program.  The domain is ended
with `virsh shutdown` (ACPI power button, the guest powers off) or with
`virsh destroy` in the middle of the workload; either way the log verifies
and `replay-vm --log run.rr` replays it to the recorded result."""
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

import rrtest
from libvirt_fixture import libvirtd  # noqa: F401  (the fixture)

sys.path.insert(0, os.path.join(rrtest.vmrun.REPO, "vm-images", "libvirt"))
import make_domain  # noqa: E402

RACY = "/opt/rv/bin/racy_counter -t 2 -n 1M -a 5000 | tail -1"
# one RESULT line per round; the test destroys the domain after the first
RACY_ROUNDS = "for i in $(seq 30); do %s; done" % RACY


def wait_console(path, pattern, timeout, dom=None, lv=None):
    rx = re.compile(pattern, re.M)
    t0 = time.monotonic()
    text = ""
    while time.monotonic() - t0 < timeout:
        try:
            with open(path, errors="replace") as f:
                text = f.read().replace("\r\n", "\n")
        except OSError:
            text = ""
        if rx.search(text):
            return text
        if dom and lv.state(dom) == "shut off":
            break
        time.sleep(0.5)
    raise AssertionError("no %r on the console after %d s:%s" % (
        pattern, time.monotonic() - t0, lv.diagnose(dom, path) if lv else "\n" + text[-3000:]))


def define_and_start(lv, tmp_path, name, cmd, idle, crew="page"):
    log, console = tmp_path / "run.rr", tmp_path / "console.log"
    xml = tmp_path / (name + ".xml")
    assert make_domain.main(["--name", name, "--vcpus", "2", "--log", str(log), "--crew", crew,
                             "--console", str(console), "--cmd", cmd, "-o", str(xml)]
                            + (["--idle"] if idle else [])) == 0
    lv.virsh("define", xml)
    lv.virsh("start", name)
    return log, console


def replay(log):
    rp = rrtest.replay(log, timeout=300, expect_ok=False)
    assert rp.status == 0 and "REPLAY OK" in rp.stderr, "replay failed (%d):\n%s\n%s" % (
        rp.status, rp.stderr[-3000:], rp.stdout[-2000:])
    return rp


def verify(log):
    p = subprocess.run([rrtest.REPLAY_VM, "verify", str(log)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


QNS = "{http://libvirt.org/schemas/domain/qemu/1.0}"


def test_make_domain_writes_a_recording_domain(tmp_path):
    """The generated XML: TCG, absolute paths, read-only disk, console file,
    the -rr option with the CREW mode, firmware dirs; no daemon needed."""
    xml = tmp_path / "d.xml"
    assert make_domain.main(["--name", "d1", "--vcpus", "2", "--log", str(tmp_path / "run.rr"),
                             "--crew", "byte", "--cmd", "echo hi", "--idle", "-o", str(xml)]) == 0
    dom = ET.parse(xml).getroot()
    assert dom.get("type") == "qemu" and dom.findtext("name") == "d1"
    assert dom.findtext("vcpu") == "2"
    assert os.path.isabs(dom.findtext("devices/emulator"))
    assert dom.find("devices/disk/readonly") is not None
    assert dom.find("devices/serial/source").get("path") == str(tmp_path / "d1.console")
    cmdline = dom.findtext("os/cmdline")
    assert "rv.acpi=1" in cmdline and "rv.idle=1" in cmdline
    for f in ("os/kernel", "os/initrd", "devices/disk/source"):
        el = dom.find(f)
        path = el.text if el.text else el.get("file")
        assert os.path.isfile(path), path
    args = [a.get("value") for a in dom.find(QNS + "commandline").findall(QNS + "arg")]
    rr = args[args.index("-rr") + 1]
    assert rr == "record,log=%s,crew=byte" % (tmp_path / "run.rr")
    assert args.count("-L") == 2
    initrd = dom.findtext("os/initrd")
    if initrd.startswith(str(tmp_path)):
        # the extra initrd (ACPI modules) comes out byte for byte the same again
        before = open(initrd, "rb").read()
        assert make_domain.main(["--name", "d1", "--log", str(tmp_path / "run.rr"),
                                 "-o", str(xml)]) == 0
        assert open(initrd, "rb").read() == before


def test_virsh_records_with_byte_crew(libvirtd, tmp_path):  # noqa: F811
    """A byte-CREW domain (make_domain --crew byte: 1 GiB, the guest module
    in byte mode) records the kernel race through `virsh start`; the guest
    powers off after it, and the log is a byte-CREW one that replays to the
    recorded result."""
    lv, name = libvirtd, "rv-byte"
    log, console = define_and_start(lv, tmp_path, name, "/opt/rv/bin/racy_kernel -p 2 -n 100",
                                    idle=False, crew="byte")
    lv.wait_state(name, "shut off", 600, console)
    text = open(console, errors="replace").read().replace("\r\n", "\n")
    want = rrtest.results(text)
    assert len(want) == 1, text[-3000:] + lv.qemu_log(name)[-2000:]
    assert "byte CREW on" in lv.qemu_log(name), lv.qemu_log(name)[-3000:]
    rc, out = verify(log)
    assert rc == 0, out
    info = subprocess.run([rrtest.REPLAY_VM, "info", str(log)], capture_output=True, text=True,
                          check=True).stdout
    assert "crew mode          byte" in info, info
    rp = replay(log)
    assert rrtest.results(rp.output) == want, rp.stderr[-3000:]
    lv.virsh("undefine", name)


def test_virsh_shutdown_ends_a_recording_that_replays(libvirtd, tmp_path):  # noqa: F811
    lv, name = libvirtd, "rv-shutdown"
    log, console = define_and_start(lv, tmp_path, name, RACY, idle=True)
    text = wait_console(console, r"^RV-IDLE", 240, name, lv)
    want = rrtest.results(text)
    assert len(want) == 1, text[-2000:]
    assert lv.state(name) == "running"

    lv.virsh("shutdown", name)
    lv.wait_state(name, "shut off", 60)
    assert "RV-POWERBUTTON" in open(console, errors="replace").read(), \
        "the guest did not see the ACPI power button"
    rc, out = verify(log)
    assert rc == 0, out
    assert "recording" in lv.qemu_log(name)

    rp = replay(log)
    assert rrtest.results(rp.output) == want
    assert "RV-POWERBUTTON" in rp.stdout
    lv.virsh("undefine", name)


def test_virsh_destroy_mid_workload_keeps_what_was_logged(libvirtd, tmp_path):  # noqa: F811
    lv, name = libvirtd, "rv-destroy"
    log, console = define_and_start(lv, tmp_path, name, RACY_ROUNDS, idle=False)
    wait_console(console, r"^RESULT ", 240, name, lv)
    lv.virsh("destroy", name)
    lv.wait_state(name, "shut off", 30)
    text = open(console, errors="replace").read().replace("\r\n", "\n")
    assert "RV-EXIT" not in text, "the workload ended before the destroy"
    recorded = rrtest.results(text)
    assert recorded

    rc, out = verify(log)
    # a log cut by SIGKILL reads back up to its last flushed chunk
    assert rc == 0 or "truncated" in out, out
    rp = replay(log)
    replayed = rrtest.results(rp.output)
    # the replay runs up to the cut: what the guest printed before it, the same
    assert replayed and replayed == recorded[:len(replayed)], (replayed, recorded)
    assert re.search(r"stopped from the host|cut at byte|truncated", rp.stderr), rp.stderr[-2000:]
    if "stopped from the host" in rp.stderr:
        # SIGTERM ended the recording cleanly: nothing the guest printed is missing
        assert replayed == recorded
    lv.virsh("undefine", name)


def test_qemu_killed_mid_workload_replays_up_to_the_cut(libvirtd, tmp_path):  # noqa: F811
    """SIGKILL (libvirt's escalation when SIGTERM does not end QEMU in time,
    or a host crash): the log is cut, at most the last 200 ms are lost, and
    the replay runs to the cut and says so."""
    lv, name = libvirtd, "rv-kill"
    log, console = define_and_start(lv, tmp_path, name, RACY_ROUNDS, idle=False)
    wait_console(console, r"^RESULT ", 240, name, lv)
    time.sleep(1)       # past the periodic flush of the first RESULT's events
    os.kill(lv.qemu_pid(name), signal.SIGKILL)
    lv.wait_state(name, "shut off", 30)
    text = open(console, errors="replace").read().replace("\r\n", "\n")
    assert "RV-EXIT" not in text, "the workload ended before the kill"
    recorded = rrtest.results(text)

    rc, out = verify(log)
    assert rc == 0 or "truncated" in out, out
    rp = replay(log)
    replayed = rrtest.results(rp.output)
    assert replayed and replayed == recorded[:len(replayed)], (replayed, recorded)
    assert re.search(r"cut at byte|stopped from the host", rp.stderr), rp.stderr[-2000:]
    lv.virsh("undefine", name)
