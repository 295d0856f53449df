"""Unit tests of the runner's logic (no guest boots here)."""
import base64
import os
import subprocess
import sys
import time

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


HMP_REGS = """info registers -a

CPU#0
RAX=0000000000000000 RBX=0000000000000000 RCX=0000000000000001 RDX=0000000000000000
RSI=0000000000000083 RDI=0000000000000000 RBP=ffffffff82613e00 RSP=ffffffff82603e98
RIP=ffffffff81a592eb RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1

CPU#3
RAX=0000000000000000 RBX=0000000000000000 RCX=0000000000000001 RDX=0000000000000000
RSI=0000000000000083 RDI=0000000000000000 RBP=ffffc90000013e00 RSP=ffffc90000013d00
RIP=ffffffffc0401234 RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=0

CPU#1
EAX=00000000 EBX=00000000 ECX=00000000 EDX=00000663
ESI=00000000 EDI=00000000 EBP=00000000 ESP=00006f20
EIP=000f1234 EFL=00000002 [-------] CPL=0 II=0 A20=1 SMM=0 HLT=0
(qemu) """


def test_hung_vcpus_are_named_from_the_monitors_registers(tmp_path):
    (tmp_path / "kallsyms.txt").write_text(
        "ffffffff81000000 T _stext\nffffffff81a592e0 T native_safe_halt\nffffffff81a59300 T x\n"
        "ffffffff81200000 T alg_test\n")
    cpus = vmrun.parse_registers(HMP_REGS)
    assert [(c["index"], c["halted"], c["rsp"], c["long"]) for c in cpus] == \
        [(0, True, 0xffffffff82603e98, True), (3, False, 0xffffc90000013d00, True),
         (1, False, 0x6f20, False)]
    cpus[1]["stack"] = [0x1234, 0xffffffff81200010, 0xffffffffc0400000]
    text = vmrun.describe_vcpus(cpus, str(tmp_path))
    assert "CPU#0 RIP=ffffffff81a592eb (native_safe_halt+0xb) halted" in text
    assert "CPU#3 RIP=ffffffffc0401234 (module or code cache)\n    stack: alg_test+0x10\n" in text
    # a nested L1 whose vCPU runs an L2 still in its BIOS (once "no registers")
    assert "CPU#1 RIP=f1234 (not in 64-bit mode)" in text


def test_hung_vcpus_without_a_monitor_says_so(tmp_path):
    assert "no registers" in vmrun.hung_vcpus(str(tmp_path / "none"), str(tmp_path))


GDB_BT = """\
Thread 2 (Thread 0x7f0d1bfff6c0 (LWP 18445) "qemu-system-x86"):
#0  __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0, op=393, expected=0, futex_word=0x55d0) at ./nptl/futex-internal.c:57
#1  0x00007f0d2a0a1e0b in ___pthread_cond_wait (cond=0x55d0, mutex=0x55d8) at ./nptl/pthread_cond_wait.c:618
#2  0x000055d0c5e1a2cb in qemu_cond_wait_impl (cond=0x55d0, mutex=0x55d8, file=0x55 "x", line=427) at ../util/qemu-thread-posix.c:220
#3  0x000055d0c59b7d33 in qemu_wait_io_event (cpu=0x55d1) at ../softmmu/cpus.c:427
#4  0x000055d0c5c3f4d1 in mttcg_cpu_thread_fn (arg=0x55d1) at ../accel/tcg/tcg-accel-ops-mttcg.c:123
#5  0x00007f0d2a0a2134 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442

Thread 1 (Thread 0x7f0d29f1c000 (LWP 18440) "qemu-system-x86"):
#0  0x00007f0d2a117b7f in __ppoll (fds=0x55, nfds=7, timeout=<optimized out>) at ../sysdeps/unix/sysv/linux/ppoll.c:42
#1  qemu_poll_ns (fds=<optimized out>, nfds=<optimized out>, timeout=<optimized out>) at ../util/qemu-timer.c:351
#2  0x000055d0c5e2c3a4 in main_loop_wait (nonblocking=<optimized out>) at ../util/main-loop.c:606
"""


def test_qemu_backtraces_compact_to_a_line_per_thread():
    text = vmrun.compact_backtraces(GDB_BT)
    assert text.splitlines() == [
        "  LWP 18445: qemu_cond_wait_impl (util/qemu-thread-posix.c:220) < qemu_wait_io_event"
        " < mttcg_cpu_thread_fn",
        "  LWP 18440: qemu_poll_ns (util/qemu-timer.c:351) < main_loop_wait",
    ]


def test_qemu_threads_of_a_live_process_name_its_threads():
    # a plain host process stands in for a hung QEMU: every thread is listed
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.3)
        text = vmrun.qemu_threads(p.pid)
    finally:
        p.kill()
        p.wait()
    assert "LWP %d" % p.pid in text or text.startswith("  %d " % p.pid), text
