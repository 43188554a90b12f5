"""What the new-user review left for the owners: a folder the scan cannot list, a FIFO named explicitly, a flat
repository's ``report --verify``, and the wording of a few messages. Each test failed on the code before the fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _clean_env

CLI = [sys.executable, "-m", "ascend_compat"]
CUDA = "import torch\nx = torch.zeros(1).cuda()\n"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions and FIFOs")


def _without_root_powers() -> list[str]:
    """The command prefix under which folder permissions hold (root lists every folder: it runs without the
    capabilities that bypass them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: every folder is readable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def _run(args: list[str], prefix: list[str] = (), cwd: Path | None = None,  # type: ignore[assignment]
         ) -> subprocess.CompletedProcess[str]:
    env = {**_clean_env(), "NO_COLOR": "1"}
    return subprocess.run([*prefix, *CLI, *args], capture_output=True, text=True, env=env, timeout=300, cwd=cwd)


@pytest.fixture()
def hidden_folder(tmp_path: Path):
    """``proj`` with a readable ``ok/b.py`` and a folder ``sub`` (holding CUDA code) that cannot be listed."""
    root = tmp_path / "proj"
    (root / "ok").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / "ok" / "b.py").write_text("import torch\n")
    (root / "sub" / "a.py").write_text(CUDA)
    (root / "sub").chmod(0)
    try:
        yield root
    finally:
        (root / "sub").chmod(0o755)  # so that pytest can remove it


def _git_init(root: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "ok"], check=True)


@pytest.mark.parametrize("use_git", [False, True])
def test_check_counts_a_folder_it_cannot_list_as_a_failure(hidden_folder: Path, use_git: bool) -> None:
    prefix = _without_root_powers()
    if use_git:
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        _git_init(hidden_folder)
    done = _run(["check", str(hidden_folder), "--format", "json", *([] if use_git else ["--no-git"])], prefix)
    assert done.returncode == 3, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["summary"]["failed"] == 1 and data["summary"]["scanned"] == 1
    (failed,) = [f for f in data["files"] if f["status"] == "failed"]
    assert failed["path"] == f"{hidden_folder / 'sub'}{os.sep}"
    assert "cannot list this folder: Permission denied" in failed["error"]
    text = _run(["check", str(hidden_folder), "--no-git"], prefix)
    assert text.returncode == 3
    listed = f"Not scanned (1 folder not listed):\n  {hidden_folder / 'sub'}{os.sep}: cannot list this folder"
    assert listed in text.stdout
    assert "(incomplete: some files could not be scanned)" in text.stdout


def test_port_and_report_fail_on_a_folder_they_cannot_list(hidden_folder: Path, tmp_path: Path) -> None:
    prefix = _without_root_powers()
    port = _run(["port", str(hidden_folder), "--no-git"], prefix)
    assert port.returncode == 3, port.stderr
    assert f"{hidden_folder / 'sub'}{os.sep}: not ported: cannot list this folder" in port.stderr
    out = tmp_path / "out"
    report = _run(["report", str(hidden_folder), "--no-git", "--no-adapt", "-o", str(out)], prefix)
    assert report.returncode == 3, report.stderr
    (written,) = out.glob("CodeReview_Results_*.md")
    assert "cannot list this folder: Permission denied" in written.read_text()


@pytest.mark.parametrize("command", ["check", "port"])
def test_a_fifo_named_explicitly_leaves_the_scan_incomplete(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    done = _run([command, str(fifo)])
    assert done.returncode == 3, done.stdout + done.stderr
    said = "not ported: " if command == "port" else ""
    reason = "a FIFO, not a regular file: named explicitly, it cannot be scanned"
    assert f"{fifo}: {said}{reason}" in done.stdout + done.stderr


def test_a_fifo_inside_a_folder_is_skipped_and_counted(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("import torch\n")
    os.mkfifo(tmp_path / "pipe.py")
    done = _run(["check", str(tmp_path), "--no-git"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 scanned, 0 failed, 1 skipped" in done.stdout
    assert "pipe.py: a FIFO, not a regular file" in done.stdout
    port = _run(["port", str(tmp_path), "--no-git"])
    assert port.returncode == 0, port.stderr
    assert "0 failed; 1 skipped unread (not regular files or over a budget; --json says why)" in port.stderr


def test_scaffold_errors_carry_the_command_prefix_and_the_cli_option(tmp_path: Path) -> None:
    assert _run(["scaffold", "my_op"], cwd=tmp_path).returncode == 0
    again = _run(["scaffold", "my_op"], cwd=tmp_path)
    assert again.returncode == 1
    assert again.stderr == f"ascend-compat scaffold: {tmp_path / 'my_op'} already exists; pass --force to replace it\n"
    as_json = _run(["scaffold", "my_op", "--json"], cwd=tmp_path)
    assert json.loads(as_json.stdout)["errors"] == [f"{tmp_path / 'my_op'} already exists; pass --force to replace it"]
    bad = _run(["scaffold", "1bad"], cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("ascend-compat scaffold: invalid operator spec:")


def test_a_precision_note_gives_a_fix_other_than_its_message(tmp_path: Path) -> None:
    from ascend_compat.migrate.scan import check

    (tmp_path / "m.py").write_text("import torch\nb = torch.matmul(torch.ones(2, 2), torch.ones(2, 2))\n")
    (note,) = [f for f in check([str(tmp_path / "m.py")], jobs=1).findings if f.code == "AC802"]
    assert note.effective_alternative == "compare results with `ascend-compat verify`"
    assert note.effective_alternative not in note.message


def test_verify_model_says_its_own_errors_without_an_exception_name(tmp_path: Path) -> None:
    script = tmp_path / "m.py"
    script.write_text("def other():\n    return None\n")
    done = _run(["verify", "model", "--simulate", "npu", f"{script}:make"])
    assert done.returncode == 2
    assert done.stderr == f"ascend-compat verify model: {script} has no 'make'\n"
    script.write_text("raise KeyError('boom')\n")  # the user's own error keeps its name
    done = _run(["verify", "model", "--simulate", "npu", f"{script}:make"])
    assert done.returncode == 2 and done.stderr.endswith("ascend-compat verify model: KeyError: 'boom'\n")


@pytest.mark.parametrize(("value", "colour"), [("", True), ("1", False), (None, True)])
def test_an_empty_no_color_is_as_if_unset(monkeypatch: pytest.MonkeyPatch, value: str | None, colour: bool) -> None:
    from ascend_compat.cli._common import use_color

    class Terminal:
        def isatty(self) -> bool:
            return True

    if value is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", value)
    assert use_color(Terminal()) is colour


FLAT_MODEL = '''"""The model."""
import torch
from dataclasses import dataclass


@dataclass
class Config:
    width: int = 8


class Net(torch.nn.Module):
    def __init__(self, config: Config = Config) -> None:
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        return x


if __name__ == "__main__":
    open("model-ran", "w").close()
'''


def _flat_repo(root: Path) -> Path:
    root.mkdir()
    (root / "model.py").write_text(FLAT_MODEL)
    (root / "train.py").write_text("from model import Net\nopen('train-ran', 'w').close()\n")
    (root / "utils.py").write_text("import train\n\ndef helper():\n    return 1\n")
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='flat')\n")
    return root


def test_top_level_files_that_only_define_things_are_importable(tmp_path: Path) -> None:
    from ascend_compat.migrate.report_scripts import top_level_modules

    root = _flat_repo(tmp_path / "flat")
    (root / "broken.py").write_text("def (:\n")
    (root / "guarded.py").write_text("import os\nif __name__ == '__main__':\n    os.remove('x')\nelse:\n    X = 1\n")
    (root / "calls.py").write_text("def f(x=print('now')):\n    pass\n")
    safe, left_out = top_level_modules(str(root))
    assert safe == ["guarded", "model"]
    assert left_out["train"] == "code at its top level" and left_out["calls"] == "code at its top level"
    assert left_out["utils"] == "imports train.py, a script"
    assert left_out["broken"].startswith("not read:") and "setup" not in left_out


def test_a_fifo_among_the_top_level_files_is_not_opened(tmp_path: Path) -> None:
    # Opening a FIFO waits for a writer: the read goes through scan.read_bytes, which never opens one. Run in a
    # child with a timeout so that a regression fails instead of hanging the suite.
    root = _flat_repo(tmp_path / "flat")
    os.mkfifo(root / "pipe.py")
    code = ("import json, sys\nfrom ascend_compat.migrate.report_scripts import top_level_modules\n"
            "print(json.dumps(top_level_modules(sys.argv[1])))")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("top_level_modules() waited on a FIFO")
    assert done.returncode == 0, done.stderr
    safe, left_out = json.loads(done.stdout)
    assert "model" in safe and left_out["pipe"] == "not read: a FIFO, not a regular file"


@pytest.mark.slow
def test_report_verify_on_a_flat_repository_imports_the_model_file_only(tmp_path: Path) -> None:
    root = _flat_repo(tmp_path / "flat")
    out = tmp_path / "out"
    done = _run(["report", str(root), "--no-git", "--no-adapt", "-o", str(out), "--verify", "--no-tests",
                 "--budget", "120", "--no-progress"])
    assert done.returncode == 0, done.stderr
    text = next(out.glob("CodeReview_Results_*.md")).read_text()
    assert "on the simulated NPU: 1 passed, 0 failed, 0 not run" in text
    assert ("Not imported, because importing a script runs it: `train.py` (code at its top level), `utils.py` "
            "(imports train.py, a script).") in text
    assert "Imported: `model`." in text
    assert not (root / "train-ran").exists() and not (root / "model-ran").exists()
