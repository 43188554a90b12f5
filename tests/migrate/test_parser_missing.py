"""Without the C/C++/CUDA parser (tree-sitter), ``check`` and ``report`` must not pass quietly over the .cu/.cpp
files: real subprocesses in which an import hook makes ``tree_sitter`` unimportable, as on a machine where it is
not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures_report" / "kernelpkg"
#: Runs the CLI with tree_sitter and tree_sitter_cuda unimportable.
BLOCKED = """
import runpy, sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tree_sitter", "tree_sitter_cuda"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, Blocker())
sys.argv = ["ascend-compat"] + sys.argv[1:]
runpy.run_module("ascend_compat", run_name="__main__")
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKED, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("noparser") / "kernelpkg"
    shutil.copytree(FIXTURE, dest)
    return dest


def test_the_blocker_really_blocks(repo: Path) -> None:
    r = subprocess.run([sys.executable, "-c", BLOCKED.replace('runpy.run_module("ascend_compat", run_name="__main__")',
                                                            "import tree_sitter")], capture_output=True, text=True)
    assert r.returncode == 1 and "No module named 'tree_sitter'" in r.stderr


def test_check_says_so_first_and_exits_incomplete(repo: Path) -> None:
    r = _cli("check", str(repo), "--no-progress", cwd=repo)
    assert r.returncode == 3, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("INCOMPLETE: 6 C/C++/CUDA files NOT analysed") and "pip install" in first
    assert "Summary (incomplete: C/C++/CUDA files not analysed" in r.stdout
    assert "C/C++/CUDA not analysed: " in r.stdout and "csrc/scale_kernel.cu" in r.stdout
    r = _cli("check", str(repo), "--no-progress", "--json", cwd=repo)
    assert r.returncode == 3 and "INCOMPLETE: 6 C/C++/CUDA files NOT analysed" in r.stderr
    data = json.loads(r.stdout)
    assert len(data["cxx_not_analysed"]["files"]) == 6 and data["extensions"]["extensions"][0]["kernels"] == []


def test_report_refuses_unless_allowed(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = _cli("report", str(repo), "-o", str(out), "--no-adapt", "--no-progress", cwd=repo)
    assert r.returncode == 3
    assert "INCOMPLETE: 6 C/C++/CUDA files NOT analysed" in r.stderr and "No report written" in r.stderr
    assert not out.exists()
    r = _cli("report", str(repo), "-o", str(out), "--no-adapt", "--no-progress", "--allow-incomplete", cwd=repo)
    assert r.returncode == 3 and "No report written" not in r.stderr
    (report,) = out.glob("CodeReview_Results_*.md")
    text = report.read_text()
    head = text[:text.index("## 1. Executive Summary")]
    assert "⚠️ **INCOMPLETE: 6 C/C++/CUDA files NOT analysed" in head
    assert "| C/C++/CUDA files analysed | ❌ 0 of 6: the C/C++/CUDA parser (tree-sitter) is missing" in text


def test_with_the_parser_nothing_is_incomplete(repo: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "ascend_compat", "check", str(repo), "--no-progress", "--json",
                        "--fail-on", "never"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "cxx_not_analysed" not in json.loads(r.stdout) and r.stderr == ""
