"""Atomic project writes: no overwrite without force, nothing half-written, the old project kept on failure."""

from __future__ import annotations

import os

import pytest

from ascend_compat.kernel_helper import SpecError, default_spec, scaffold
from ascend_compat.kernel_helper.writer import _safe_relative


def _leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_existing_directory_needs_force(tmp_path):
    target = tmp_path / "op"
    scaffold(default_spec("my_op"), target)
    (target / "mine.txt").write_text("user work")
    with pytest.raises(FileExistsError, match="--force"):
        scaffold(default_spec("my_op", compute="mul"), target)
    assert (target / "mine.txt").read_text() == "user work"
    assert "AscendC::Add(" in (target / "op_kernel" / "my_op.cpp").read_text()

    result = scaffold(default_spec("my_op", compute="mul"), target, force=True)
    # --force replaces what the scaffold wrote; a file it did not create stays (issue 17)
    assert result.replaced and (target / "mine.txt").read_text() == "user work"
    assert "AscendC::Mul(" in (target / "op_kernel" / "my_op.cpp").read_text()
    assert _leftovers(tmp_path) == []
    assert os.access(target / "build.sh", os.X_OK)


def test_a_file_in_the_way_is_an_error(tmp_path):
    (tmp_path / "op").write_text("x")
    with pytest.raises(FileExistsError, match="not a directory"):
        scaffold(default_spec("my_op"), tmp_path / "op", force=True)


def test_invalid_spec_writes_nothing(tmp_path):
    with pytest.raises(SpecError):
        scaffold(default_spec("bad-name"), tmp_path / "op")
    assert list(tmp_path.iterdir()) == []


def test_failed_swap_keeps_the_old_project(tmp_path, monkeypatch):
    target = tmp_path / "op"
    scaffold(default_spec("my_op"), target)
    real_replace = os.replace

    def failing_replace(src, dst):
        # fault injection: the move of the new project into place fails (the move of the old one aside works)
        if ".tmp-" in os.fspath(src):
            raise OSError("disk full")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        scaffold(default_spec("my_op", compute="mul"), target, force=True)
    monkeypatch.undo()
    assert "AscendC::Add(" in (target / "op_kernel" / "my_op.cpp").read_text()
    assert _leftovers(tmp_path) == []


def test_a_failed_staging_write_leaves_nothing(tmp_path, monkeypatch):
    from ascend_compat.kernel_helper import writer

    calls = []

    def full_disk(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 3:  # a few files are staged, then the disk fills up
            raise OSError("disk full")
        return open(path, *args, **kwargs)

    monkeypatch.setattr(writer, "open", full_disk, raising=False)
    with pytest.raises(OSError, match="disk full"):
        scaffold(default_spec("my_op"), tmp_path / "op")
    assert len(calls) == 3 and list(tmp_path.iterdir()) == []  # neither the project nor a staging folder


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../b", ""])
def test_paths_outside_the_project_are_refused(rel):
    with pytest.raises(ValueError, match="outside"):
        _safe_relative(rel)
