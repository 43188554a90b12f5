"""The adaptation folder and ``report --verify``: real files, a real run of the fixture repository on the
simulated NPU (child processes), and the command end to end."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from ascend_compat.migrate.adaptation import MARKER, AdaptationError, write_adaptation
from ascend_compat.migrate.project import analyze
from ascend_compat.migrate.report_verify import module_names, run_verification
from ascend_compat.migrate.scan import check
from tests._forkserver import cli

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


def test_a_failed_folder_swap_keeps_the_old_folder(repo: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    result = check([str(repo)], jobs=1, use_git=False)
    folder = tmp_path / "ascend_adaptation"
    write_adaptation(result, analyze(result), str(repo), str(folder))
    (folder / "npu_compat.py").write_text("# the previous run's\n")
    real_replace = os.replace

    def failing(src: str, dst: str) -> None:  # the new folder's rename into place fails (disk, permissions)
        if os.fspath(dst) == str(folder) and ".tmp-" in os.fspath(src) and not os.fspath(src).endswith(".old"):
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="disk full"):
        write_adaptation(result, analyze(result), str(repo), str(folder))
    monkeypatch.undo()
    assert (folder / "npu_compat.py").read_text() == "# the previous run's\n" and (folder / MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ascend_adaptation", "kernelpkg"]  # nothing left aside
    link = tmp_path / "link"
    link.symlink_to(folder)
    with pytest.raises(AdaptationError, match="symlink"):
        write_adaptation(result, analyze(result), str(repo), str(link))
    assert link.is_symlink() and (folder / "npu_compat.py").read_text() == "# the previous run's\n"


def test_module_names_of_first_party_packages(repo: Path) -> None:
    assert module_names(str(repo), ["kernelpkg", "mamba_ssm", "train"]) == [
        "kernelpkg", "kernelpkg.jit", "kernelpkg.model", "kernelpkg.ops", "mamba_ssm"]  # never the script


@pytest.mark.slow
def test_verification_runs_the_repository_on_the_simulated_npu(repo: Path) -> None:
    v = run_verification(str(repo), ["kernelpkg", "mamba_ssm"], budget_s=240, op_groups=["matmul", "norm"])
    assert "simulated NPU" in v["environment"]["Device"]
    mods = {m["module"]: m for m in v["imports"]["modules"]}
    assert mods["kernelpkg"]["ok"] and mods["mamba_ssm"]["ok"] and mods["kernelpkg.model"]["ok"]
    assert not mods["kernelpkg.ops"]["ok"] and "kernelpkg_cuda" in mods["kernelpkg.ops"]["error"]
    # load() of a CUDA source cannot build here: the import fails, with the reason.
    assert not mods["kernelpkg.jit"]["ok"]
    t = v["tests"]
    assert (t["passed"], t["failed"], t["timed_out"]) == (1, 1, False), t
    assert t["failures"] == [["tests/test_ops.py::test_needs_the_extension", "❌ failed",
                              "ModuleNotFoundError: No module named 'kernelpkg_cuda'"]]
    # Precision from real runs: the op checks of the groups asked for, and the models the repository builds.
    ops = v["precision"]["ops"]
    assert ops["ok"] and ops["device"] == "npu" and ops["simulated"], ops
    # Every op of the groups ("--only matmul" alone would pick the op, not the group).
    assert [r[0] for r in ops["rows"]] == ["`matmul`", "`bmm`", "`linear`", "`layer_norm`", "`rms_norm`",
                                           "`npu_rms_norm`"]
    assert all(r[4] == "✅ passed" for r in ops["rows"]) and ops["counts"]["pass"] == 18
    models = v["precision"]["models"]
    assert [r[0] for r in models["rows"]] == ["`kernelpkg.model.Block()`", "`kernelpkg.model.make_model()`"]
    assert models["rows"][0][1:] == ["(2, 16, 32)", "0", "rtol 0.0001, atol 0.0001", "✅ passed, 3 layers compared"]
    assert models["skipped"] == [["`kernelpkg.model.Tiny()`",
                                  "no Embedding/Linear/Conv/LayerNorm layer to infer an input from"]]


@pytest.mark.slow
def test_report_verify_command_end_to_end(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    r = cli("report", str(repo), "-o", str(out), "--verify", "--budget", "240", "--no-progress", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    report = Path(data["report"])
    assert report.parent == out and (out / "ascend_adaptation" / "verify_npu.py").is_file()
    text = report.read_text()
    sec5 = text[text.index("### 5.1"):text.index("### 5.3 ")]
    assert "**Import of every module of the repository** on the simulated NPU: 3 passed, 2 failed" in text, sec5
    assert "1 passed, 1 failed" in text, text[text.index("5.2"):text.index("5.3 ")]
    prec = text[text.index("### 5.3 "):text.index("### 5.4 ")]
    assert "Measured on the simulated NPU" in prec and "| `kernelpkg.model.Block()` | (2, 16, 32) | 0 |" in prec
    assert "(activation, matmul, norm; `ascend-compat verify ops --device npu --only matmul,bmm,linear," in prec
    titles = [s["title"] for s in data["sections"]]
    assert titles[4] == "5. Verification Results"


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    r = cli("report", str(tmp_path / "nope"))
    assert r.returncode == 2 and "no such file or directory" in r.stderr
    r = cli("report", str(tmp_path), "--budget", "0")
    assert r.returncode == 2 and "--budget" in r.stderr


@pytest.mark.slow
def test_a_test_that_kills_pytest_is_reported_as_a_crash(tmp_path: Path) -> None:
    from ascend_compat.migrate.report_verify import verify_tests

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "import os, signal\n\ndef test_ok():\n    pass\n\ndef test_dies():\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    t = verify_tests(str(tmp_path), simulate=False, budget_s=120)
    assert not t["timed_out"] and t["passed"] == 1, t
    assert t["crash"].startswith("pytest ended abnormally (exit ") and "SIGKILL" in t["crash"], t


@pytest.mark.slow
def test_results_before_the_budget_ran_out_are_kept(tmp_path: Path) -> None:
    from ascend_compat.migrate.report_verify import verify_tests

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "import time\n\ndef test_ok():\n    pass\n\ndef test_bad():\n    assert 1 == 2, 'wrong'\n\n"
        "def test_slow():\n    time.sleep(600)\n")
    t = verify_tests(str(tmp_path), simulate=False, budget_s=20)
    assert t["timed_out"] and (t["passed"], t["failed"]) == (1, 1), t
    assert t["failures"] == [["tests/test_a.py::test_bad", "❌ failed", "AssertionError: wrong"]]


@pytest.mark.slow
def test_smoke_forward_fills_size_arguments_and_infers_inputs(tmp_path: Path) -> None:
    from ascend_compat.migrate.report_precision import smoke_models
    from ascend_compat.migrate.report_verify import _run, _runner

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text(
        "import torch\n\n"
        "class Proj(torch.nn.Module):\n    def __init__(self, in_features, bias=True):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(in_features, 2 * in_features, bias=bias)\n"
        "    def forward(self, x):\n        return self.fc(x).relu()\n\n"
        "class Norm(torch.nn.Module):\n    def __init__(self, hidden_size, eps=1e-6):\n        super().__init__()\n"
        "        self.weight = torch.nn.Parameter(torch.ones(hidden_size))\n        self.eps = eps\n"
        "    def forward(self, x):\n"
        "        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight\n\n"
        "class NeedsConfig(torch.nn.Module):\n    def __init__(self, config):\n        super().__init__()\n\n"
        "class Broken(torch.nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(dim, dim)\n"
        "    def forward(self, x):\n        raise RuntimeError('needs the CUDA extension')\n")
    r = smoke_models(_run, _runner(True), str(tmp_path), ["pkg", "pkg.layers"], 120)
    rows = {row[0]: row[1:] for row in r["rows"]}
    assert rows["`pkg.layers.Proj(in_features=64)`"][0] == "(2, 16, 64)"
    assert rows["`pkg.layers.Proj(in_features=64)`"][3] == "✅ passed, 2 layers compared"
    assert rows["`pkg.layers.Norm(hidden_size=64)`"][0] == "(2, 16, 64)"
    assert r["skipped"] == [["`pkg.layers.Broken(dim=64)`", "RuntimeError: needs the CUDA extension"]]
    assert r["candidates"] == 3 and r["simulated"]  # NeedsConfig cannot be built: not a candidate
