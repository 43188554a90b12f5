"""Triton detection from installed metadata and files: triton-ascend, the community wheel, and the two mixed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from ascend_compat.ecosystem import libraries, triton
from tests._forkserver import cli

ROOT = Path(__file__).resolve().parents[2]


def _site(tmp: Path, dists: dict[str, tuple[str, list[str]]], backends: list[str], libdevice: Optional[str] = None,
          ) -> Path:
    """A site-packages folder as pip leaves it: dist-info folders (METADATA, entry_points.txt) and the triton
    package with its backend folders."""
    site = tmp / "site"
    for name, (version, eps) in dists.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        if eps:
            (info / "entry_points.txt").write_text(
                "[triton.backends]\n" + "".join(f"{b} = triton.backends.{b}\n" for b in eps))
    pkg = site / "triton"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("raise ImportError('detection must not import triton')\n")
    for b in backends:
        (pkg / "backends" / b).mkdir(parents=True)
        (pkg / "backends" / b / "compiler.py").write_text("")
        (pkg / "backends" / b / "driver.py").write_text("")
    if libdevice:
        (pkg / "language" / "extra" / libdevice).mkdir(parents=True)
        (pkg / "language" / "extra" / libdevice / "libdevice.py").write_text("")
    return site


def test_triton_ascend_is_recognised_by_its_distribution_and_backend(tmp_path: Path) -> None:
    site = _site(tmp_path, {"triton-ascend": ("3.2.0", ["ascend"])}, ["ascend"], "cann")
    info = triton.detect([str(site)], npu=True)
    assert info["status"] == "triton-ascend" and info["advice"] is None
    assert info["distributions"] == {"triton-ascend": "3.2.0"}
    assert info["ascend_backend"] == "ascend" and info["entry_points"] == {"ascend": "triton-ascend"}
    assert info["libdevice"] == "triton.language.extra.cann.libdevice"
    assert "triton-ascend 3.2.0" in info["summary"] and info["source"]


def test_early_build_with_the_huawei_backend_folder(tmp_path: Path) -> None:
    site = _site(tmp_path, {"triton-ascend": ("3.2.0rc4", [])}, ["huawei"], "ascend")
    info = triton.detect([str(site)], npu=True)
    assert info["status"] == "triton-ascend" and info["ascend_backend"] == "huawei"
    assert info["libdevice"] == "triton.language.extra.ascend.libdevice"


def test_community_wheel_on_an_npu_machine_gets_advice(tmp_path: Path) -> None:
    site = _site(tmp_path, {"triton": ("3.4.0", ["nvidia", "amd"])}, ["amd", "nvidia"])
    on_npu = triton.detect([str(site)], npu=True)
    assert on_npu["status"] == "community" and on_npu["backends"] == ["amd", "nvidia"]
    assert "cannot compile" in on_npu["advice"] and "pip install triton-ascend" in on_npu["advice"]
    on_gpu = triton.detect([str(site)], npu=False)
    assert on_gpu["status"] == "community" and on_gpu["advice"] is None  # it works where CUDA is


def test_both_installed_is_a_conflict_whichever_files_won(tmp_path: Path) -> None:
    dists = {"triton": ("3.4.0", ["nvidia"]), "triton-ascend": ("3.2.0", ["ascend"])}
    overwritten = triton.detect([str(_site(tmp_path / "a", dists, ["nvidia"]))], npu=True)
    assert overwritten["status"] == "conflict" and "community triton 3.4.0's files" in overwritten["summary"]
    assert "cannot coexist" in overwritten["advice"]
    kept = triton.detect([str(_site(tmp_path / "b", dists, ["ascend", "nvidia"]))], npu=True)
    assert kept["status"] == "conflict" and "triton-ascend's files" in kept["summary"]


def test_triton_ascend_without_its_backend_is_broken(tmp_path: Path) -> None:
    site = _site(tmp_path, {"triton-ascend": ("3.2.0", ["ascend"])}, ["nvidia"])
    info = triton.detect([str(site)], npu=True)
    assert info["status"] == "broken" and "pip install triton-ascend" in info["advice"]


def test_nothing_installed(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    info = triton.detect([str(tmp_path / "empty")], npu=True)
    assert info["status"] == "not-installed" and info["advice"] is None and info["backends"] == []


def test_info_cli_reports_the_community_wheel_on_an_npu_machine(tmp_path: Path) -> None:
    site = _site(tmp_path, {"triton": ("3.4.0", ["nvidia"])}, ["nvidia"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(ROOT / "src")]), ASCEND_TOOLKIT_HOME=str(tmp_path))
    proc = cli("info", "--json", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = {r["library"]: r for r in json.loads(proc.stdout)["libraries"]}
    row = rows["triton"]
    assert row["version"] == "3.4.0" and row["triton"]["status"] == "community" and row["triton"]["npu_machine"]
    text = "\n".join(libraries.render([row]))
    assert "triton: 3.4.0" in text and "cannot compile or launch Triton kernels on the NPU" in text
