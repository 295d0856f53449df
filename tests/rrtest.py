"""Record a guest run and replay it with the real tools (test helpers)."""
import os
import re
import subprocess

import vmrun

REPLAY_VM = os.path.join(vmrun.REPO, "replay-tool", "replay-vm")
RESULT = re.compile(r"^RESULT (\S+)(.*)$", re.M)
VERDICT = re.compile(r"REPLAY OK: (\d+) events replayed, (\d+) checkpoints matched")


class Replay:
    def __init__(self, proc):
        self.status = proc.returncode
        self.stdout = proc.stdout.decode(errors="replace").replace("\r\n", "\n")
        self.stderr = proc.stderr.decode(errors="replace")
        self.output = vmrun.parse_console(self.stdout)[1]
        m = VERDICT.search(self.stderr)
        self.events = int(m.group(1)) if m else None
        self.checkpoints = int(m.group(2)) if m else None


def record(log, vcpus=1, timeout=400, **kw):
    r = vmrun.run(vcpus=vcpus, accel="tcg", record=str(log), timeout=timeout, **kw)
    assert r.status == 0, "recording failed (%d):\n%s" % (r.status, r.console[-6000:])
    return r


def replay(log, timeout=600, expect_ok=True, env=None):
    p = subprocess.run([REPLAY_VM, "--log", str(log), "--timeout", str(timeout)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout + 30,
                       env=dict(os.environ, **env) if env else None)
    rp = Replay(p)
    if expect_ok:
        assert rp.status == 0 and rp.events, "replay failed (%d):\n%s\n%s" % (
            rp.status, rp.stderr[-3000:], rp.stdout[-2000:])
    return rp


def replay_many(log, n, timeout=600):
    """n replays of one log at the same time (uniprocessor logs: each
    replay keeps one host core busy); their Replay results in order."""
    return replay_each([log] * n, timeout)


def replay_each(logs, timeout=600, expect_ok=True):
    """One replay of each log, all at the same time; their Replay results
    in order."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(len(logs)) as pool:
        return list(pool.map(lambda log: replay(log, timeout, expect_ok), logs))


def results(text):
    return [m.group(0) for m in RESULT.finditer(text)]


def dump(log, start, count):
    out = subprocess.run([REPLAY_VM, "dump", str(log), "--from", str(start), "--count", str(count)],
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    return out.splitlines()


def find_event(log, pattern, limit=2000000):
    """Index of the first event whose dump line matches pattern."""
    p = subprocess.Popen([REPLAY_VM, "dump", str(log)], stdout=subprocess.PIPE)
    rx = re.compile(pattern)
    try:
        for i, line in enumerate(p.stdout):
            if i > limit:
                break
            if rx.search(line.decode()):
                return int(line.decode().split()[0].lstrip("#"))
    finally:
        p.kill()
        p.wait()
    return None


def crew_stats(log):
    """`replay-vm crew-stats --json` of a log: CREW transfers, rate, false-sharing estimate."""
    import json
    out = subprocess.run([REPLAY_VM, "crew-stats", str(log), "--json", "--top", "0"],
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    return json.loads(out)


def info(log):
    """`replay-vm info` of a log, as text."""
    return subprocess.run([REPLAY_VM, "info", str(log)], check=True, stdout=subprocess.PIPE).stdout.decode()


def info_events(log):
    """Number of events in a log (replay-vm info)."""
    return int(re.search(r"^events: (\d+)", info(log), re.M).group(1))
