"""Hostile files for ``check``, ``report`` and ``port``: FIFOs, devices behind symlinks, huge and slow files.

Each test is a regression test of issue 17 (item 4: a FIFO hung every command; /dev/zero was read until
MemoryError; item 7: one 7 MB file cost gigabytes).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from ascend_compat.migrate.model import FileScanned, FileSkipped
from ascend_compat.migrate.scan import check, scan_file
from tests.hostile._cli import cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero are POSIX")

CUDA = "import torch\nx = torch.zeros(1).cuda()\n"


@pytest.fixture()
def hostile_tree(tmp_path: Path) -> Path:
    root = tmp_path / "f"
    root.mkdir()
    (root / "ok.py").write_text(CUDA)
    os.mkfifo(root / "p.py")
    (root / "zero.py").symlink_to("/dev/zero")
    (root / "requirements.txt").symlink_to("/dev/zero")
    os.mkfifo(root / "kernel.cu")
    return root


def _skipped(data: dict) -> dict[str, str]:
    return {os.path.basename(f["path"]): f.get("reason", "") for f in data["files"] if f["status"] == "skipped"}


def test_check_skips_fifos_and_devices_and_returns(hostile_tree: Path) -> None:
    r = cli("check", str(hostile_tree), "--no-git", "--format", "json", "--fail-on", "never", timeout=60)
    assert r.returncode == 0, r.stderr
    skipped = _skipped(json.loads(r.stdout))
    assert "FIFO" in skipped["p.py"] and "FIFO" in skipped["kernel.cu"]
    assert "/dev/zero" in skipped["zero.py"] and "character device" in skipped["zero.py"]
    assert "character device" in skipped["requirements.txt"]
    scanned = [f for f in json.loads(r.stdout)["files"] if f["status"] == "scanned"]
    assert [os.path.basename(f["path"]) for f in scanned] == ["ok.py"]


def test_report_skips_them_too(hostile_tree: Path, tmp_path: Path) -> None:
    r = cli("report", str(hostile_tree), "--no-git", "--output", str(tmp_path / "out"), timeout=60)
    assert r.returncode == 0, r.stderr
    (report,) = (tmp_path / "out").glob("CodeReview_Results_*.md")
    text = report.read_text()
    assert "| `p.py` | skipped | a FIFO, not a regular file |" in text and "/dev/zero" in text


def test_port_skips_them_and_writes_only_the_regular_file(hostile_tree: Path) -> None:
    r = cli("port", str(hostile_tree), "--no-git", "--json", "--write", timeout=60)
    assert r.returncode == 0, r.stderr
    by_name = {os.path.basename(f["path"]): f for f in json.loads(r.stdout)["files"]}
    assert by_name["ok.py"]["status"] == "changed"
    assert "FIFO" in by_name["p.py"]["reason"] and "/dev/zero" in by_name["zero.py"]["reason"]
    assert (hostile_tree / "zero.py").is_symlink() and os.readlink(hostile_tree / "zero.py") == "/dev/zero"
    assert ".npu()" in (hostile_tree / "ok.py").read_text()


def test_a_file_named_explicitly_is_never_opened_and_leaves_the_scan_incomplete(hostile_tree: Path) -> None:
    r = cli("check", str(hostile_tree / "p.py"), "--format", "json", "--fail-on", "never", timeout=30)
    (f,) = json.loads(r.stdout)["files"]
    assert r.returncode == 3 and f["status"] == "failed" and "FIFO" in f["error"]


def test_the_safe_reader_refuses_every_non_regular_file(tmp_path: Path) -> None:
    from ascend_compat.migrate.scan import Unreadable, read_bytes

    os.mkfifo(tmp_path / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        for path, kind in ((tmp_path / "fifo", "FIFO"), ("/dev/zero", "character device"),
                           (tmp_path / "sock", "socket"), (tmp_path, "directory")):
            got = read_bytes(str(path))
            assert isinstance(got, Unreadable) and kind in got.reason and not got.failed, (path, got)
    finally:
        sock.close()
    (tmp_path / "link").symlink_to(tmp_path / "fifo")
    got = read_bytes(str(tmp_path / "link"))
    assert isinstance(got, Unreadable) and got.reason.startswith(f"symlink to {tmp_path / 'fifo'}")
    missing = read_bytes(str(tmp_path / "nope"))
    assert isinstance(missing, Unreadable) and missing.failed
    (tmp_path / "small").write_bytes(b"x" * 100)
    assert read_bytes(str(tmp_path / "small")) == b"x" * 100
    assert "larger than 99 bytes" in read_bytes(str(tmp_path / "small"), max_bytes=99).reason  # type: ignore[union-attr]


def test_a_near_limit_python_file_is_skipped_with_a_reason(tmp_path: Path) -> None:
    from ascend_compat.migrate.scan import MAX_ANALYSIS_BYTES

    # One statement per line, dense with findings: parsing costs ~150x the source in memory (7 MB took 1.1 GiB).
    line = "y = torch.zeros(3).cuda() + torch.cuda.memory_allocated()\n"
    big = tmp_path / "gen.py"
    big.write_text("import torch\n" + line * (MAX_ANALYSIS_BYTES["python"] // len(line) + 10))
    result = check([str(tmp_path)], jobs=1, use_git=False)
    (f,) = result.files
    assert isinstance(f, FileSkipped) and "larger than 2 MiB" in f.reason


@pytest.mark.slow
def test_the_time_budget_skips_a_slow_file(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text("import torch\n" + "x = torch.zeros(1).cuda()\n" * 40_000)  # ~1 MB: a second or more of work
    assert isinstance(scan_file(str(slow), "python", memory=1 << 30), FileScanned)  # ~260 MB: over the default
    got = scan_file(str(slow), "python", seconds=0.05, memory=1 << 30)
    assert isinstance(got, FileSkipped) and "budget" in got.reason
