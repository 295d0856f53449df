"""Devices on replay: everything the guest sees of a device (its register
reads, its writes into RAM, its interrupts) comes from the log, so a
replayed device is muted.  Left running, a replayed virtio device parsed
the guest's rings at the replay's own pace, found them in states the
recorded device never saw, and a successful replay of a Debian guest
printed "qemu-system-x86_64: Desc next is 3" (qemu-patches hook 0012: virtio devices
pop nothing while replaying)."""
import os
import re

import rrtest

QEMU_LINE = re.compile(r"^qemu-system-x86_64: (.*)$", re.M)


def test_a_replay_with_disk_and_network_traffic_prints_no_device_errors(tmp_path, host_service):
    payload = bytes((i * 13) & 0xff for i in range(64 * 1024))
    port = host_service(payload)
    log, trace = tmp_path / "run.rr", tmp_path / "trace.log"
    cmd = "/opt/rv/bin/diskread; /opt/rv/bin/netclient -h 10.0.2.2 -p %d" % port
    # QEMU's trace of every virtqueue element a device takes, into a file
    # (-D) that the replay, run with the recorded command line, rewrites
    rec = rrtest.record(log, vcpus=2, crew="page", cmd=cmd, timeout=600,
                        extra=["-trace", "virtqueue_pop", "-D", str(trace)])
    want = rrtest.results(rec.output)
    assert len(want) == 2 and "bytes=%d" % len(payload) in want[1], rec.output[-2000:]
    pops = open(trace).read().count("virtqueue_pop")
    assert pops > 20, "the recorded devices took %d elements" % pops
    os.unlink(trace)

    rp = rrtest.replay(log, timeout=600)
    assert rrtest.results(rp.output) == want
    replayed = open(trace).read().count("virtqueue_pop") if os.path.exists(trace) else 0
    assert replayed == 0, "the replayed devices took %d elements from the guest's rings" % replayed
    said = [m for m in QEMU_LINE.findall(rp.stderr) if "replay-vm:" not in m]
    assert not said, "the replay's QEMU printed:\n" + "\n".join(said)
