"""Adversarial review of folder staging and its recovery (report's adaptation folder, scaffold --force): a marker
that is a FIFO, a kill between the named checkpoints, a folder the user deleted after a kill, and two runs on the
same target at once (real subprocesses). Each test failed on the code before its fix."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ascend_compat.kernel_helper import default_spec, scaffold
from ascend_compat.kernel_helper.render import render_project
from ascend_compat.kernel_helper.writer import MARKER as SCAFFOLD_MARKER
from tests.test_staging_recovery import ADAPT, FIXTURE, KERNEL, REPO, SCAFFOLD, killed_at, listing, report_again, until


@pytest.fixture
def adapted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(repository, adaptation folder, its parent) after a first report and the user's work in the folder."""
    repo = tmp_path / "kernelpkg"
    shutil.copytree(FIXTURE, repo)
    folder = tmp_path / "out" / "ascend_adaptation"
    report_again(repo, folder)
    kernel = folder / KERNEL
    kernel.write_text(kernel.read_text() + "// the kernel body I ported\n")
    (folder / "NOTES.md").write_text("my notes\n")
    return repo, folder, folder.parent


def run_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_a_scaffold_marker_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    target = tmp_path / "op"
    target.mkdir()
    (target / "mine.txt").write_text("user work\n")
    os.mkfifo(target / ".ascend-compat-scaffold.json")  # opened for reading, it blocks until a writer comes
    proc = run_child(f"""
        from ascend_compat.kernel_helper import default_spec, scaffold
        try:
            scaffold(default_spec("my_op"), {str(target)!r}, force=True)
        except FileExistsError as exc:
            print(exc)
    """, timeout=30)
    assert "is damaged" in proc.stdout, proc.stdout + proc.stderr
    assert (target / "mine.txt").read_text() == "user work\n"


def test_a_fifo_in_place_of_a_generated_file_of_an_old_folder_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "kernelpkg"
    shutil.copytree(FIXTURE, repo)
    folder = tmp_path / "ascend_adaptation"
    folder.mkdir()
    (folder / ".ascend-compat-adaptation").write_text("written by ascend-compat 0.1\n")  # before the list
    os.mkfifo(folder / "npu_compat.py")
    proc = run_child(f"""
        from ascend_compat.migrate.adaptation import AdaptationError
        from tests.test_staging_recovery import report_again
        from pathlib import Path
        try:
            report_again(Path({str(repo)!r}), Path({str(folder)!r}))
        except AdaptationError as exc:
            print(exc)
    """, timeout=60)
    assert "npu_compat.py in the adaptation folder is not a regular file" in proc.stdout, proc.stdout + proc.stderr


PAUSE_IN_MARK = """
    import time
    real_mark = _staging.mark

    def mark(folder, kind, target, role, **extra):
        if role == "aside":
            open({flag!r}, "w").close()
            time.sleep(300)
        return real_mark(folder, kind, target, role, **extra)

    _staging.mark = mark
"""
PAUSE_IN_UNLINK = """
    import os, time
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        if str(path).endswith("ascend_adaptation/" + _staging.STAGING_MARKER):
            open({flag!r}, "w").close()
            time.sleep(300)
        return real_unlink(path, *args, **kwargs)

    os.unlink = unlink
"""


@pytest.mark.parametrize("pause", [PAUSE_IN_MARK, PAUSE_IN_UNLINK], ids=["marking the old", "unmarking the new"])
def test_a_report_killed_as_it_marks_the_old_folder_for_deletion_leaves_nothing_hidden(
        pause: str, adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Between the named checkpoints: as the old folder is marked for deletion and the new one's staging
    marker is removed (in either order, the old folder must never be left unmarked and the new one unmarked)."""
    repo, folder, parent = adapted
    mine = listing(folder)
    call = textwrap.dedent(pause.format(flag=str(tmp_path / "paused"))) + textwrap.dedent(ADAPT).format(
        repo=str(repo), target=str(folder))
    killed_at("never", call, tmp_path)
    report_again(repo, folder)
    assert listing(folder) == mine
    assert [p.name for p in parent.iterdir()] == ["ascend_adaptation"], capsys.readouterr().err


def test_a_staging_folder_holding_the_only_copy_of_the_users_files_is_never_deleted(
        adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, folder, parent = adapted
    killed_at("adaptation:staged", ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    staged = next(p for p in parent.iterdir() if p.name != folder.name)
    shutil.rmtree(folder)  # the user clears up (the staging folder is hidden); their notes live on only there
    report_again(repo, folder)  # the folder is made again, without the user's files
    assert f"{staged}, left by a report that was killed, may hold your earlier files" in capsys.readouterr().err
    report_again(repo, folder)  # a third run must not delete the only copy it just pointed the user to
    err = capsys.readouterr().err
    assert (staged / "NOTES.md").read_text() == "my notes\n", err
    assert (staged / KERNEL).read_text().endswith("// the kernel body I ported\n")
    assert f"{staged}, left by a report that was killed, may hold your earlier files: NOTES.md, {KERNEL.as_posix()}" \
        " are there and not in" in err, err


def test_a_staging_folder_is_removed_once_the_user_has_a_newer_version_of_its_files(
        adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, folder, parent = adapted
    killed_at("adaptation:staged", ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    (folder / "NOTES.tmp").write_text("my newer notes\n")  # an editor saving by rename: a new file, not a link
    (folder / "NOTES.tmp").replace(folder / "NOTES.md")
    report_again(repo, folder)
    assert "the staging folder of a report that was killed" in capsys.readouterr().err
    assert (folder / "NOTES.md").read_text() == "my newer notes\n"
    assert [p.name for p in parent.iterdir()] == ["ascend_adaptation"]
    report_again(repo, folder)
    assert capsys.readouterr().err == ""


def test_a_second_report_waits_for_a_live_one_instead_of_losing_the_users_files(
        adapted: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """A runs and is paused with the old folder moved aside; B starts on the same target; A is then killed."""
    repo, folder, parent = adapted
    mine = listing(folder)
    flag = tmp_path / "paused"
    first = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from ascend_compat import _staging

        def pause(point):
            if point == "adaptation:aside":
                open({str(flag)!r}, "w").close()
                time.sleep(300)

        _staging.staging_hook = pause
    """) + textwrap.dedent(ADAPT.format(repo=str(repo), target=str(folder)))], cwd=REPO)
    second = None
    try:
        until(first, flag.exists)
        assert flag.exists() and not folder.exists()
        log = tmp_path / "second.err"
        with open(log, "w") as stderr:
            second = subprocess.Popen([sys.executable, "-c", textwrap.dedent(ADAPT.format(repo=str(repo),
                                                                                          target=str(folder)))],
                                      cwd=REPO, stderr=stderr)
        # until it finishes (nothing holding it back) or says it waits
        until(second, lambda: "waiting for another" in log.read_text(), 1200)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        second.wait(timeout=120)
        err = log.read_text()
        assert second.returncode == 0, err
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "waiting for another ascend-compat run writing in" in err
    assert listing(folder) == mine, err  # the user's notes and kernel body, carried by the second run
    assert [p.name for p in parent.iterdir()] == ["ascend_adaptation"], err


SCAFFOLD_POINTS = [f"scaffold:swapped {rel}" for rel in [
    *sorted(render_project(default_spec("my_op", compute="mul"))), SCAFFOLD_MARKER]]


@pytest.mark.parametrize("point", SCAFFOLD_POINTS)
def test_a_scaffold_force_killed_at_any_swap_is_whole_again_after_one_run(
        point: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "op"
    scaffold(default_spec("my_op"), target)
    (target / "mine.txt").write_text("user work\n")
    killed_at(point, SCAFFOLD.format(target=str(target)), tmp_path)
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    err = capsys.readouterr().err
    assert (target / "mine.txt").read_text() == "user work\n", err
    assert "AscendC::Mul(" in (target / "op_kernel" / "my_op.cpp").read_text()
    assert [p.name for p in target.parent.iterdir()] == ["op"], err
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert capsys.readouterr().err == ""  # nothing left to clear up, nothing said


@pytest.mark.parametrize("point", ["adaptation:staged", "adaptation:aside", "adaptation:swapped"])
def test_a_report_killed_at_any_checkpoint_is_whole_after_one_run_and_quiet_after_two(
        point: str, adapted: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, folder, parent = adapted
    mine = listing(folder)
    killed_at(point, ADAPT.format(repo=str(repo), target=str(folder)), tmp_path)
    report_again(repo, folder)
    err = capsys.readouterr().err
    assert listing(folder) == mine, err
    assert [p.name for p in parent.iterdir()] == ["ascend_adaptation"], err
    report_again(repo, folder)
    assert capsys.readouterr().err == ""


def test_a_scaffold_killed_while_deleting_its_backup_leaves_nothing_hidden(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Between the named checkpoints: a kill while a folder of the run is deleted, once its marker is gone."""
    target = tmp_path / "out" / "op"
    scaffold(default_spec("my_op"), target)
    flag = tmp_path / "paused"
    code = textwrap.dedent(f"""
        import os, time
        real_unlink, gone = os.unlink, set()

        def unlink(path, *, dir_fd=None):
            full = os.path.join(os.readlink(f"/proc/self/fd/{{dir_fd}}"), path) if dir_fd is not None else path
            folder, name = os.path.split(os.path.abspath(full))
            if folder in gone:  # a file deleted after the folder's marker: the folder is no longer recognisable
                open({str(flag)!r}, "w").close()
                time.sleep(300)
            real_unlink(path, dir_fd=dir_fd)
            if name == ".ascend-compat-staging":
                gone.add(folder)

        os.unlink = unlink
    """) + textwrap.dedent(SCAFFOLD.format(target=str(target)))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    try:
        until(proc, flag.exists, 1200)
    finally:
        proc.kill()
        proc.wait()
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert [p.name for p in target.parent.iterdir()] == ["op"], capsys.readouterr().err


def test_a_scaffold_folder_the_user_deleted_after_a_kill_is_not_brought_back_in_part(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "op"
    scaffold(default_spec("my_op"), target)
    killed_at("scaffold:swapped op_kernel/my_op.cpp", SCAFFOLD.format(target=str(target)), tmp_path)
    shutil.rmtree(target)  # half old, half new: the user starts again
    scaffold(default_spec("my_op", compute="mul"), target)  # a new project, as for any missing folder
    err = capsys.readouterr().err
    assert "AscendC::Mul(" in (target / "op_kernel" / "my_op.cpp").read_text(), err
    assert [p.name for p in target.parent.iterdir()] == ["op"], err


def test_a_file_the_user_put_in_a_killed_scaffolds_staging_folder_is_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "op"
    scaffold(default_spec("my_op"), target)
    killed_at(f"scaffold:swapped {SCAFFOLD_MARKER}", SCAFFOLD.format(target=str(target)), tmp_path)
    staging = next(p for p in target.parent.iterdir() if p.name.startswith(".op.tmp-"))
    (staging / "saved-here.txt").write_text("the user's\n")  # found the hidden folder and used it
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    err = capsys.readouterr().err
    assert (staging / "saved-here.txt").read_text() == "the user's\n", err
    assert f"{staging}, left by a scaffold that was killed, holds saved-here.txt" in err
