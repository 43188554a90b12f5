"""What a new user runs into in the first hour with the CLI: scripts given through a pipe, a folder or an
unreadable file where a script is expected, a report cut short by ``| head``, a ``doctor --root`` that is not there.

Each case gives a clear one-line error (no traceback) or does what ``python`` does with the same input."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _clean_env

CLI = [sys.executable, "-m", "ascend_compat"]
SCRIPT = "import sys\nprint('ran', sys.argv[1:], __name__)\n"


def _cli(args: list[str], input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=_clean_env(), timeout=300, input=input)


def _unreadable(tmp_path: Path) -> tuple[list[str], Path]:
    """A file this process cannot read, and the command prefix that makes it so (root reads everything: it runs
    without the capabilities that bypass file permissions)."""
    path = tmp_path / "secret.py"
    path.write_text("def f():\n    return 1\n")
    path.chmod(0)
    if os.geteuid() != 0:
        return [], path
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: every file is readable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"], path


@pytest.mark.parametrize("target", ["/dev/stdin", "-"])
def test_run_reads_a_script_from_a_pipe(target: str) -> None:
    # runpy.run_path probes a path for a zip archive first, which drains a pipe: the script then ran as empty.
    done = _cli(["run", "--backend", "cpu", target, "a", "b"], input=SCRIPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran ['a', 'b'] __main__\n"


def test_run_a_folder(tmp_path: Path, forked) -> None:
    no_main = tmp_path / "nomain"
    no_main.mkdir()
    done = forked.run(["run", "--backend", "cpu", str(no_main)])
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"can't find '__main__' module in '{no_main}'" in done.stderr
    with_main = tmp_path / "app"
    with_main.mkdir()
    (with_main / "__main__.py").write_text(SCRIPT)
    done = forked.run(["run", "--backend", "cpu", str(with_main), "x"])
    assert (done.returncode, done.stdout) == (0, "ran ['x'] __main__\n"), done.stderr


@pytest.mark.parametrize("command", [["run"], ["audit"]])
def test_run_an_unreadable_script(tmp_path: Path, command: list[str]) -> None:
    prefix, path = _unreadable(tmp_path)
    done = subprocess.run([*prefix, *CLI, *command, "--backend", "cpu", str(path)], capture_output=True, text=True,
                          env=_clean_env(), timeout=300)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"can't open file '{path}': [Errno 13] Permission denied" in done.stderr


@pytest.mark.parametrize("argv", [["superopt", "{}:f"], ["verify", "model", "--simulate", "npu", "{}:f"],
                                  ["bench", "model", "--factory", "{}:f"]])
def test_a_folder_or_fifo_as_the_python_file(tmp_path: Path, argv: list[str], forked) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in ((tmp_path, "a directory"), (fifo, "a FIFO")):
        done = forked.run([a.format(path) for a in argv], timeout=60)
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert f"{path}: {what}, not a Python file" in done.stderr


@pytest.mark.parametrize("argv", [["superopt", "{}:f"], ["bench", "model", "--factory", "{}:f"]])
def test_an_unreadable_python_file(tmp_path: Path, argv: list[str]) -> None:
    prefix, path = _unreadable(tmp_path)
    done = subprocess.run([*prefix, *CLI, *[a.format(path) for a in argv]], capture_output=True, text=True,
                          env=_clean_env(), timeout=300)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"{path}: cannot read: Permission denied" in done.stderr


def test_doctor_root_that_is_not_a_folder(tmp_path: Path, forked) -> None:
    for root in (tmp_path / "missing", tmp_path / "file"):
        if root.name == "file":
            root.write_text("")
        done = forked.run(["doctor", "--root", str(root)])
        assert done.returncode == 2
        assert done.stdout == ""
        assert f"ascend-compat doctor: --root {root}: not a directory" in done.stderr


@pytest.mark.parametrize("argv", [["error", "507035"], ["check", "--list-rules"], ["info", "--json"]])
def test_output_into_a_closed_pipe(argv: list[str]) -> None:
    # `ascend-compat ... | head -1`: the reader is gone before the output is written (small outputs fail only
    # when the buffer is flushed at exit). The command stops quietly, as a tool killed by SIGPIPE would.
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*CLI, *argv], stdout=write, stderr=subprocess.PIPE, text=True, env=_clean_env(),
                              timeout=300)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 141


@pytest.mark.parametrize("argv", [["info"], ["info", "--json"], ["run", "{script}"],
                                  ["bench", "overhead", "--repeats", "1", "--startup-repeats", "0"],
                                  ["bench", "model", "--steps", "1", "--rounds", "1"]])
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_an_unknown_backend_is_a_usage_error(tmp_path: Path, argv: list[str], how: str, forked) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('the script ran')\n")
    argv = [a.format(script=script) for a in argv]
    env = _clean_env()
    if how == "flag":
        argv = [*argv[:2], "--backend", "nosuch", *argv[2:]] if argv[0] == "bench" else \
            [argv[0], "--backend", "nosuch", *argv[1:]]
        where = "--backend"
    else:
        env["ASCEND_COMPAT_BACKEND"] = "nosuch"
        where = "ASCEND_COMPAT_BACKEND"
    done = forked.run(argv, env=env, timeout=120)
    assert done.returncode == 2
    assert (done.stdout, "Traceback" in done.stderr) == ("", False)
    assert f"{where}: unknown backend 'nosuch'; known: cpu, " in done.stderr


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_check_refuses_a_rule_code_that_matches_no_rule(tmp_path: Path, option: str, forked) -> None:
    # A typo in --select (AC3O1 for AC301) selected nothing: "no CUDA-specific code found", exit 0 in CI.
    (tmp_path / "t.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    done = forked.run(["check", "--no-git", option, "AC1,AC3O1", str(tmp_path)])
    assert done.returncode == 2
    assert done.stdout == ""
    assert "ascend-compat check: unknown rule code or prefix AC3O1 (see --list-rules)" in done.stderr
    # Known prefixes, in any case, still work: the .cuda() finding (AC1xx, a warning) is kept or left out.
    done = forked.run(["check", "--no-git", "--fail-on", "warning", option, "ac1", str(tmp_path)])
    selected = option == "--select"
    assert (done.returncode, ": AC1" in done.stdout) == ((1, True) if selected else (0, False)), done.stderr


@pytest.mark.parametrize("argv", [[], ["verify"], ["bench"]])
def test_a_missing_command_is_a_usage_error_on_stderr(argv: list[str], forked) -> None:
    # Exit 2 is a usage error: its text belongs on stderr, where `ascend-compat > out.txt` still shows it.
    done = forked.run(argv)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"usage: ascend-compat {' '.join(argv)}".rstrip())


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_audit_of_a_script_that_cannot_run_reports_no_operators(tmp_path: Path, json_flag: list[str], forked) -> None:
    # It printed "ascend-compat run: can't open file ..." and then a report of 0 operators on stdout.
    for target, code, message in ((tmp_path / "missing.py", 2, "No such file"),
                                  (tmp_path, 1, "can't find '__main__' module")):
        done = forked.run(["audit", *json_flag, "--backend", "cpu", str(target)])
        assert done.returncode == code
        assert done.stdout == ""
        assert done.stderr.startswith("ascend-compat audit: ") and message in done.stderr, done.stderr


@pytest.mark.parametrize("use_git", [False, True])
def test_a_second_check_or_report_leaves_the_adaptation_folder_out(tmp_path: Path, use_git: bool, forked) -> None:
    # `report .` writes ascend_adaptation/ (ported copies) into the project; the next `check .` counted them as the
    # user's code (15 files became 23 on nanoGPT) and the next `report .` ported its own output into itself.
    import json

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\ntorch.cuda.synchronize()\n")
    if use_git:
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        subprocess.run(["git", "init", "-q", str(proj)], check=True)
    git = [] if use_git else ["--no-git"]
    before = json.loads(forked.run(["check", "--json", *git, str(proj)]).stdout)["summary"]
    done = forked.run(["report", *git, "--no-progress", str(proj), "-o", str(proj)], cwd=str(proj))
    assert done.returncode == 0, done.stderr
    assert (proj / "ascend_adaptation" / "ported" / "train.py").is_file()
    after = json.loads(forked.run(["check", "--json", *git, str(proj)]).stdout)["summary"]
    assert (after["files"], after["findings"]) == (before["files"], before["findings"]) == (1, before["findings"])
    done = forked.run(["report", *git, "--no-progress", str(proj), "-o", str(proj)], cwd=str(proj))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (proj / "ascend_adaptation" / "ported").iterdir()) == ["train.py"]


def test_the_own_output_markers_are_the_writers_names() -> None:
    from ascend_compat import _staging
    from ascend_compat.migrate import adaptation, discover

    assert set(discover.OWN_OUTPUT_MARKERS) == {adaptation.MARKER, _staging.STAGING_MARKER}
