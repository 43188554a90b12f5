"""Bugs a review of the package's file writing found, each pinned by what a user sees: a read-only file replaced
behind the user's back, errors naming a temporary file nobody asked for, a replaced file changing owner, the
adaptation folder deleting the user's work on a second ``report``; and two processes writing one cache entry."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ascend_compat import _atomic

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "migrate" / "fixtures_report" / "kernelpkg"


def _as_an_ordinary_user(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` where file permissions bind: as root without the capabilities that bypass them (setpriv drops
    them from the bounding set, so the child's root is an ordinary owner), else as the current user."""
    argv = [sys.executable, "-c", textwrap.dedent(code)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop CAP_DAC_OVERRIDE")
        argv = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO)


def test_a_file_read_only_for_you_is_not_replaced(tmp_path: Path) -> None:
    # open(path, "w") refuses a file you made read-only (chmod a-w, a Perforce checkout); a rename would not.
    target = tmp_path / "train.py"
    target.write_text("old\n")
    target.chmod(0o444)
    r = _as_an_ordinary_user(f"""
        from ascend_compat import _atomic
        try:
            _atomic.write_text({str(target)!r}, "new\\n")
        except PermissionError as exc:
            print("refused:", exc)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("refused:") and str(target) in r.stdout, r.stdout
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["train.py"]


def test_a_copy_made_like_a_read_only_file_can_be_written_again(tmp_path: Path) -> None:
    # port --output copies a 0444 source's mode: running it twice must not trip over its own read-only copy.
    source = tmp_path / "src.py"
    source.write_text("x\n")
    source.chmod(0o444)
    r = _as_an_ordinary_user(f"""
        from ascend_compat import _atomic
        for text in ("one\\n", "two\\n"):
            _atomic.write_text({str(tmp_path / "copy.py")!r}, text, like={str(source)!r})
    """)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "copy.py").read_text() == "two\n"


def test_an_error_names_the_file_asked_for_not_the_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    target.write_text("old\n")

    def full(fd: int) -> None:  # fsync is where a full disk or a failing NFS server shows up
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        _atomic.write_text(target, "new\n")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert str(target) in str(info.value) and ".tmp" not in str(info.value)
    monkeypatch.undo()
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["report.json"]


@pytest.mark.parametrize(("name", "call"), [
    ("out.txt", "from ascend_compat import _atomic; _atomic.write_text({path!r}, 'x')"),
    ("op", "from ascend_compat.kernel_helper import default_spec, scaffold; scaffold(default_spec('my_op'), {path!r})"),
], ids=["atomic-write", "scaffold"])
def test_an_unwritable_directory_is_reported_by_the_path_asked_for(tmp_path: Path, name: str, call: str) -> None:
    # The error used to name the hidden temporary file (.ascend-compat-*.tmp) or folder, not what the user asked for.
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    r = _as_an_ordinary_user(f"""
        try:
            {call.format(path=str(locked / name))}
        except PermissionError as exc:
            print(exc.filename)
    """)
    locked.chmod(0o755)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(locked / name) and os.listdir(locked) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_a_replaced_file_keeps_its_owner(tmp_path: Path) -> None:
    # Root in a container porting a bind-mounted checkout: open("w") keeps the owner, so must a replacement,
    # or the user can no longer edit their own file.
    target = tmp_path / "train.py"
    target.write_text("old\n")
    os.chown(target, 65534, 65534)
    _atomic.write_text(target, "new\n")
    st = target.stat()
    assert (st.st_uid, st.st_gid, target.read_text()) == (65534, 65534, "new\n")


def test_two_processes_writing_one_cache_entry_leave_one_whole_entry(tmp_path: Path) -> None:
    code = """
        import sys
        from pathlib import Path
        from ascend_compat.superopt import cache
        for _ in range(150):
            cache.store("e" * 24, {"writer": sys.argv[1], "pad": sys.argv[1] * 50000}, root=Path(sys.argv[2]))
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), w, str(tmp_path)], cwd=REPO)
             for w in "ab"]
    entry, torn = tmp_path / ("e" * 24 + ".json"), []
    while any(p.poll() is None for p in procs):
        try:
            json.loads(entry.read_text())
        except FileNotFoundError:
            continue
        except ValueError as exc:  # half an entry
            torn.append(exc)
    assert [p.returncode for p in procs] == [0, 0] and torn == []
    assert json.loads(entry.read_text())["writer"] in "ab" and os.listdir(tmp_path) == [entry.name]


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    from ascend_compat.migrate.scan import check

    repo = tmp_path_factory.mktemp("adapt") / "kernelpkg"
    shutil.copytree(FIXTURE, repo)
    return repo, check([str(repo)], jobs=1, use_git=False)


def test_report_again_keeps_what_you_added_or_edited_in_the_adaptation_folder(
        scanned: tuple[Path, object], tmp_path: Path) -> None:
    from ascend_compat.migrate.adaptation import write_adaptation
    from ascend_compat.migrate.project import analyze

    repo, result = scanned
    folder = tmp_path / "ascend_adaptation"
    write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    kernel = folder / "kernels" / "scale_kernel" / "op_kernel" / "scale_kernel.cpp"
    generated = kernel.read_text()
    kernel.write_text(generated + "// the kernel body I ported\n")  # what section 4 asks the user to do
    (folder / "NOTES.md").write_text("my notes\n")
    (folder / "mine").mkdir()
    compat = (folder / "npu_compat.py").read_text()
    (folder / "npu_compat.py").unlink()  # a generated file removed: regenerated
    for _ in range(2):  # a second and a third run: the edit is still the user's
        ad = write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
        assert kernel.read_text() == generated + "// the kernel body I ported\n"
        assert (folder / "NOTES.md").read_text() == "my notes\n" and (folder / "mine").is_dir()
        assert (folder / "npu_compat.py").read_text() == compat
        assert ad.to_dict()["kept"] == ["NOTES.md", "kernels/scale_kernel/op_kernel/scale_kernel.cpp", "mine"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ascend_adaptation"]  # nothing left aside


def test_a_folder_from_before_the_file_list_keeps_what_the_new_run_does_not_generate(
        scanned: tuple[Path, object], tmp_path: Path) -> None:
    from ascend_compat.migrate.adaptation import MARKER, write_adaptation
    from ascend_compat.migrate.project import analyze

    repo, result = scanned
    folder = tmp_path / "ascend_adaptation"
    write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    (folder / MARKER).write_text("written by ascend-compat 0.1.0\n")  # the marker's old form
    compat = (folder / "npu_compat.py").read_text()
    (folder / "npu_compat.py").write_text("# an older generation\n")
    (folder / "kernels" / "scale_kernel" / "NOTES.md").write_text("mine\n")
    ad = write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    assert (folder / "npu_compat.py").read_text() == compat  # generated now: written
    assert (folder / "kernels" / "scale_kernel" / "NOTES.md").read_text() == "mine\n"
    assert ad.kept == ["kernels/scale_kernel/NOTES.md"]
    assert json.loads((folder / MARKER).read_text())["files"]["npu_compat.py"]


def test_a_file_of_yours_where_the_new_folder_needs_a_folder_is_refused(
        scanned: tuple[Path, object], tmp_path: Path) -> None:
    from ascend_compat.migrate.adaptation import AdaptationError, write_adaptation
    from ascend_compat.migrate.project import analyze

    repo, result = scanned
    folder = tmp_path / "ascend_adaptation"
    write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    shutil.rmtree(folder / "kernels")
    (folder / "kernels").write_text("my list of kernels\n")
    before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    with pytest.raises(AdaptationError, match="kernels in the adaptation folder is yours"):
        write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    assert (folder / "kernels").read_text() == "my list of kernels\n"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ascend_adaptation"]


CUDA = "import torch\nx = torch.ones(1).cuda()\n"


def test_port_write_over_a_read_only_file_says_so_and_writes_the_others(tmp_path: Path) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(CUDA)
    (tmp_path / "b.py").chmod(0o444)
    r = _as_an_ordinary_user(f"""
        import sys
        from ascend_compat.cli.main import main
        sys.exit(main(["port", "--no-git", "--write", {str(tmp_path)!r}]))
    """)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert f"cannot write {tmp_path / 'b.py'}: Permission denied" in r.stderr and "1 not written" in r.stderr
    assert (tmp_path / "b.py").read_text() == CUDA and ".npu()" in (tmp_path / "a.py").read_text()
    assert ".npu()" in (tmp_path / "c.py").read_text() and sorted(os.listdir(tmp_path)) == ["a.py", "b.py", "c.py"]


@pytest.mark.parametrize("midway", ["removed", "edited"])
def test_port_write_leaves_a_file_that_changed_while_it_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str], midway: str) -> None:
    # port reads every file, then writes: a file removed or saved in an editor meanwhile must stay as it is now.
    from ascend_compat.cli.main import main
    from ascend_compat.migrate import port

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(CUDA)
    real_port_paths = port.port_paths

    def port_paths(*args: object, **kwargs: object) -> list:
        results = real_port_paths(*args, **kwargs)  # type: ignore[arg-type]
        if midway == "removed":
            (tmp_path / "b.py").unlink()
        else:
            (tmp_path / "b.py").write_text(CUDA + "y = 2  # the user's edit\n")
        return results

    monkeypatch.setattr(port, "port_paths", port_paths)
    assert main(["port", "--no-git", "--write", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    said = "it was removed while port ran" if midway == "removed" else "it changed while port ran"
    assert f"cannot write {tmp_path / 'b.py'}: {said}" in err, err
    assert ".npu()" in (tmp_path / "a.py").read_text()
    if midway == "removed":
        assert sorted(os.listdir(tmp_path)) == ["a.py"]  # not brought back
    else:
        assert (tmp_path / "b.py").read_text() == CUDA + "y = 2  # the user's edit\n"


def test_scaffold_force_leaves_a_kernel_body_you_filled_in(tmp_path: Path) -> None:
    from ascend_compat.kernel_helper import default_spec, scaffold

    target = tmp_path / "op"
    scaffold(default_spec("my_op"), target)
    body = target / "op_kernel" / "my_op.cpp"
    body.write_text(body.read_text() + "// my port of the CUDA kernel\n")
    (target / "build.sh").unlink()
    (target / "build.sh").symlink_to("op_kernel")  # a generated file turned into the user's symlink
    before = {p: (p.is_symlink(), p.read_bytes() if p.is_file() else None) for p in target.rglob("*")}
    with pytest.raises(FileExistsError, match=r"build\.sh, op_kernel/my_op\.cpp in .*: edited since the scaffold"):
        scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert {p: (p.is_symlink(), p.read_bytes() if p.is_file() else None) for p in target.rglob("*")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["op"]
    body.unlink()  # moved away: --force regenerates it
    (target / "build.sh").unlink()
    scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert "AscendC::Mul(" in body.read_text()


def test_check_target_refuses_up_front_what_a_write_would_refuse(tmp_path: Path) -> None:
    # For commands that run for minutes before writing (report --verify, bench): refuse first, lose nothing.
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "file").write_text("x")
    for bad, error in ((tmp_path / "pipe", _atomic.NotRegularFileError), (tmp_path, _atomic.NotRegularFileError),
                       (tmp_path / "file" / "out.csv", NotADirectoryError)):
        with pytest.raises(error) as info:
            _atomic.check_target(bad)
        assert info.value.filename == str(bad)
    _atomic.check_target(tmp_path / "new" / "deeper" / "out.csv")  # would be created: fine
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "ro.csv").write_text("x")
    (tmp_path / "locked" / "ro.csv").chmod(0o444)
    (tmp_path / "locked").chmod(0o555)
    r = _as_an_ordinary_user(f"""
        from ascend_compat import _atomic
        for path in ({str(tmp_path / "locked" / "ro.csv")!r}, {str(tmp_path / "locked" / "new.csv")!r}):
            try:
                _atomic.check_target(path)
            except PermissionError as exc:
                print(exc.filename)
    """)
    (tmp_path / "locked").chmod(0o755)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(tmp_path / "locked" / "ro.csv"), str(tmp_path / "locked" / "new.csv")]
    assert sorted(os.listdir(tmp_path)) == ["file", "locked", "pipe"]


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_a_writer_killed_mid_write_leaves_the_old_file_and_nothing_else(tmp_path: Path, signal_name: str) -> None:
    # SIGTERM (a CI job cancelled, `timeout`) ends Python without unwinding: no `finally` removes anything.
    target = tmp_path / "report.json"
    target.write_text("old\n")
    started = tmp_path.parent / f"{tmp_path.name}.started"
    code = f"""
        import time
        from ascend_compat import _atomic

        def fill(tmp):
            with open(tmp, "wb") as fh:
                fh.write(b"half a report")
                fh.flush()
                open({str(started)!r}, "w").close()
                time.sleep(60)

        _atomic.write_with({str(target)!r}, fill)
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO)
    try:
        for _ in range(600):
            if started.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert started.exists(), "the writer never got into fill()"
        proc.send_signal(getattr(signal, signal_name))
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["report.json"]


@pytest.mark.parametrize("way", ["anonymous", "named", "unlinkable"])
def test_every_way_to_a_temporary_file_keeps_the_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       way: str) -> None:
    # anonymous: O_TMPFILE (Linux); named: where there is none (NFS, macOS); unlinkable: one it cannot name.
    if way != "named" and _atomic._anonymous(str(tmp_path)) is None:
        pytest.skip("no O_TMPFILE here")
    if way == "named":
        monkeypatch.setattr(_atomic, "_anonymous", lambda directory: None)
    if way == "unlinkable":
        def refuse(proc_path: str, name: str) -> None:
            raise OSError(errno.EPERM, "Operation not permitted")
        monkeypatch.setattr(_atomic, "_link", refuse)
    seen: list[str] = []

    def fill(text: str) -> object:
        def write(tmp: str) -> None:
            seen.append(tmp)
            with open(tmp, "w") as fh:
                fh.write(text)
        return write

    old_mask = os.umask(0o027)
    try:
        _atomic.write_with(tmp_path / "new.txt", fill("new\n"))  # type: ignore[arg-type]
    finally:
        os.umask(old_mask)
    assert (tmp_path / "new.txt").read_text() == "new\n" and (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640
    expected = {"anonymous": ["/proc/"], "named": [str(tmp_path / ".ascend-compat-")],
                "unlinkable": ["/proc/", str(tmp_path / ".ascend-compat-")]}[way]
    assert [next(p for p in expected if s.startswith(p)) for s in seen] == expected, seen
    (tmp_path / "new.txt").chmod(0o751)
    _atomic.write_with(tmp_path / "new.txt", fill("again\n"))  # type: ignore[arg-type]
    assert (tmp_path / "new.txt").read_text() == "again\n" and (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o751

    def interrupted(tmp: str) -> None:
        with open(tmp, "w") as fh:
            fh.write("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _atomic.write_with(tmp_path / "new.txt", interrupted)
    assert (tmp_path / "new.txt").read_text() == "again\n" and os.listdir(tmp_path) == ["new.txt"]


@pytest.mark.parametrize("output", ["same", "."])
def test_port_output_naming_the_input_leaves_the_originals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], output: str) -> None:
    from ascend_compat.cli.main import main

    (tmp_path / "same").mkdir()
    (tmp_path / "same" / "a.py").write_text(CUDA)
    monkeypatch.chdir(tmp_path / "same" if output == "." else tmp_path)
    assert main(["port", "--no-git", output, "--output", output]) == 2
    assert "would overwrite the original" in capsys.readouterr().err
    assert (tmp_path / "same" / "a.py").read_text() == CUDA and os.listdir(tmp_path / "same") == ["a.py"]


@pytest.mark.parametrize("make", ["directory", "fifo"])
def test_bench_refuses_a_bad_csv_before_measuring_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], make: str) -> None:
    # It used to run the whole benchmark, then fail to write and print nothing: minutes of measurements lost.
    import ascend_compat.bench as bench
    from ascend_compat.cli.main import main

    target = tmp_path / "out.csv"
    target.mkdir() if make == "directory" else os.mkfifo(target)
    def run_ops(**kwargs: object) -> None:
        raise AssertionError("the benchmark ran before --csv was checked")

    monkeypatch.setattr(bench, "run_ops", run_ops)
    assert main(["bench", "ops", "--device", "cpu", "--csv", str(target), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {target}: it is a {'directory' if make == 'directory' else 'FIFO'}" in err, err
    assert os.listdir(tmp_path) == ["out.csv"]


def test_report_into_a_fifo_is_refused_before_anything_is_written(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # It used to scan, write the adaptation folder (and run --verify), then die with a traceback at the FIFO.
    from ascend_compat.cli.main import main

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "train.py").write_text(CUDA)
    os.mkfifo(tmp_path / "report.md")
    assert main(["report", str(tmp_path / "repo"), "-o", str(tmp_path / "report.md"), "--allow-incomplete"]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {tmp_path / 'report.md'}: it is a FIFO" in err and "Traceback" not in err, err
    assert sorted(os.listdir(tmp_path)) == ["repo", "report.md"]  # no ascend_adaptation/ either
