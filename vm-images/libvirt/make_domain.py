#!/usr/bin/env python3
"""Write a libvirt domain XML that records the replay-vm guest.

Fills in vm-images/libvirt/record-domain.xml.in with absolute paths to this
repository's patched QEMU and guest image, the guest's command, the log and
the CREW mode.  Then:

    virsh define DOMAIN.xml && virsh start NAME     # records into --log
    virsh shutdown NAME   (or virsh destroy NAME)   # ends the recording
    replay-tool/replay-vm --log RUN.rr              # replays and verifies

The guest needs the ACPI button and evdev modules to honour `virsh shutdown`;
when the image's initramfs lacks them, a second initrd is written next to the
XML (DOMAIN.initrd: the image's initramfs followed by a cpio with the two
modules from the host's matching kernel).  Keep it, like the image, for the
replay: its SHA-256 is in the log.
"""
import argparse
import gzip
import html
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import vmrun  # noqa: E402

TEMPLATE = os.path.join(HERE, "record-domain.xml.in")
FIRMWARE_DIRS = ("/usr/share/qemu", "/usr/share/seabios")
ACPI_MODULES = ("button", "evdev")


def initrd_has_modules(initrd):
    with gzip.open(initrd, "rb") as f:
        data = f.read()
    if b"rv.acpi" not in data:
        raise vmrun.SetupError("%s: its init predates rv.acpi/rv.idle (virsh shutdown); "
                               "rebuild the image with 'make image'" % initrd)
    return all(b"lib/modules/%s.ko\0" % m.encode() in data for m in ACPI_MODULES)


def module_paths(kver):
    paths = []
    for m in ACPI_MODULES:
        out = subprocess.run(["modprobe", "-S", kver, "--show-depends", m], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        for line in out.splitlines():
            w = line.split()
            if w and w[0] == "insmod" and w[1] not in paths:
                paths.append(w[1])
    return paths


def acpi_initrd(base, kver, out):
    """base followed by a cpio holding lib/modules/{button,evdev}.ko"""
    with tempfile.TemporaryDirectory(prefix="rv-acpi-") as tmp:
        mods = os.path.join(tmp, "lib", "modules")
        os.makedirs(mods)
        for p in module_paths(kver):
            if not p.endswith(".ko"):
                raise vmrun.SetupError("%s: compressed module, cannot insmod it" % p)
            shutil.copy(p, mods)
        # fixed mtimes and order: the same modules give the same bytes, so
        # writing it again does not break the replay of an earlier recording
        extra = subprocess.run("find . -exec touch -h -d @0 {} + && find . | LC_ALL=C sort | "
                               "cpio -o -H newc --owner 0:0 --quiet --reproducible",
                               shell=True, cwd=tmp, check=True, stdout=subprocess.PIPE).stdout
    with open(out, "wb") as f:
        with open(base, "rb") as p:
            shutil.copyfileobj(p, f)
        f.write(b"\0" * (-f.tell() % 4))     # cpio archives are concatenated on 4-byte boundaries
        f.write(extra)


def domain_xml(name, log, console, vcpus=2, memory=512, crew="page", command="uname -a",
               idle=False, image=vmrun.IMAGE, qemu=vmrun.QEMU, initrd=None):
    kw = {"append_extra": "rv.acpi=1" + (" rv.idle=1" if idle else "")}
    if crew == "byte":
        # the guest module in byte mode, its shadow memory above mem=
        vmrun.byte_crew_args(kw)
        memory = max(memory, kw.pop("mem"))
    base = vmrun.qemu_argv(vcpus=vcpus, mem=memory, image=image, qemu=qemu, command=command, **kw)
    append = base[base.index("-append") + 1]
    rr = "record,log=%s" % os.path.abspath(log)
    if crew:
        rr += ",crew=%s" % crew
    env = ""
    version = os.path.join(os.path.dirname(os.path.abspath(qemu)), "VERSION")
    if os.path.exists(version):     # the patch series in the log's header, as vmrun does
        env = "    <qemu:env name='RRVM_SERIES' value='%s'/>" % html.escape(open(version).read().strip())
    fw = "\n".join("    <qemu:arg value='-L'/>\n    <qemu:arg value='%s'/>" % d for d in FIRMWARE_DIRS)
    subst = {
        "NAME": name, "MEMORY_MIB": str(memory), "VCPUS": str(vcpus),
        "QEMU": os.path.abspath(qemu),
        "KERNEL": os.path.abspath(vmrun.kernel_file(image)),
        "INITRD": os.path.abspath(initrd or os.path.join(image, "initramfs.cpio.gz")),
        "CMDLINE": append, "DISK": os.path.join(os.path.abspath(image), "data.img"),
        "CONSOLE": os.path.abspath(console), "LOG": os.path.abspath(log),
        "CREW": crew or "page", "RR_OPTION": rr, "FIRMWARE_ARGS": fw, "QEMU_ENV": env,
    }
    with open(TEMPLATE) as f:
        text = f.read()
    head, sep, body = text.partition("-->")     # the comment keeps its placeholders
    for k, v in subst.items():
        raw = k in ("FIRMWARE_ARGS", "QEMU_ENV")
        body = body.replace("@%s@" % k, v if raw else html.escape(v))
    return head + sep + body


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example:\n  %(prog)s --name rr1 --vcpus 2 --log /var/tmp/rr1/run.rr "
                                        "--console /var/tmp/rr1/console.log --workload racy_counter "
                                        "--idle -o /var/tmp/rr1/rr1.xml")
    ap.add_argument("--name", required=True, help="domain name")
    ap.add_argument("--vcpus", type=int, default=2)
    ap.add_argument("--memory", type=int, default=512, help="MiB")
    ap.add_argument("--log", required=True, help="the recording to write (run.rr)")
    ap.add_argument("--crew", choices=("page", "byte", "none"), default="page",
                    help="CREW granularity (byte: the guest module's byte-granular CREW for "
                         "kernel memory, 1 GiB of guest RAM; none: leave it to QEMU's default)")
    ap.add_argument("--console", help="serial console file (default: next to the log)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--workload", help="a workload of vm-images/workloads (%s)" % ", ".join(sorted(vmrun.WORKLOADS)))
    g.add_argument("--cmd", help="a shell command for the guest")
    ap.add_argument("--idle", action="store_true",
                    help="after the command the guest waits for `virsh shutdown` instead of powering off")
    ap.add_argument("--image", default=vmrun.IMAGE, help="guest image directory (default build/image)")
    ap.add_argument("--qemu", default=vmrun.QEMU, help="the patched QEMU (default build/qemu/...)")
    ap.add_argument("-o", "--output", help="write the XML here (default stdout; "
                                           "an extra initrd may be written next to it)")
    a = ap.parse_args(argv)
    try:
        command = vmrun.guest_command(workload=a.workload, cmd=a.cmd)
        console = a.console or os.path.join(os.path.dirname(os.path.abspath(a.log)), a.name + ".console")
        base = os.path.join(a.image, "initramfs.cpio.gz")
        initrd = None
        if os.path.isfile(base) and not initrd_has_modules(base):
            kver = open(os.path.join(a.image, "KVER")).read().strip()
            where = os.path.dirname(os.path.abspath(a.output)) if a.output else os.getcwd()
            initrd = os.path.join(where, a.name + ".initrd")
            acpi_initrd(base, kver, initrd)
        xml = domain_xml(a.name, a.log, console, vcpus=a.vcpus, memory=a.memory,
                         crew=None if a.crew == "none" else a.crew, command=command, idle=a.idle,
                         image=a.image, qemu=a.qemu, initrd=initrd)
    except (vmrun.SetupError, OSError, subprocess.CalledProcessError) as e:
        print("make_domain: %s" % e, file=sys.stderr)
        return 2
    if a.output:
        with open(a.output, "w") as f:
            f.write(xml)
    else:
        sys.stdout.write(xml)
    return 0


if __name__ == "__main__":
    sys.exit(main())
