"""``ascend_compat._atomic``, the one way the package replaces a file, and every writer that goes through it: real
files, modes from a real umask, real FIFOs and symlinks, a real CLI process."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import pytest

from ascend_compat import _atomic
from tests._forkserver import cli


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    """Set the process umask for the test; restored afterwards."""
    old = os.umask(0o022)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
@pytest.mark.parametrize("kind", ["text", "bytes"])
def test_a_new_file_gets_the_umask_mode(tmp_path: Path, umask: Callable[[int], None], mask: int, kind: str) -> None:
    umask(mask)
    target = tmp_path / "new.txt"
    if kind == "text":
        assert _atomic.write_text(target, "héllo\r\nworld\n") == str(target)
        assert target.read_bytes() == "héllo\r\nworld\n".encode()  # written as is: no newline translation
    else:
        _atomic.write_bytes(target, b"\x00\xff\x80binary")
        assert target.read_bytes() == b"\x00\xff\x80binary"
    assert _mode(target) == 0o666 & ~mask  # not mkstemp's 0600
    assert _atomic.new_file_mode() == 0o666 & ~mask and _atomic.umask() == mask


def test_a_replaced_file_keeps_its_mode_or_that_of_like(tmp_path: Path, umask: Callable[[int], None]) -> None:
    umask(0o022)
    existing = tmp_path / "run.sh"
    existing.write_text("old\n")
    existing.chmod(0o751)
    _atomic.write_text(existing, "new\n")
    assert existing.read_text() == "new\n" and _mode(existing) == 0o751
    model = tmp_path / "model.py"
    model.write_text("x\n")
    model.chmod(0o600)
    _atomic.write_text(tmp_path / "out" / "copy.py", "y\n", like=model)  # missing parents are created
    assert _mode(tmp_path / "out" / "copy.py") == 0o600 and _hidden(tmp_path / "out") == []


def test_a_replaced_file_loses_setuid_and_setgid_as_a_write_would(tmp_path: Path) -> None:
    # Writing to a file clears its set-id bits; a replacement must not carry them over to new content.
    tool = tmp_path / "tool"
    tool.write_text("old\n")
    tool.chmod(0o6755)
    _atomic.write_text(tool, "new\n")
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_fill_leaves_the_old_file_and_no_temporary(tmp_path: Path, error: BaseException) -> None:
    target = tmp_path / "f.json"
    target.write_text("old\n")

    def fill(tmp: str) -> None:
        with open(tmp, "w") as fh:
            fh.write("half a ")
        raise error

    with pytest.raises(type(error)):
        _atomic.write_with(target, fill)
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["f.json"]


@pytest.mark.parametrize("step", ["fsync", "chmod", "replace"])
def test_an_interrupt_at_any_step_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      step: str) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old\n")

    def interrupt(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, step, interrupt)
    with pytest.raises(KeyboardInterrupt):
        _atomic.write_text(target, "new\n")
    monkeypatch.undo()
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["f.txt"]


def test_unencodable_text_touches_nothing(tmp_path: Path) -> None:
    with pytest.raises(UnicodeEncodeError):
        _atomic.write_text(tmp_path / "f.txt", "\udcff")
    assert os.listdir(tmp_path) == []


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


def _link_to_directory(path: Path) -> Path:
    (path.parent / "real_dir").mkdir()
    path.symlink_to("real_dir")
    return path


@pytest.mark.parametrize(("make", "says"), [(_directory, "a directory"), (_fifo, "a FIFO"),
                                            (_link_to_directory, "a directory")])
def test_only_a_regular_file_is_replaced(tmp_path: Path, make: Callable[[Path], Path], says: str) -> None:
    target = make(tmp_path / "out")
    before = os.lstat(target)
    with pytest.raises(_atomic.NotRegularFileError, match=f"it is {says}, not a regular file") as info:
        _atomic.write_text(target, "x\n")
    assert info.value.filename == str(target)
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)  # the very same node, untouched
    assert _hidden(tmp_path) == []


def test_a_symlink_stays_and_its_target_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    assert _atomic.write_text(tmp_path / "link.txt", "new\n") == str(tmp_path / "real.txt")
    assert os.readlink(tmp_path / "link.txt") == "real.txt" and (tmp_path / "real.txt").read_text() == "new\n"


def test_concurrent_writers_leave_one_whole_version(tmp_path: Path) -> None:
    target = tmp_path / "entry.json"
    payloads = [json.dumps({"writer": i, "pad": "x" * 20000 * (i + 1)}) for i in range(6)]
    errors: list[BaseException] = []

    def writer(text: str) -> None:
        try:
            for _ in range(20):
                _atomic.write_text(target, text, fsync=False)
        except BaseException as exc:  # collected: asserted in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_text() in payloads and os.listdir(tmp_path) == ["entry.json"]


def test_check_output_refuses_a_fifo_and_a_directory(tmp_path: Path) -> None:
    """``check -o`` once renamed its report over whatever was there (a FIFO, even ``/dev/null`` as root)."""
    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    fifo = _fifo(tmp_path / "pipe")
    r = cli("check", str(tmp_path / "train.py"), "-o", str(fifo))
    assert r.returncode == 2 and "cannot write" in r.stderr and "a FIFO" in r.stderr, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    r = cli("check", str(tmp_path / "train.py"), "-o", str(tmp_path))
    assert r.returncode == 2 and "a directory" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert _hidden(tmp_path) == []


def _bench_csv(directory: Path) -> list[Path]:
    from ascend_compat.bench import output

    output.write_text(str(directory / "report.csv"), "a,b\n1,2\n")
    return [directory / "report.csv"]


def _superopt_cache(directory: Path) -> list[Path]:
    from ascend_compat.superopt import cache

    return [cache.store("k" * 24, {"kernels": []}, root=directory)]


def _superopt_save(directory: Path) -> list[Path]:
    from ascend_compat.superopt.core import OptimizedGraph

    plan = SimpleNamespace(kernels=[{"name": "fused_0", "source": "X = 1\n"}], record={"target": "t", "kernels": []})
    return OptimizedGraph.save(plan, str(directory))  # type: ignore[arg-type]


def _superopt_module(directory: Path) -> list[Path]:
    from ascend_compat.superopt.runtime import load_module

    assert load_module("VALUE = 41 + 1\n", "atomic_probe", directory, interpret=False).VALUE == 42
    return [directory / "atomic_probe.py"]


def _migrate_atomic(directory: Path) -> list[Path]:
    from ascend_compat.migrate.atomic import write_atomic

    write_atomic(str(directory / "ported.py"), "x = 1\n")
    return [directory / "ported.py"]


@pytest.mark.parametrize("write", [_bench_csv, _superopt_cache, _superopt_save, _superopt_module, _migrate_atomic])
def test_every_writer_gives_new_files_the_umask_mode(tmp_path: Path, umask: Callable[[int], None],
                                                     write: Callable[[Path], list[Path]]) -> None:
    umask(0o027)
    paths = write(tmp_path)
    assert paths and {p.name: _mode(p) for p in paths} == {p.name: 0o640 for p in paths}
    assert _hidden(tmp_path) == []


def test_scaffold_files_follow_the_umask(tmp_path: Path, umask: Callable[[int], None]) -> None:
    from ascend_compat.kernel_helper import default_spec, scaffold

    umask(0o002)  # a group-shared checkout: group members may edit the generated project
    result = scaffold(default_spec("my_op"), tmp_path / "op")
    modes = {rel: _mode(result.path / rel) for rel in result.files}
    assert modes.pop("build.sh") == 0o775 and set(modes.values()) == {0o664}
    assert _mode(result.path) == 0o775 and _hidden(tmp_path) == []
