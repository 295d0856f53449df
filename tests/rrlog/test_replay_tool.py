"""CLI tests for replay-tool/replay-vm (info, dump, verify, synth).

Run: make -C replay-tool && python3 -m pytest -q tests/rrlog
"""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "replay-tool", "replay-vm")


def run(*args, check=None):
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


@pytest.fixture(scope="module", autouse=True)
def built():
    if not os.access(TOOL, os.X_OK):
        subprocess.run(["make", "-C", os.path.join(ROOT, "replay-tool")],
                       check=True)


@pytest.fixture()
def log(tmp_path):
    path = tmp_path / "run.rr"
    run("synth", path, "--events", 20000, "--vcpus", 4, check=0)
    return path


def test_help_everywhere():
    for cmd in ("info", "dump", "verify", "synth"):
        p = run(cmd, "--help", check=0)
        assert "usage: replay-vm " + cmd in p.stdout
        assert "examples:" in p.stdout
    assert "commands:" in run("--help", check=0).stdout
    assert run("no-such-command").returncode == 64
    assert run().returncode == 64


def test_info(log):
    out = run("info", log, check=0).stdout
    assert "closed cleanly" in out
    assert "events: 20001 in" in out  # 20000 + End
    for kind in ("io_read", "time_read", "interrupt", "crew_transfer", "end"):
        assert kind in out
    assert "vcpu 3" in out and "device/none" in out
    assert "log growth" in out and "WARNING" not in out


def test_dump_json_from_count(log):
    out = run("dump", log, "--json", "--from", 19990, "--count", 5, check=0).stdout
    lines = [json.loads(l) for l in out.splitlines()]
    assert [e["index"] for e in lines] == list(range(19990, 19995))
    assert all("kind" in e and "pos" in e for e in lines)
    last = json.loads(run("dump", log, "--json", "--from", 20000, check=0).stdout)
    assert last["kind"] == "end" and last["n_events"] == 20000
    assert last["vcpu"] is None


def test_dump_text(log):
    out = run("dump", log, "--count", 3, check=0).stdout.splitlines()
    assert len(out) == 3 and out[0].startswith("#0 ")
    assert run("dump", log, "--from", 20002).returncode == 1  # past the end


def test_verify_ok_and_corrupt(log, tmp_path):
    assert "OK" in run("verify", log, check=0).stdout
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0x40
    bad = tmp_path / "bad.rr"
    bad.write_bytes(bytes(data))
    p = run("verify", bad, check=1)
    assert "CORRUPT" in p.stderr and "at byte" in p.stderr


def test_truncated(tmp_path):
    path = tmp_path / "crash.rr"
    run("synth", path, "--events", 30000, "--crash", check=0)
    p = run("verify", path, check=2)
    assert "TRUNCATED" in p.stdout and "truncated at byte" in p.stdout
    run("verify", "--allow-truncated", path, check=0)
    # Cut it in the middle of a chunk too: still a readable prefix.
    data = path.read_bytes()
    cut = tmp_path / "cut.rr"
    cut.write_bytes(data[: len(data) * 2 // 3])
    p = run("dump", cut, "--json", check=0)
    n = len(p.stdout.splitlines())
    assert 0 < n < 30000
    assert "truncated at byte" in p.stderr
    info = run("info", cut, check=0).stdout
    assert "WARNING: truncated at byte" in info and "NOT closed" in info


def test_not_a_log(tmp_path):
    junk = tmp_path / "junk.rr"
    junk.write_bytes(b"hello world, not a log at all" * 10)
    for cmd in ("info", "dump", "verify"):
        p = run(cmd, junk, check=1)
        assert "at byte 0" in p.stderr
