"""The README's record and replay examples, run as written: every line of a
fenced block in README.md that starts with `replay-vm record ` is run by
the shell in an empty directory holding `./repro` (a static program of the
user's), with replay-vm on PATH, and then the README's `replay-vm --log
run.rr` replays it there: REPLAY OK with the recorded output.

`record --binary` once made logs that could not be replayed: its initrd
was a temporary file, gone when the recording ended.  It is now kept
beside the log (LOG.initrd), and a replay finds it there when both have
moved."""
import os
import re
import shlex
import shutil
import subprocess

import pytest

import rrtest
import vmrun

README = os.path.join(vmrun.REPO, "README.md")
REPLAY_LINE = "replay-vm --log run.rr"

# a user's program: threads racing on a counter, printing what they got
REPRO_C = r"""
#include <pthread.h>
#include <stdio.h>
static volatile long counter;
static void *work(void *arg) { for (int i = 0; i < 200000; i++) counter++; return arg; }
int main(int argc, char **argv) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("RESULT repro counter=%ld args=%d\n", counter, argc - 1);
    return 0;
}
"""


def readme_lines():
    text = open(README).read()
    blocks = re.findall(r"^```[\w-]*\n(.*?)^```", text, re.M | re.S)
    return [line.strip() for b in blocks for line in b.splitlines()]


def record_examples():
    return [line for line in readme_lines() if line.startswith("replay-vm record ")]


def shell(line, cwd, timeout=900):
    """line as a user types it: the shell, replay-vm on PATH"""
    env = dict(os.environ, PATH=os.path.dirname(rrtest.REPLAY_VM) + ":" + os.environ["PATH"])
    return subprocess.run(line, shell=True, cwd=cwd, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_the_readme_has_a_record_then_replay_example():
    lines = readme_lines()
    assert REPLAY_LINE in lines, "README.md has no fenced '%s'" % REPLAY_LINE
    assert any("--binary ./repro" in line for line in record_examples()), \
        "README.md has no 'replay-vm record ... --binary ./repro' example"


@pytest.fixture(scope="module")
def repro(tmp_path_factory):
    d = tmp_path_factory.mktemp("repro")
    src = d / "repro.c"
    src.write_text(REPRO_C)
    return vmrun.static_binary(src, d / "repro", ["-pthread"])


@pytest.mark.parametrize("line", record_examples())
def test_readme_example_records_and_replays(tmp_path, repro, line):
    shutil.copy(repro, tmp_path / "repro")
    rec = shell(line, tmp_path)
    assert rec.returncode == 0, (line, rec.stderr.decode()[-3000:])
    recorded = rec.stdout.decode(errors="replace")
    rp = shell(REPLAY_LINE, tmp_path)
    err = rp.stderr.decode(errors="replace")
    assert rp.returncode == 0 and "REPLAY OK" in err, (line, err[-3000:])
    replayed = vmrun.parse_console(rp.stdout.decode(errors="replace").replace("\r\n", "\n"))[1]
    assert replayed.strip() == recorded.strip(), (line, recorded[-1000:], replayed[-1000:])
    if "--binary" in shlex.split(line):
        assert "RESULT repro counter=" in recorded, recorded
        binary_log_travels(tmp_path)


def binary_log_travels(d):
    """The log and its initrd moved together still replay: replay-vm finds
    the initrd beside the log and puts it on QEMU's command line."""
    moved = d / "moved"
    moved.mkdir()
    for f in ("run.rr", "run.rr.initrd"):
        os.rename(d / f, moved / f)
    p = shell("replay-vm --log moved/run.rr --print-cmd", d, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    argv = shlex.split(p.stdout.decode())
    assert argv[argv.index("-initrd") + 1] == str(moved / "run.rr.initrd"), argv
    os.unlink(moved / "run.rr.initrd")
    p = shell("replay-vm --log moved/run.rr --print-cmd", d, timeout=60)
    assert p.returncode == 2 and "initrd image" in p.stderr.decode(), p.stderr.decode()
