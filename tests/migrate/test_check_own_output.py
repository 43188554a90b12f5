"""``check`` leaves out ascend-compat's own output (``report``'s adaptation folder, a folder staged for it) and says
so: one line on stderr naming the folders, and ``own_output_skipped`` in ``--json``, so that a file count that
leaves them out does not puzzle the user. CLI runs in processes of their own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ascend_compat import _staging
from ascend_compat.migrate.adaptation import MARKER
from tests._forkserver import cli as forked_cli

CUDA_CODE = "import torch\nx = torch.ones(2).cuda()\n"
LINE = ("ascend-compat check: left out ascend-compat's own output (report's adaptation folder; its files are in no "
        "count)")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return forked_cli(*args, cwd=cwd, env=env, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with one file of the user's and an adaptation folder holding a ported copy of it."""
    proj = tmp_path / "proj"
    (proj / "ascend_adaptation" / "ported").mkdir(parents=True)
    (proj / "train.py").write_text(CUDA_CODE)
    (proj / "ascend_adaptation" / "ported" / "train.py").write_text(CUDA_CODE)
    (proj / "ascend_adaptation" / MARKER).write_text("written by ascend-compat 0.1\n")
    return proj


@pytest.mark.parametrize("git", [False, True], ids=["walked", "git"])
def test_check_names_the_adaptation_folder_it_leaves_out(project: Path, git: bool) -> None:
    if git:
        if shutil.which("git") is None:
            pytest.skip("no git")
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    flags = [] if git else ["--no-git"]
    text = cli("check", "--no-progress", *flags, "proj", cwd=project.parent)
    assert text.stderr.splitlines() == [f"{LINE}: {os.path.join('proj', 'ascend_adaptation')}"], text.stderr
    assert "1 scanned" in text.stdout

    done = cli("check", "--json", *flags, "proj", cwd=project.parent)
    data = json.loads(done.stdout)
    assert data["own_output_skipped"] == [os.path.join("proj", "ascend_adaptation")]
    assert data["summary"]["files"] == 1 and [f["path"] for f in data["files"]] == [os.path.join("proj", "train.py")]
    assert done.stderr.splitlines() == [f"{LINE}: {os.path.join('proj', 'ascend_adaptation')}"]


def test_a_staging_folder_a_killed_report_left_is_named_too(project: Path) -> None:
    staged = project / ".ascend_adaptation.tmp-abc123"
    staged.mkdir()
    (staged / _staging.STAGING_MARKER).write_text("{}")
    (staged / "npu_compat.py").write_text(CUDA_CODE)
    done = cli("check", "--json", "--no-git", ".", cwd=project)
    assert json.loads(done.stdout)["own_output_skipped"] == [".ascend_adaptation.tmp-abc123", "ascend_adaptation"]
    assert done.stderr.splitlines() == [f"{LINE}: .ascend_adaptation.tmp-abc123, ascend_adaptation"]


def test_nothing_left_out_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(CUDA_CODE)
    done = cli("check", "--json", "--no-git", ".", cwd=tmp_path)
    assert json.loads(done.stdout)["own_output_skipped"] == [] and done.stderr == ""
    text = cli("check", "--no-progress", "--no-git", ".", cwd=tmp_path)
    assert text.stderr == ""


def test_the_folder_named_explicitly_is_scanned_and_not_reported_as_left_out(project: Path) -> None:
    done = cli("check", "--json", "--no-git", "ascend_adaptation", cwd=project)
    data = json.loads(done.stdout)
    assert data["own_output_skipped"] == [] and data["summary"]["files"] == 1 and done.stderr == ""
