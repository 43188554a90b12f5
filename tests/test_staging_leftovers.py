"""What a killed run leaves that carries no readable staging marker: a staging folder killed before it was
marked, and the previous adaptation folder moved aside when the user deleted the new one after a kill. Real
writers in subprocesses, paused where the kill leaves the most and killed with SIGKILL (which runs no cleanup);
the pauses replace a function of :mod:`ascend_compat._staging` inside the child only (test-only)."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from ascend_compat import _staging
from ascend_compat.kernel_helper import default_spec, scaffold
from tests.test_staging_recovery import ADAPT, KERNEL, SCAFFOLD, killed_at, listing, report_again
from tests.test_staging_review import adapted  # noqa: F401 (fixture)

# Killed after mkdtemp made the staging folder, before its marker exists.
PAUSE_BEFORE_MARK = """
    import time
    real_mark = _staging.mark

    def mark(folder, kind, target, role, **extra):
        if role in ("staging", "backup"):
            open({flag!r}, "w").close()
            time.sleep(300)
        return real_mark(folder, kind, target, role, **extra)

    _staging.mark = mark
"""
# Killed after the marker file was created, before a byte of it was written (and before it was locked).
PAUSE_IN_MARK = """
    import time
    real_lock = _staging._lock

    def lock(fd, blocking):
        if blocking:
            open({flag!r}, "w").close()
            time.sleep(300)
        return real_lock(fd, blocking)

    _staging._lock = lock
"""
# Killed as the previous folder, moved aside and marked, is deleted (the new folder in place, unmarked).
PAUSE_IN_REMOVAL = """
    import time
    real_remove = _staging.remove_marked

    def remove_marked(folder):
        if folder.endswith(".old"):
            open({flag!r}, "w").close()
            time.sleep(300)
        return real_remove(folder)

    _staging.remove_marked = remove_marked
"""
PAUSES = [PAUSE_BEFORE_MARK, PAUSE_IN_MARK]


def killed_with(pause: str, call: str, flag_dir: Path) -> None:
    killed_at("never", textwrap.dedent(pause.format(flag=str(flag_dir / "paused"))) + textwrap.dedent(call),
              flag_dir)


def hidden(parent: Path, name: str) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.name != name)


@pytest.mark.parametrize("pause", PAUSES, ids=["before its marker", "as its marker was created"])
def test_a_report_killed_before_marking_its_staging_folder_leaves_nothing_after_the_next_run(
        pause: str, adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    repo, folder, parent = adapted
    mine = listing(folder)
    killed_with(pause, ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    left = hidden(parent, folder.name)
    assert len(left) == 1 and left[0].name.startswith(".ascend_adaptation.tmp-")
    assert [p.stat().st_size for p in left[0].iterdir()] in ([], [0])  # nothing, or an empty marker

    report_again(repo, folder)
    err = capsys.readouterr().err
    assert f"removed {left[0]}, an empty staging folder of a run that was killed as it started" in err, err
    assert hidden(parent, folder.name) == [], err
    assert listing(folder) == mine
    report_again(repo, folder)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("pause", PAUSES, ids=["before its marker", "as its marker was created"])
def test_a_scaffold_killed_before_marking_its_staging_folder_leaves_nothing_after_the_next_run(
        pause: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "op"
    scaffold(default_spec("my_op"), target)
    killed_with(pause, SCAFFOLD.format(target=str(target)), tmp_path)
    left = hidden(target.parent, "op")
    assert [p.name[:8] for p in left] == [".op.tmp-"]
    capsys.readouterr()
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert hidden(target.parent, "op") == []
    err = capsys.readouterr().err  # said, as report says it
    assert f"removed {left[0]}, an empty staging folder of a run that was killed as it started" in err, err
    assert "AscendC::Mul(" in (target / "op_kernel" / "my_op.cpp").read_text()


def test_an_empty_folder_of_the_staging_name_that_the_tool_cannot_have_left_is_kept(tmp_path: Path) -> None:
    """The user's folders of the staging name: an empty one with a mode mkdtemp does not give, and one holding
    anything besides an empty marker."""
    target = tmp_path / "out" / "op"
    target.parent.mkdir()
    (target.parent / ".op.tmp-open").mkdir(mode=0o755)
    os.chmod(target.parent / ".op.tmp-open", 0o755)
    full = target.parent / ".op.tmp-full"
    full.mkdir(mode=0o700)
    (full / "mine.txt").write_text("the user's\n")
    marker = target.parent / ".op.tmp-mark"
    marker.mkdir(mode=0o700)
    (marker / _staging.STAGING_MARKER).write_text("not empty")
    scaffold(default_spec("my_op"), target)
    assert sorted(p.name for p in hidden(target.parent, "op")) == [".op.tmp-full", ".op.tmp-mark", ".op.tmp-open"]
    assert (full / "mine.txt").read_text() == "the user's\n"


def test_the_previous_folder_is_kept_and_named_when_the_user_deleted_the_new_one_after_a_kill(
        adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """Killed at the last swap: the new folder in place, the previous one aside and unmarked. The user deletes
    the new folder; the previous one holds the only copy of their notes and kernel body."""
    repo, folder, parent = adapted
    mine = listing(folder)
    killed_at("adaptation:swapped", ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    (aside,) = hidden(parent, folder.name)
    shutil.rmtree(folder)
    report_again(repo, folder)  # a new folder, without the user's files
    err = capsys.readouterr().err
    assert f"{aside}, left by a report that was killed, may hold your earlier files ({folder} is gone): left as " \
        "it is" in err, err
    report_again(repo, folder)
    err = capsys.readouterr().err
    assert f"{aside}, left by a report that was killed, may hold your earlier files: NOTES.md, {KERNEL.as_posix()} " \
        f"are there and not in {folder}; left as it is" in err, err
    assert listing(aside) == mine  # the previous folder as it was, never touched

    for rel in ("NOTES.md", KERNEL):  # the user takes their files back: the previous folder is no longer needed
        shutil.copyfile(aside / rel, folder / rel)
    report_again(repo, folder)
    err = capsys.readouterr().err
    assert f"removed {aside}, the previous folder of a report that was killed (nothing of yours is only there)" \
        in err, err
    assert hidden(parent, folder.name) == [] and listing(folder) == mine
    report_again(repo, folder)
    assert capsys.readouterr().err == ""


def test_a_marked_previous_folder_is_not_deleted_while_it_holds_the_only_copy_of_the_users_files(
        adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """Killed while the previous folder, marked for deletion, was deleted; the user deletes the new folder."""
    repo, folder, parent = adapted
    mine = listing(folder)
    killed_with(PAUSE_IN_REMOVAL, ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    (aside,) = hidden(parent, folder.name)
    assert (aside / _staging.STAGING_MARKER).is_file()
    shutil.rmtree(folder)
    report_again(repo, folder)
    assert f"{aside}, left by a report that was killed, may hold your earlier files ({folder} is gone)" \
        in capsys.readouterr().err
    report_again(repo, folder)  # the folder exists again: the previous one must still not be deleted
    err = capsys.readouterr().err
    assert f"may hold your earlier files: NOTES.md, {KERNEL.as_posix()} are there and not in {folder}" in err, err
    assert {k: v for k, v in listing(aside).items() if k != _staging.STAGING_MARKER} == mine
