"""The adaptation folder and ``report --verify``: real files, a real run of the fixture repository on the
simulated NPU (child processes), and the command end to end."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_compat.migrate.adaptation import MARKER, AdaptationError, write_adaptation
from ascend_compat.migrate.project import analyze
from ascend_compat.migrate.report_verify import module_names, run_verification
from ascend_compat.migrate.scan import check

FIXTURE = Path(__file__).parent / "fixtures_report" / "kernelpkg"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dest = tmp_path / "kernelpkg"
    shutil.copytree(FIXTURE, dest)
    return dest


def _umask(mask: int) -> int:
    return os.umask(mask)


def test_adaptation_folder_contents_and_safety(repo: Path, tmp_path: Path) -> None:
    result = check([str(repo)], jobs=1, use_git=False)
    folder = tmp_path / "out" / "ascend_adaptation"
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    old = _umask(0o022)
    try:
        ad = write_adaptation(result, analyze(result), str(repo), str(folder))
    finally:
        _umask(old)
    # The repository is untouched; the ported copy has port's rewrite.
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()} == before
    ported = (folder / "ported" / "train.py").read_text()
    assert 'device = "npu"' in ported and 'device = "cuda"' in (repo / "train.py").read_text()
    assert "train.py" in ad.ported
    # The user's umask, not mkstemp's 0600.
    for name in ("npu_compat.py", "verify_npu.py", "requirements-npu.txt", "ported/train.py"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o644, name
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    reqs = (folder / "requirements-npu.txt").read_text().splitlines()
    assert "triton-ascend  # replaces triton" in reqs and "numpy" in reqs
    assert any(line.startswith("# causal-conv1d: not installed on the NPU") for line in reqs)
    assert (folder / "kernels" / "scale_kernel" / "op_kernel").is_dir()
    assert not (folder / "kernels" / "rms_norm_kernel").exists()  # torch_npu has the operator
    compat = (folder / "npu_compat.py").read_text()
    assert "'kernelpkg_cuda': 'U-" in compat
    # Written again: replaces its own folder; a folder it did not write is refused.
    write_adaptation(result, analyze(result), str(repo), str(folder))
    assert (folder / MARKER).is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(AdaptationError, match="not written by ascend-compat"):
        write_adaptation(result, analyze(result), str(repo), str(mine))
    assert (mine / "notes.txt").read_text() == "keep"


def test_module_names_of_first_party_packages(repo: Path) -> None:
    assert module_names(str(repo), ["kernelpkg", "mamba_ssm", "train"]) == [
        "kernelpkg", "kernelpkg.jit", "kernelpkg.model", "kernelpkg.ops", "mamba_ssm"]  # never the script


def test_verification_runs_the_repository_on_the_simulated_npu(repo: Path) -> None:
    v = run_verification(str(repo), ["kernelpkg", "mamba_ssm"], budget_s=240)
    assert "simulated NPU" in v["environment"]["Device"]
    mods = {m["module"]: m for m in v["imports"]["modules"]}
    assert mods["kernelpkg"]["ok"] and mods["mamba_ssm"]["ok"] and mods["kernelpkg.model"]["ok"]
    assert not mods["kernelpkg.ops"]["ok"] and "kernelpkg_cuda" in mods["kernelpkg.ops"]["error"]
    # load() of a CUDA source cannot build here: the import fails, with the reason.
    assert not mods["kernelpkg.jit"]["ok"]
    t = v["tests"]
    assert (t["passed"], t["failed"], t["timed_out"]) == (1, 1, False), t
    assert t["failures"] == [["tests.test_ops::test_needs_the_extension", "❌ failed"]]


def test_report_verify_command_end_to_end(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "ascend_compat", "report", str(repo), "-o", str(out), "--verify",
                        "--budget", "240", "--no-progress", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    report = Path(data["report"])
    assert report.parent == out and (out / "ascend_adaptation" / "verify_npu.py").is_file()
    text = report.read_text()
    sec5 = text[text.index("### 5.1"):text.index("### 5.3 ")]
    assert "**Import of every module of the repository** on the simulated NPU: 3 passed, 2 failed" in text, sec5
    assert "1 passed, 1 failed" in text, text[text.index("5.2"):text.index("5.3 ")]
    titles = [s["title"] for s in data["sections"]]
    assert titles[4] == "5. Verification Results"


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "ascend_compat", "report"]
    r = subprocess.run([*run, str(tmp_path / "nope")], capture_output=True, text=True)
    assert r.returncode == 2 and "no such file or directory" in r.stderr
    r = subprocess.run([*run, str(tmp_path), "--budget", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--budget" in r.stderr
