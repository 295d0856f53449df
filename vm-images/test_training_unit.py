"""Unit tests of the host side of training mode (vm-images/training.py): no guest."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training  # noqa: E402

HDR = "# replayvm trained-pcs 1\n# kernel-release 6.1.0-56-amd64\n# build-id abc\n"


def mk(lines, hdr=HDR):
    return training.parse(hdr + "".join(l + "\n" for l in lines))


def test_parse_and_coverage():
    t = mk(["S ffffffff81000010 30 f+0x10/0x20", "P ffffffff81000020 70 f+0x20/0x20"])
    assert t.shared() == [0xffffffff81000010]
    c = training.coverage(t)
    assert (c["executed_pcs"], c["shared_pcs"], c["accesses"], c["shared_accesses"]) == (2, 1, 100, 30)
    assert c["shared_access_share"] == pytest.approx(0.3)


def test_refuses_other_files():
    with pytest.raises(training.ListError, match="not a replayvm"):
        training.parse("hello\n")
    with pytest.raises(training.ListError, match="build-id"):
        training.parse("# replayvm trained-pcs 1\nS 10 1\n")
    with pytest.raises(training.ListError, match="line 5"):
        mk(["S ffffffff81000010 30", "X nonsense"])


def test_truncated_last_line_is_skipped():
    t = training.parse(HDR + "S ffffffff81000010 30 f\nS ffffffff8100")
    assert t.shared() == [0xffffffff81000010]


def test_merge_is_a_union_with_summed_counts():
    a = mk(["S 10 5 a", "P 20 5 b"])
    a.header.update(runs="1", workloads="read", vcpus="2")
    b = mk(["P 10 1 a", "S 20 1 b", "P 30 4 c"])
    b.header.update(runs="2", workloads="ipc,socket", vcpus="4")
    m = training.merge([a, b])
    assert m.shared() == [0x10, 0x20]
    assert m.pcs[0x30] == [False, 4, "c"]
    assert m.header["runs"] == "3" and m.header["workloads"] == "read,ipc,socket"
    assert m.header["vcpus"] == "2,4" and m.header["accesses"] == "16"


def test_merge_refuses_other_builds():
    with pytest.raises(training.ListError, match="different kernel builds"):
        training.merge([mk([]), mk([], HDR.replace("abc", "def"))])


def test_save_writes_list_and_all(tmp_path):
    t = mk(["S 10 5 a", "P 20 5 b"])
    p = str(tmp_path / "k.pcs")
    training.save(t, p)
    lst, full = training.load(p), training.load(p + ".all")
    assert lst.shared() == [0x10] and 0x20 not in lst.pcs
    assert set(full.pcs) == {0x10, 0x20}
    assert lst.header["shared-accesses"] == "5" and lst.header["accesses"] == "10"


def test_check_image_refuses_another_kernel(tmp_path):
    (tmp_path / "vmlinuz").write_bytes(b"kernel A")
    (tmp_path / "KVER").write_text("6.1.0-56-amd64\n")
    t = mk([])
    t.header["kernel-sha256"] = training.sha256(str(tmp_path / "vmlinuz"))
    training.check_image(t, str(tmp_path))
    (tmp_path / "vmlinuz").write_bytes(b"kernel B")
    with pytest.raises(training.ListError, match="another kernel"):
        training.check_image(t, str(tmp_path))


def test_untrained_summary():
    text = ("RVUNTRAINED-TOTAL cpu=0 n=1\nRVUNTRAINED cpu=0 pc=ffffffff81000010 n=1 read phys=10\n"
            "RVUNTRAINED cpu=0 pc=ffffffff81000010 n=2 read phys=10\n"
            "RVUNTRAINED cpu=1 pc=ffffffff81000020 n=1 write phys=10\nRVUNTRAINED-TOTAL cpu=0 n=4\n")
    s = training.untrained_summary(text, lambda pc: "f+0x%x" % (pc & 0xff))
    assert s["pcs"] == 2 and s["accesses"] == 4
    assert training.untrained_line(s).startswith("UNTRAINED >=4 accesses at 2 PCs: f+0x10(2) f+0x20(1)")
    assert training.untrained_summary("nothing") is None


def test_guest_export_roundtrip():
    import base64
    import gzip
    body = base64.b64encode(gzip.compress((HDR + "S 10 1 a\n").encode())).decode()
    out = "noise\n%s\n%s\n%s\nmore\n" % (training.BEGIN, body, training.END)
    assert training.guest_export(out).shared() == [0x10]
