#!/usr/bin/env python3
"""Nested KVM test bench: an L1 guest under TCG with an AMD SVM CPU loads
kvm-amd and runs our QEMU with -enable-kvm for an L2 guest.

This machine has no hardware virtualization; TCG emulates SVM + NPT well
enough for Debian's kvm-amd, so the KVM backend runs for real one level
down.  The L1 initramfs is the normal guest image plus a second cpio with
our QEMU, replay-vm and their shared libraries, the firmware, the L2 image
and the KVM modules (Debian's, or the patched ones from build/kvm when
asked).  The L1 command is a shell script; /opt/nested/lib.sh gives it
`l2 VCPUS 'GUEST CMD' [QEMU ARGS...]`, which boots L2 under KVM with the
serial console on stdout.

  vm-images/nested.py --script 'l2 1 "uname -a"'
  vm-images/nested.py --script-file t.sh --l1-vcpus 2 --timeout 900
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmrun  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPLAY_VM = os.path.join(vmrun.REPO, "replay-tool", "replay-vm")
L1_CPU = "EPYC,+svm,+npt"
KVM_MODULES = ["virt/lib/irqbypass.ko", "arch/x86/kvm/kvm.ko", "drivers/crypto/ccp/ccp.ko",
               "arch/x86/kvm/kvm-amd.ko"]

# The L2 guest as the KVM backend wants it: the irqchip in QEMU (injection
# is QEMU's decision), no KVM paravirt features (kvmclock, async page faults
# and steal time are memory the host writes behind the guest's back), no
# rdrand/rdseed (native, unlogged).
LIB_SH = r'''
L2_APPEND="console=ttyS0 loglevel=4 panic=-1 oops=panic nokaslr nopti mitigations=off nmi_watchdog=0 tsc=reliable no_timer_check"
l2_argv() {  # VCPUS CMD: the L2 QEMU command line (without -rr)
	enc=$(printf %s "$2" | base64 -w0)
	echo /opt/nested/bin/qemu-system-x86_64 -L /usr/share/qemu -L /usr/share/seabios -M pc -m 256 \
		-smp "$1" -display none -monitor none -serial stdio -no-reboot \
		-kernel "$L2_KERNEL" -initrd /opt/nested/image/initramfs.cpio.gz \
		-append "\"$L2_APPEND rv.cmd=$enc\"" \
		-accel kvm,kernel-irqchip=off -cpu host,kvm=off,-rdrand,-rdseed \
		-drive file=/opt/nested/image/data.img,if=virtio,format=raw,snapshot=on -nic none
}
l2() {  # l2 VCPUS CMD [QEMU ARGS...]
	n=$1; c=$2; shift 2
	eval "$(l2_argv "$n" "$c")" '"$@"'
}
kvm_load() {
	mkdir -p /var/tmp
	for m in irqbypass kvm ccp kvm-amd; do
		insmod /opt/nested/kvm/$m.ko || { echo "NESTED: insmod $m failed"; return 1; }
	done
	[ -c /dev/kvm ] || mknod /dev/kvm c 10 232
	echo "NESTED: kvm loaded ($(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null) npt)"
}
'''


def _libs(binaries):
    libs = set()
    for b in binaries:
        out = subprocess.run(["ldd", b], stdout=subprocess.PIPE, check=True).stdout.decode()
        for line in out.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                libs.add(parts[2])
            elif parts and parts[0].startswith("/"):
                libs.add(parts[0])
    return sorted(libs)


def l1_extra_cpio(tmp, script, kvm_dir=None, image=vmrun.IMAGE, qemu=vmrun.QEMU, extra_files=None):
    """The second cpio of the L1 initramfs.  extra_files: {path in L1: host file}."""
    stage = os.path.join(tmp, "nested")
    opt = os.path.join(stage, "opt", "nested")
    for d in ("bin", "image", "kvm"):
        os.makedirs(os.path.join(opt, d))
    bins = [qemu, REPLAY_VM]
    for b in bins:
        shutil.copy(b, os.path.join(opt, "bin", os.path.basename(b)))
    for lib in _libs(bins):
        dst = os.path.join(stage, lib.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(lib, dst)
    for fw in ("/usr/share/qemu", "/usr/share/seabios"):
        shutil.copytree(fw, os.path.join(stage, fw.lstrip("/")), symlinks=False)
    # L2 boots vmlinux through PVH as L1 does where the image has it: under
    # TCG's SVM every L2 boot would otherwise decompress its kernel too
    kernel = vmrun.kernel_file(image)
    for f in (kernel, os.path.join(image, "initramfs.cpio.gz"), os.path.join(image, "data.img")):
        shutil.copy(f, os.path.join(opt, "image"))
    kver = open(os.path.join(image, "KVER")).read().strip()
    for m in KVM_MODULES:
        name = os.path.basename(m)
        src = os.path.join(kvm_dir, name) if kvm_dir and os.path.exists(os.path.join(kvm_dir, name)) \
            else os.path.join("/lib/modules", kver, "kernel", m)
        shutil.copy(src, os.path.join(opt, "kvm", name))
    for dst, src in (extra_files or {}).items():
        dst = os.path.join(stage, dst.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(src, dst)
    with open(os.path.join(opt, "lib.sh"), "w") as f:
        f.write("L2_KERNEL=/opt/nested/image/%s\n" % os.path.basename(kernel) + LIB_SH)
    with open(os.path.join(opt, "run.sh"), "w") as f:
        f.write(". /opt/nested/lib.sh\n" + script + "\n")
    out = os.path.join(tmp, "nested.cpio")
    with open(out, "wb") as f:
        subprocess.run("find . | sort | cpio -o -H newc --owner 0:0 --quiet", shell=True,
                       cwd=stage, stdout=f, check=True)
    return out


def run(script, l1_vcpus=2, l1_mem=3072, timeout=900, kvm_dir=None, echo=False, image=vmrun.IMAGE,
        qemu=vmrun.QEMU, extra_files=None):
    """Boot L1, run script there; returns vmrun.Result (output = L1 command's output).
    qemu: the QEMU that runs inside L1 (L1 itself runs under build/qemu).
    extra_files: {path in L1: host file} added to L1's initramfs."""
    with tempfile.TemporaryDirectory(prefix="rv-nested-") as tmp:
        extra = l1_extra_cpio(tmp, script, kvm_dir=kvm_dir, image=image, qemu=qemu,
                              extra_files=extra_files)
        initrd = os.path.join(tmp, "l1-initrd")
        with open(initrd, "wb") as f:
            for part in (os.path.join(image, "initramfs.cpio.gz"), extra):
                with open(part, "rb") as p:
                    shutil.copyfileobj(p, f)
                f.write(b"\0" * (-f.tell() % 4))
        os.unlink(extra)
        return vmrun.run(vcpus=l1_vcpus, mem=l1_mem, cmd="sh /opt/nested/run.sh", accel="tcg",
                         cpu=L1_CPU, initrd=initrd, net=False, timeout=timeout, echo=echo,
                         image=image)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog=__doc__.split("\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--script")
    g.add_argument("--script-file")
    ap.add_argument("--l1-vcpus", type=int, default=2)
    ap.add_argument("--l1-mem", type=int, default=3072)
    ap.add_argument("--kvm-dir", help="use kvm.ko/kvm-amd.ko from here (patched build)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--qemu", default=vmrun.QEMU, help="the QEMU to run inside L1")
    ap.add_argument("--echo", action="store_true")
    a = ap.parse_args()
    script = a.script if a.script else open(a.script_file).read()
    r = run(script, a.l1_vcpus, a.l1_mem, a.timeout, a.kvm_dir, a.echo, qemu=a.qemu)
    sys.stdout.write(r.output)
    if r.status in (vmrun.EXIT_TIMEOUT, vmrun.EXIT_NO_RESULT):
        sys.stderr.write("\n".join(r.console.splitlines()[-30:]) + "\n")
    return r.status


if __name__ == "__main__":
    sys.exit(main())
