"""A report or scaffold killed (SIGKILL) while it stages or swaps a folder: the next run finds what it left beside
the target by name and by the marker the writer keeps locked, puts the user's earlier files back or says where
they are, and never touches a folder it did not make or one a live run is still writing.

The writer is paused at a named point by ``_staging.staging_hook``, a test-only hook (nothing in the package sets
it), set inside the child before it writes; the child is then killed with SIGKILL, which runs no cleanup."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ascend_compat import _staging
from ascend_compat.kernel_helper import default_spec, scaffold
from ascend_compat.kernel_helper.writer import MARKER as SCAFFOLD_MARKER

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "migrate" / "fixtures_report" / "kernelpkg"
KERNEL = Path("kernels") / "scale_kernel" / "op_kernel" / "scale_kernel.cpp"

ADAPT = """
    from ascend_compat.migrate.adaptation import write_adaptation
    from ascend_compat.migrate.project import analyze
    from ascend_compat.migrate.scan import check
    result = check([{repo!r}], jobs=1, use_git=False)
    write_adaptation(result, analyze(result), {repo!r}, {target!r})
"""
SCAFFOLD = """
    from ascend_compat.kernel_helper import default_spec, scaffold
    scaffold(default_spec("my_op", compute="mul"), {target!r}, force=True)
"""


def until(proc: subprocess.Popen, ready: Callable[[], bool], tries: int = 2400) -> None:
    """Poll every 50 ms, at most ``tries`` times, until ``ready()`` or until ``proc`` has exited."""
    for _ in range(tries):
        if ready() or proc.poll() is not None:
            return
        time.sleep(0.05)


def killed_at(point: str, call: str, flag_dir: Path) -> None:
    """Run ``call`` in a child that pauses at ``point`` of its folder write, and SIGKILL it there."""
    paused = flag_dir / "paused"
    code = textwrap.dedent(f"""
        import time
        from ascend_compat import _staging

        def pause(point):
            if point == {point!r}:
                open({str(paused)!r}, "w").close()
                time.sleep(300)

        _staging.staging_hook = pause
    """) + textwrap.dedent(call)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    try:
        until(proc, paused.exists)
        assert paused.exists(), f"the writer never reached {point} (exit {proc.poll()})"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def adapted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(repository, adaptation folder, its parent) after a first report and the user's work in the folder."""
    from ascend_compat.migrate.adaptation import write_adaptation
    from ascend_compat.migrate.project import analyze
    from ascend_compat.migrate.scan import check

    repo = tmp_path / "kernelpkg"
    shutil.copytree(FIXTURE, repo)
    parent = tmp_path / "out"
    folder = parent / "ascend_adaptation"
    result = check([str(repo)], jobs=1, use_git=False)
    write_adaptation(result, analyze(result), str(repo), str(folder))
    kernel = folder / KERNEL
    kernel.write_text(kernel.read_text() + "// the kernel body I ported\n")
    (folder / "NOTES.md").write_text("my notes\n")
    return repo, folder, parent


def report_again(repo: Path, folder: Path) -> list[str]:
    from ascend_compat.migrate.adaptation import write_adaptation
    from ascend_compat.migrate.project import analyze
    from ascend_compat.migrate.scan import check

    result = check([str(repo)], jobs=1, use_git=False)
    return write_adaptation(result, analyze(result), str(repo), str(folder)).kept


def test_a_report_killed_between_its_renames_gets_the_folder_put_back(
        adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, folder, parent = adapted
    mine = listing(folder)
    killed_at("adaptation:aside", ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    # What the kill leaves: no folder, the user's work only in the hidden folder moved aside.
    assert not folder.exists()
    aside = [p for p in parent.iterdir() if p.name.endswith(".old")]
    assert len(aside) == 1 and aside[0].name.startswith(".ascend_adaptation.tmp-")
    assert (aside[0] / "NOTES.md").read_text() == "my notes\n"

    kept = report_again(repo, folder)
    err = capsys.readouterr().err
    assert f"put back {folder}, which a report killed midway had moved to {aside[0]}" in err, err
    assert kept == ["NOTES.md", KERNEL.as_posix()]
    assert (folder / KERNEL).read_text().endswith("// the kernel body I ported\n")
    assert listing(folder) == mine  # the same generation again, and everything of the user's
    assert [p.name for p in parent.iterdir()] == ["ascend_adaptation"]


def test_a_report_killed_while_staging_leaves_a_folder_the_next_run_removes(
        adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, folder, parent = adapted
    mine = listing(folder)
    killed_at("adaptation:staged", ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    assert listing(folder) == mine  # the folder itself was never touched
    staged = [p for p in parent.iterdir() if p.name != "ascend_adaptation"]
    assert len(staged) == 1 and (staged[0] / _staging.STAGING_MARKER).is_file()

    report_again(repo, folder)
    err = capsys.readouterr().err
    assert f"removed {staged[0]}, the staging folder of a report that was killed" in err, err
    assert listing(folder) == mine and [p.name for p in parent.iterdir()] == ["ascend_adaptation"]


def test_a_report_killed_after_its_swap_leaves_the_old_folder_the_next_run_removes(
        adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, folder, parent = adapted
    mine = listing(folder)
    killed_at("adaptation:swapped", ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    # The new folder is in place (the user's work carried in) with the staging marker still in it; the previous
    # folder is still aside.
    assert (folder / _staging.STAGING_MARKER).is_file() and (folder / "NOTES.md").read_text() == "my notes\n"
    aside = [p for p in parent.iterdir() if p.name.endswith(".old")]
    assert len(aside) == 1

    report_again(repo, folder)
    err = capsys.readouterr().err
    assert f"removed {aside[0]}, the previous folder, left by a report killed as it finished" in err, err
    assert listing(folder) == mine and [p.name for p in parent.iterdir()] == ["ascend_adaptation"]


def test_an_old_folder_whose_deletion_was_cut_short_is_removed(
        adapted: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo, folder, parent = adapted
    half = parent / ".ascend_adaptation.tmp-abc123.old"  # as _remove_aside leaves it when killed midway
    shutil.copytree(folder, half)
    _staging.mark(str(half), "adaptation", str(folder), "aside").release()
    (half / "ported").rename(parent / "elsewhere")  # part of it already deleted
    shutil.rmtree(parent / "elsewhere")
    report_again(repo, folder)
    assert f"removed {half}, the previous folder of a report that was killed" in capsys.readouterr().err
    assert [p.name for p in parent.iterdir()] == ["ascend_adaptation"]


def test_a_scaffold_force_killed_midway_is_rolled_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "op"
    scaffold(default_spec("my_op"), target)
    (target / "mine.txt").write_text("user work\n")
    before = listing(target)
    killed_at("scaffold:swapped op_kernel/my_op.cpp", SCAFFOLD.format(target=str(target)), tmp_path)
    # Half swapped: new files in place while the manifest in place still lists the old ones.
    assert listing(target) != before
    assert sorted(p.name[:8] for p in target.parent.iterdir()) == [".op.old-", ".op.tmp-", "op"]
    with pytest.raises(FileExistsError, match="already exists"):  # recovery runs first; no --force: no write
        scaffold(default_spec("my_op", compute="mul"), target)
    err = capsys.readouterr().err
    assert f"a scaffold --force of {target} was killed midway: its earlier files are back in place" in err, err
    assert listing(target) == before and [p.name for p in target.parent.iterdir()] == ["op"]
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert "AscendC::Mul(" in (target / "op_kernel" / "my_op.cpp").read_text()
    assert (target / "mine.txt").read_text() == "user work\n"


def test_an_edit_made_after_the_kill_is_never_rolled_over(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "op"
    scaffold(default_spec("my_op"), target)
    killed_at("scaffold:swapped op_kernel/my_op.cpp", SCAFFOLD.format(target=str(target)), tmp_path)
    backup = next(p for p in target.parent.iterdir() if p.name.startswith(".op.old-"))
    swapped = next(p for p in backup.rglob("*") if p.is_file() and p.name != _staging.STAGING_MARKER)
    rel = swapped.relative_to(backup)
    (target / rel).write_text("the user's edit after the crash\n")
    with pytest.raises(FileExistsError):
        scaffold(default_spec("my_op", compute="mul"), target, force=True)
    err = capsys.readouterr().err
    assert f"the earlier versions of {rel.as_posix()} are in {backup}" in err, err
    assert (target / rel).read_text() == "the user's edit after the crash\n" and swapped.is_file()


def test_a_new_scaffold_killed_after_its_rename_loses_its_stale_marker(tmp_path: Path) -> None:
    target = tmp_path / "out" / "op"
    killed_at("scaffold:renamed", SCAFFOLD.format(target=str(target)), tmp_path)
    assert (target / _staging.STAGING_MARKER).is_file()
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert not (target / _staging.STAGING_MARKER).exists() and (target / SCAFFOLD_MARKER).is_file()
    assert [p.name for p in target.parent.iterdir()] == ["op"]


def test_folders_the_tool_did_not_leave_are_never_touched(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "op"
    target.parent.mkdir()
    lookalike = target.parent / ".op.tmp-mine"  # the staging name pattern, no marker: the user's
    (lookalike / "x").mkdir(parents=True)
    forged = target.parent / ".op.tmp-other"  # a marker of another kind (a report's), or not JSON
    forged.mkdir()
    (forged / _staging.STAGING_MARKER).write_text(json.dumps({"tool": "ascend-compat", "kind": "adaptation",
                                                             "role": "staging", "target": str(target)}))
    torn = target.parent / ".op.tmp-torn"
    torn.mkdir()
    (torn / _staging.STAGING_MARKER).write_text('{"tool": "ascend-co')
    elsewhere = target.parent / ".other.tmp-abc"  # a marker for this target, but not its name pattern
    elsewhere.mkdir()
    (elsewhere / _staging.STAGING_MARKER).write_text(json.dumps({"tool": "ascend-compat", "kind": "scaffold",
                                                                "role": "staging", "target": str(target)}))
    dead = _staging.make_staging(str(target), "scaffold")  # a real leftover beside them: its lock released
    dead.release()
    scaffold(default_spec("my_op"), target)
    assert capsys.readouterr().err.splitlines() == [
        f"ascend-compat scaffold: removed {dead.path}, the staging folder of a scaffold that was killed "
        "(generated files only)"]
    assert sorted(p.name for p in target.parent.iterdir()) == [".op.tmp-mine", ".op.tmp-other", ".op.tmp-torn",
                                                               ".other.tmp-abc", "op"]


def test_a_live_writers_staging_folder_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "out" / "op"
    paused = tmp_path / "paused"
    code = textwrap.dedent(f"""
        import time
        from ascend_compat import _staging

        staging = _staging.make_staging({str(target)!r}, "scaffold")
        open({str(paused)!r}, "w").close()
        time.sleep(300)
    """)
    target.parent.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    try:
        until(proc, paused.exists, 1200)
        assert paused.exists()
        assert _staging.leftovers(str(target), "scaffold") == []  # its marker is locked: the writer is alive
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        found = _staging.leftovers(str(target), "scaffold")  # dead now: a leftover
        assert [os.path.basename(s.path)[:8] for s in found] == [".op.tmp-"]
        for s in found:
            s.release()
    finally:
        proc.kill()
        proc.wait()
