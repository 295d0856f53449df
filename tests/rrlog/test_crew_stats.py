"""`replay-vm crew-stats`: CREW transfer statistics and the false-sharing
estimate, checked on logs built event by event (tests/rrlog/crew_log.c).

Run: make -C replay-tool && python3 -m pytest -q tests/rrlog
"""
import json
import os
import random
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "replay-tool", "replay-vm")
RRLOG = os.path.join(ROOT, "rrlog")


@pytest.fixture(scope="module")
def crew_log(tmp_path_factory):
    """Path of the compiled log builder (crew_log OUT N_VCPUS < spec)."""
    if not os.access(TOOL, os.X_OK):
        subprocess.run(["make", "-C", os.path.join(ROOT, "replay-tool")], check=True)
    exe = tmp_path_factory.mktemp("crew") / "crew_log"
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-I" + os.path.join(RRLOG, "include"), "-I" + os.path.join(RRLOG, "gen"),
                    "-o", str(exe), os.path.join(os.path.dirname(__file__), "crew_log.c"),
                    os.path.join(RRLOG, "librrlog.a"), "-lprotobuf-c", "-lzstd", "-pthread"],
                   check=True)
    return exe


def build(crew_log, tmp_path, spec, vcpus=4, name="crew.rr"):
    path = tmp_path / name
    subprocess.run([str(crew_log), str(path), str(vcpus)], input=spec.encode(), check=True)
    return path


def stats(path, *args):
    p = subprocess.run([TOOL, "crew-stats", str(path), "--json", *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# Each line is annotated with the class the estimate must give it.
SPEC = """
# page 0x10000: vCPU 0 is the boot owner, no range known for it yet
t 1 0x10010 8 w 0        # unknown: owner 0 has no range on this page; 1 := [0x10,0x18)
t 0 0x10020 4 r 1        # false: [0x20,0x24) vs 1's [0x10,0x18)
t 1 0x10024 4 w 0        # false: [0x24,0x28) is adjacent to 0's [0x20,0x24)
t 0 0x10027 1 w 1        # true: byte 0x27 is inside 1's [0x24,0x28)
t 2 0x10100 8 r 0        # false: vs 0's [0x27,0x28)
t 3 0x10026 2 w 0,1,2    # true: overlaps 0's and 1's ranges, not 2's
t 0 0x10fff 4 w 3        # false: clamped to [0xfff,0x1000), vs 3's [0x26,0x28)
t 1 0x10ffe 2 r 0        # true: [0xffe,0x1000) overlaps 0's [0xfff,0x1000)
# page 0x20000: same offsets as on page 0x10000, but ranges are per page
t 1 0x20020 4 w 0        # unknown: 0 has no range on this page
t 0 0x20020 4 r 1        # true
# page 0x30000: a transfer without a byte range (older logs) clears the range
t 2 0x30000 4096 w 0     # unknown: no byte range
t 0 0x30010 4 w 2        # unknown: 2's range was cleared
t 2 0x30000 4 w 0        # false: [0,4) vs 0's [0x10,0x14)
t 3 0x30010 4 r 0,1      # true: overlaps 0 (1 has no range: overlap wins)
t 1 0x30800 4 w 2,3      # false: 2 [0,4) and 3 [0x10,0x14) known, no overlap
# page 0x50000: one owner without a range, the other not overlapping
t 1 0x50000 4 w 0        # unknown
t 2 0x50100 4 r 0,1      # unknown: 1 does not overlap, 0 has no range
# byte granularity: counted, not classified
b 2 0x40000 16 w 1
e 4000000000
"""
EXPECT = {"true": 5, "false": 6, "unknown": 6}


def test_classification_by_hand(crew_log, tmp_path):
    s = stats(build(crew_log, tmp_path, SPEC))
    assert s["transfers"] == 18 and s["page_transfers"] == 17 and s["byte_transfers"] == 1
    assert (s["true_sharing"], s["false_sharing"], s["unknown"]) == (
        EXPECT["true"], EXPECT["false"], EXPECT["unknown"]), s
    assert s["no_byte_range"] == 1
    assert s["false_sharing_share"] == pytest.approx(6 / 11)
    assert s["pages"] == 4
    assert s["writes"] == 12 and s["reads"] == 6
    assert s["duration_s"] == pytest.approx(4.0)
    assert s["transfers_per_s"] == pytest.approx(4.5)
    assert s["by_vcpu"] == {"0": 5, "1": 6, "2": 5, "3": 2}
    top = s["top_pages"]
    assert [p["page"] for p in top] == ["0x10000", "0x30000", "0x20000", "0x50000"]
    assert [p["transfers"] for p in top] == [8, 5, 2, 2]
    assert (top[0]["true_sharing"], top[0]["false_sharing"], top[0]["unknown"]) == (3, 4, 1)
    assert stats(build(crew_log, tmp_path, SPEC), "--top", "1")["top_pages"][0]["page"] == "0x10000"


def test_text_report(crew_log, tmp_path):
    p = subprocess.run([TOOL, "crew-stats", str(build(crew_log, tmp_path, SPEC))],
                       capture_output=True, text=True, check=True)
    out = p.stdout
    assert "transfers:        18 (17 page, 1 byte)" in out
    assert "duration:         4.000 s (End event host time)" in out
    assert "distinct pages:   4" in out
    assert "false sharing              6" in out
    assert "false-sharing share of classified: 54.5%" in out
    assert "0x10000" in out.split("top 4 pages")[1]


def test_vcpu_beyond_header_and_takes_from_nobody(crew_log, tmp_path):
    # header says 2 vCPUs: ranges of vCPU 5 are not kept, so it is unknown as owner;
    # a page transfer without previous owners is a take from nobody (logged under
    # KVM), which moves nothing between vCPUs: counted apart, not as a transfer
    spec = "t 5 0x1000 4 w 0\nt 0 0x1000 4 w 5\nt 1 0x1000 4 w -\n"
    s = stats(build(crew_log, tmp_path, spec, vcpus=2))
    assert (s["true_sharing"], s["false_sharing"], s["unknown"]) == (0, 0, 2)
    assert (s["transfers"], s["page_takes"], s["byte_marks"]) == (2, 1, 0)
    assert s["duration_s"] is None and s["false_sharing_share"] is None
    p = subprocess.run([TOOL, "crew-stats", str(tmp_path / "crew.rr")],
                       capture_output=True, text=True, timeout=60)
    assert "takes:            1 page(s) taken from nobody" in p.stdout, p.stdout


def test_older_logs_are_unknown(tmp_path):
    """replay-vm synth writes page-aligned 4096-byte transfers (the format
    before byte ranges): all unknown, none classified."""
    log = tmp_path / "s.rr"
    subprocess.run([TOOL, "synth", str(log), "--events", "50000", "--vcpus", "4"], check=True,
                   capture_output=True)
    s = stats(log)
    assert s["transfers"] > 1000
    assert s["unknown"] == s["no_byte_range"] == s["page_transfers"] == s["transfers"]
    assert s["false_sharing"] == s["true_sharing"] == 0


def test_many_transfers_in_seconds(crew_log, tmp_path):
    """~600k transfers over 100k sparse pages: the hash table keeps it fast,
    and the counts match a straightforward Python model of the rule."""
    rnd = random.Random(5)
    nv = 4
    pages = [rnd.randrange(1 << 36) << 12 for _ in range(100000)]
    last = {}
    owner = {}
    want = {"true": 0, "false": 0, "unknown": 0}
    lines = []
    for _ in range(600000):
        pg = pages[min(int(rnd.paretovariate(1.2)) - 1, len(pages) - 1)
                   if rnd.random() < 0.5 else rnd.randrange(len(pages))]
        prev = owner.get(pg, {0})
        v = rnd.choice([x for x in range(nv) if x not in prev] or [0])
        if v in prev:
            continue
        off = rnd.randrange(0, 4096, 8)
        ln = rnd.choice([1, 2, 4, 8])
        lo, hi = off, min(off + ln, 4096)
        ranges = last.setdefault(pg, {})
        ov = any(p in ranges and lo < ranges[p][1] and ranges[p][0] < hi for p in prev)
        unk = any(p not in ranges for p in prev)
        want["true" if ov else "unknown" if unk else "false"] += 1
        ranges[v] = (lo, hi)
        w = rnd.random() < 0.5
        owner[pg] = {v} if w else prev | {v}
        lines.append("t %d %#x %d %s %s" % (v, pg | off, ln, "w" if w else "r",
                                           ",".join(map(str, sorted(prev)))))
    log = build(crew_log, tmp_path, "\n".join(lines) + "\ne 10000000000\n", vcpus=nv)
    t0 = time.monotonic()
    s = stats(log)
    took = time.monotonic() - t0
    assert (s["true_sharing"], s["false_sharing"], s["unknown"]) == (
        want["true"], want["false"], want["unknown"])
    assert s["transfers"] == len(lines)
    assert s["pages"] == len({int(l.split()[2], 16) >> 12 for l in lines})
    assert took < 10, took


def test_help_and_usage():
    p = subprocess.run([TOOL, "crew-stats", "--help"], capture_output=True, text=True)
    assert p.returncode == 0
    assert "usage: replay-vm crew-stats" in p.stdout and "examples:" in p.stdout
    assert "ESTIMATE" in p.stdout and "false sharing" in p.stdout
    assert subprocess.run([TOOL, "crew-stats"], capture_output=True).returncode == 64
    assert subprocess.run([TOOL, "crew-stats", "a", "b"], capture_output=True).returncode == 64
    assert subprocess.run([TOOL, "crew-stats", "/nonexistent.rr"], capture_output=True).returncode == 1



def test_file_bytes_counts_the_chunks_written_between_two_sizes(crew_log, tmp_path):
    """--file-bytes A:B (bench/experiment.py: a workload's transfers from the
    log's size at its start and end marks) counts the chunks that end in
    (A, B], and the sharing estimate still knows ranges from before A."""
    spec = ("t 1 0x10010 8 w 0\nt 0 0x10020 4 r 1\nf\n"      # chunk 1: unknown, false
            "t 1 0x10024 4 w 0\nt 0 0x10027 1 w 1\nb 2 0x40000 16 w 1\nf\n"  # 2: false, true, byte
            "t 2 0x10100 8 r 0\ne 4000000000\n")             # chunk 3: false
    log = tmp_path / "chunks.rr"
    # crew_log prints the file's size after each 'f'
    p = subprocess.run([str(crew_log), str(log), "4"], input=spec, capture_output=True, text=True,
                       check=True)
    a, b = map(int, p.stdout.split())
    size = os.path.getsize(log)
    assert 0 < a < b < size
    whole = stats(log)
    assert whole["transfers"] == 6 and whole["false_sharing"] == 3
    first = stats(log, "--file-bytes", "0:%d" % a)
    assert (first["transfers"], first["unknown"], first["false_sharing"]) == (2, 1, 1), first
    mid = stats(log, "--file-bytes", "%d:%d" % (a, b))
    # 0x10024 is false against 0's [0x20,0x24), known from chunk 1
    assert (mid["transfers"], mid["byte_transfers"], mid["false_sharing"], mid["true_sharing"],
            mid["unknown"]) == (3, 1, 1, 1, 0), mid
    assert mid["event_range"] == [2, 5] and mid["duration_s"] is None, mid
    # a size inside a chunk: that chunk was not written yet
    assert stats(log, "--file-bytes", "%d:%d" % (a, b - 1))["transfers"] == 0
    rest = stats(log, "--file-bytes", "%d:%d" % (b, size))
    assert rest["transfers"] == 1 and rest["false_sharing"] == 1, rest
    for bad in ("5:3", "x:4", "4", ":4", "4:"):
        p = subprocess.run([TOOL, "crew-stats", str(log), "--file-bytes", bad],
                           capture_output=True, text=True)
        assert p.returncode == 64 and "--file-bytes" in p.stderr, (bad, p.stderr)
