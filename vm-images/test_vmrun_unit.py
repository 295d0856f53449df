"""Unit tests of the runner's logic (no guest boots here)."""
import base64
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmrun  # noqa: E402


def test_parse_console_takes_output_between_markers():
    console = "boot noise\nRV-BEGIN\nhello\nRESULT x a=1\nRV-EXIT 3\n[ 1.0] reboot: Power down\n"
    assert vmrun.parse_console(console) == (3, "hello\nRESULT x a=1\n")


def test_parse_console_without_exit_marker():
    status, out = vmrun.parse_console("RV-BEGIN\npartial\n")
    assert status is None and out == "partial\n"


def test_guest_command_appends_user_args_after_defaults():
    assert vmrun.guest_command("read", ["-n", "7"]) == "/opt/rv/bin/read -n 5000 -n 7"
    assert vmrun.guest_command(cmd="echo 'a b'") == "echo 'a b'"
    with pytest.raises(vmrun.SetupError):
        vmrun.guest_command("nosuch")


def test_qemu_argv_encodes_command_and_picks_accel(tmp_path):
    img = tmp_path / "img"
    img.mkdir()
    for f in ("vmlinuz", "initramfs.cpio.gz", "data.img"):
        (img / f).write_bytes(b"x")
    qemu = tmp_path / "qemu"
    qemu.write_text("#!/bin/sh\n")
    qemu.chmod(0o755)
    argv = vmrun.qemu_argv(vcpus=4, accel="tcg", image=str(img), qemu=str(qemu), command="echo hi")
    append = argv[argv.index("-append") + 1]
    enc = [w for w in append.split() if w.startswith("rv.cmd=")][0][7:]
    assert base64.b64decode(enc) == b"echo hi"
    assert argv[argv.index("-smp") + 1] == "4"
    assert "tcg,thread=multi" in argv
    assert "kvm" in vmrun.qemu_argv(accel="kvm", image=str(img), qemu=str(qemu))


def test_missing_image_is_a_setup_error(tmp_path):
    with pytest.raises(vmrun.SetupError, match="make image"):
        vmrun.qemu_argv(image=str(tmp_path), qemu="/bin/true")


def test_user_initrd_appends_an_aligned_cpio(tmp_path):
    base = tmp_path / "base.cpio"
    base.write_bytes(b"0123456")          # unaligned on purpose
    exe = tmp_path / "repro"
    exe.write_bytes(b"\x7fELF")
    out = vmrun.user_initrd(str(base), str(exe), str(tmp_path))
    data = open(out, "rb").read()
    assert data.startswith(b"0123456\0")
    listing = subprocess.run(["cpio", "-t", "--quiet"], input=data[8:], stdout=subprocess.PIPE).stdout
    assert b"opt/user/repro" in listing
