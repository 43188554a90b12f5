"""Declarative backends: one detection order, overrides, third-party registration."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ascend_compat import backends
from tests.conftest import ROOT, _clean_env, run_python


def test_builtin_backends_are_data():
    npu = backends.get_backend("npu")
    assert (npu.device_type, npu.adapter_module, npu.collective_backend, npu.visible_devices_env) == (
        "npu",
        "torch_npu",
        "hccl",
        "ASCEND_RT_VISIBLE_DEVICES",
    )
    names = [b.name for b in backends.all_backends()]
    assert names[0] == "npu" and names[-1] == "cpu"
    assert {"mlu", "musa", "xpu", "mps"} <= set(names)
    with pytest.raises(ValueError, match="unknown backend"):
        backends.get_backend("tpu")


def test_override_and_registration(monkeypatch):
    class FakeBackend(backends.Backend):
        name = "fake"
        device_type = "cpu"
        collective_backend = "gloo"

    backends.register(FakeBackend)
    try:
        names = [b.name for b in backends.all_backends()]
        assert names.index("fake") == names.index("cpu") - 1
        monkeypatch.setenv("ASCEND_COMPAT_BACKEND", "fake")
        found = backends.detect()
        assert found.backend is FakeBackend and "requested" in found.reason
    finally:
        backends.DETECTION_ORDER.remove(FakeBackend)
        backends._REGISTRY.pop("fake")


# The README's example, verbatim (cuda-morph: "Adding a new backend").
SEED_BACKEND = '''
from ascend_compat.backends.registry import BackendInfo

class MyVendorBackend(BackendInfo):
    name = "myvendor"
    device_type = "mydev"
    adapter_module = "torch_mydev"
    collective_backend = "myccl"
    visible_devices_env = "MYDEV_VISIBLE_DEVICES"
    display_name = "MyVendor Accelerator"

    @staticmethod
    def is_available() -> bool:
        try:
            import torch_mydev
            import torch
            return torch.mydev.is_available()
        except Exception:
            return False
'''
# A stand-in vendor adapter: importing it gives torch a `mydev` module that reports a device.
FAKE_ADAPTER = "import types, torch\ntorch.mydev = types.SimpleNamespace(is_available=lambda: True)\n"


def _vendor_dir(tmp_path: Path, adapter: bool = True) -> Path:
    tmp_path.joinpath("myvendor_backend.py").write_text(SEED_BACKEND)
    if adapter:
        tmp_path.joinpath("torch_mydev.py").write_text(FAKE_ADAPTER)
    return tmp_path


def test_builtin_backends_are_backendinfo_subclasses_with_display_names():
    from ascend_compat.backends.registry import BackendInfo

    assert backends.Backend is BackendInfo
    for b in backends.all_backends():
        assert issubclass(b, BackendInfo) and b.display_name, b
    assert backends.get_backend("npu").display_name.startswith("Huawei Ascend NPU")
    assert backends.get_backend("cpu").is_available() is True
    with pytest.raises(TypeError, match="BackendInfo subclass"):
        backends.register(object)  # type: ignore[arg-type]

    class Nameless(BackendInfo):
        device_type = "cpu"

    with pytest.raises(TypeError, match="'name'"):
        backends.register(Nameless)


def test_readme_backend_registers_and_is_detected(tmp_path: Path):
    proc = run_python(
        """
        from ascend_compat import backends
        from myvendor_backend import MyVendorBackend
        assert backends.register(MyVendorBackend) is MyVendorBackend   # as a line in backends/__init__.py
        names = [b.name for b in backends.all_backends()]
        assert names.index("myvendor") == names.index("cpu") - 1, names
        assert backends.get_backend("myvendor") is MyVendorBackend and MyVendorBackend.available()
        found = backends.detect()
        print("CHOSEN", found.backend.name, found.backend.collective_backend, found.reason)
        class Again(MyVendorBackend):
            display_name = "v2"
        backends.register(Again)  # same name: replaced where it stood, not listed twice
        assert [b.name for b in backends.all_backends()].count("myvendor") == 1
        assert backends.get_backend("myvendor") is Again
        """,
        env={"PYTHONPATH": str(_vendor_dir(tmp_path))},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CHOSEN myvendor myccl torch_mydev found" in proc.stdout


def test_readme_backend_without_its_adapter_is_not_available(tmp_path: Path):
    proc = run_python(
        """
        from ascend_compat import backends
        from myvendor_backend import MyVendorBackend
        backends.register(MyVendorBackend)
        assert not MyVendorBackend.installed() and not MyVendorBackend.is_available()
        print("CHOSEN", backends.detect().backend.name)
        """,
        env={"PYTHONPATH": str(_vendor_dir(tmp_path, adapter=False))},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CHOSEN cpu" in proc.stdout


def test_entry_point_backend_is_discovered_by_info_and_a_broken_one_is_skipped(tmp_path: Path):
    site = _vendor_dir(tmp_path)
    dist = site / "myvendor_compat-0.1.dist-info"
    dist.mkdir()
    dist.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: myvendor-compat\nVersion: 0.1\n")
    dist.joinpath("entry_points.txt").write_text(
        "[ascend_compat.backends]\nmyvendor = myvendor_backend:MyVendorBackend\nbroken = no_such_module:Nope\n"
    )
    env = {**_clean_env(), "PYTHONPATH": str(site)}
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "info", "--json"], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["chosen"] == "myvendor" and "entry point" in data["reason"], data["reason"]
    row = next(r for r in data["backends"] if r["name"] == "myvendor")
    assert row["display_name"] == "MyVendor Accelerator" and row["collective_backend"] == "myccl"
    assert row["visible_devices_env"] == "MYDEV_VISIBLE_DEVICES" and row["available"] is True
    assert "broken" in proc.stderr and "skipped" in proc.stderr


def _age(path: Path, seconds: float = 60.0) -> None:
    """Make ``path`` look modified ``seconds`` ago (a directory just written is never cached)."""
    import os
    import time

    then = time.time() - seconds
    os.utime(path, (then, then))


def _other_distribution(site: Path) -> None:
    """A distribution that declares entry points, none of them a backend."""
    dist = site / "other_tool-1.0.dist-info"
    dist.mkdir()
    dist.joinpath("entry_points.txt").write_text("[console_scripts]\nother = other:main\n")


#: Detection in a fresh interpreter, counting the scans of every installed distribution's metadata.
DETECT_COUNTING_SCANS = """
import torch  # first: torch reads its own entry points (torch.backends) at import
import importlib.metadata as md
scans = []
real = md.entry_points
md.entry_points = lambda *a, **k: scans.append(1) or real(*a, **k)
from ascend_compat import backends
found = backends.detect()
print("CHOSEN", found.backend.name, "SCANS", len(scans))
"""


def test_detection_scans_distributions_only_when_one_may_declare_a_backend(tmp_path: Path):
    # Issue 15: the ~4 ms scan of every distribution is skipped when a cached per-directory check finds no
    # distribution mentioning the entry-point group; installing one changes its directory, which is noticed.
    (tmp_path / "site").mkdir()
    site = _vendor_dir(tmp_path / "site")
    _other_distribution(site)  # a site directory holds distributions: its answer is worth caching
    _age(site)
    cache = tmp_path / "cache"
    env = {"PYTHONPATH": str(site), "ASCEND_COMPAT_CACHE_DIR": str(cache)}

    def chosen() -> str:
        proc = run_python(DETECT_COUNTING_SCANS, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout.split("CHOSEN ")[1].strip()

    assert chosen() == "cpu SCANS 0"  # cold cache: each directory listed once, nothing parsed
    cached = json.loads((cache / "backend-entry-points.json").read_text())["dirs"]
    assert cached[str(site)][1] is False
    assert chosen() == "cpu SCANS 0"  # warm cache
    dist = site / "myvendor_compat-0.1.dist-info"
    dist.mkdir()
    dist.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: myvendor-compat\nVersion: 0.1\n")
    entry = "myvendor = myvendor_backend:MyVendorBackend"
    dist.joinpath("entry_points.txt").write_text(f"[ascend_compat.backends]\n{entry}\n")
    assert chosen() == "myvendor SCANS 1"  # the directory changed (too recently to be cached): listed again
    _age(site)
    assert chosen() == "myvendor SCANS 1"
    assert json.loads((cache / "backend-entry-points.json").read_text())["dirs"][str(site)][1] is True


def test_the_entry_point_check_answers_maybe_for_what_it_cannot_list(tmp_path: Path, monkeypatch):
    from ascend_compat.backends import _entry_point_cache as epc

    monkeypatch.setenv("ASCEND_COMPAT_CACHE_DIR", str(tmp_path / "cache"))
    import importlib.machinery

    # Only the standard finders (in-process tests may have left the simulator's, which lists torch_npu).
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if isinstance(f, type)])
    assert importlib.machinery.PathFinder in sys.meta_path
    archive = tmp_path / "vendor.zip"
    archive.write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(archive)])
    assert epc.group_may_be_declared("ascend_compat.backends")  # a zip on sys.path: let the exact scan read it
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing")])
    assert not epc.group_may_be_declared("ascend_compat.backends")

    class ListsDistributions:
        def find_spec(self, *args: object) -> None:
            return None

        def find_distributions(self, context: object = None) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [ListsDistributions(), *sys.meta_path])
    assert epc.group_may_be_declared("ascend_compat.backends")  # a custom finder may list any distribution


def test_get_backend_of_a_builtin_name_uses_the_check_and_all_backends_scans(tmp_path: Path):
    proc = run_python(
        """
        import torch
        import importlib.metadata as md
        scans = []
        real = md.entry_points
        md.entry_points = lambda *a, **k: scans.append(1) or real(*a, **k)
        from ascend_compat import backends
        assert backends.get_backend("cpu").name == "cpu" and not scans
        assert backends.all_backends()[-1].name == "cpu" and len(scans) == 1
        backends.all_backends()
        print("SCANS", len(scans))
        """,
        env={"ASCEND_COMPAT_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SCANS 1" in proc.stdout


def test_info_lists_every_patch_as_data_and_no_mps_or_xpu_on_a_linux_cpu_torch():
    env = {**_clean_env()}
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "info", "--patches", "--json"], capture_output=True,
                          text=True, env=env, cwd=str(ROOT), timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["core"]) >= 15 and len(data["library"]) >= 3
    for entry in data["core"] + data["library"]:
        assert entry["name"] and entry["why"] and entry["tested"] and entry["backends"], entry
    assert {"torch.device", "Tensor moves", "torch.cuda", "host fallback"} <= {p["name"] for p in data["core"]}
    text = subprocess.run([sys.executable, "-m", "ascend_compat", "info", "--patches"], capture_output=True,
                          text=True, env=env, cwd=str(ROOT), timeout=120).stdout  # fmt: skip
    assert "core torch patches" in text and "why:" in text
    if sys.platform == "linux":
        import torch

        if not torch.xpu._is_compiled():
            assert not backends.get_backend("xpu").installed()
        assert not backends.get_backend("mps").installed()


def test_what_a_cuda_ordinal_means_is_the_backends():
    # Issue 20: the shim asks the backend (BackendInfo.cuda_device) which device "cuda:N" is; CPU fallback maps every
    # ordinal to the host, an accelerator keeps the ordinal, and a backend of one's own may decide otherwise.
    import torch

    cpu, xpu = backends.get_backend("cpu"), backends.get_backend("xpu")  # a device type every torch build names
    assert cpu.cuda_device(torch.device, 3) == torch.device("cpu") == cpu.cuda_device(torch.device)
    assert xpu.cuda_device(torch.device, 3) == torch.device("xpu", 3)
    assert xpu.cuda_device(torch.device) == torch.device("xpu")
    proc = run_python(
        """
import torch
from ascend_compat import backends, cuda_shim

class MetaBackend(backends.CPUBackend):  # the CPU fallback, but "cuda:N" is the meta device
    name = "metadev"

    @classmethod
    def cuda_device(cls, real, index=None):
        return real("meta")

backends.register(MetaBackend)
cuda_shim.activate("metadev")
print(torch.zeros(2, device="cuda:1").device, torch.ones(1).to("cuda").device, torch.device("cuda:0"))
cuda_shim.deactivate()
cuda_shim.activate("cpu")
print(torch.zeros(2, device="cuda:1").device, torch.device("cuda:2"))
"""
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["meta meta meta", "cpu cpu"]


def _entry_point_asker(folder: Path, cache: Path) -> Callable[[], str]:
    """A fresh interpreter's answer, with ``folder`` alone on ``sys.path`` and the cache under ``cache``, to
    "may a distribution declare a backend entry point?", and whether the scanning module was imported for it."""
    probe = f"""
import json, sys  # json: the cache's format, imported before sys.path holds only the test's directory
from ascend_compat import backends
sys.path[:] = [{str(folder)!r}]
print(backends._group_may_be_declared("ascend_compat.backends"),
      "ascend_compat.backends._entry_point_cache" in sys.modules)
"""

    def ask() -> str:
        proc = run_python(probe, env={"ASCEND_COMPAT_CACHE_DIR": str(cache)})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    return ask


def test_the_entry_point_check_answers_from_a_warm_cache_without_its_scanning_module(tmp_path: Path):
    # Issue 15: when every sys.path directory is a cache hit, detection answers in backends/__init__ without
    # importing _entry_point_cache (which lists and writes); a directory that changed goes through that module.
    site = tmp_path / "site"
    site.mkdir()
    _other_distribution(site)
    _age(site)
    ask = _entry_point_asker(site, tmp_path / "cache")

    assert ask() == "False True"  # cold: listed, and cached
    assert ask() == "False False"  # warm: answered from the cache alone
    dist = site / "vendor-1.0.dist-info"
    dist.mkdir()
    dist.joinpath("entry_points.txt").write_text("[ascend_compat.backends]\nv = v:V\n")
    _age(site, 30.0)
    assert ask() == "True True"  # the directory changed: listed again
    assert ask() == "True False"


def test_a_small_folder_that_has_not_changed_for_an_hour_is_cached(tmp_path: Path):
    # The standard library's folder (~200 entries, no distribution) is small too, but never changes: listed on
    # every activation it cost ~0.4 ms. A small folder unchanged for an hour is scanned once, then a cache hit.
    stdlib = tmp_path / "lib"
    stdlib.mkdir()
    for i in range(200):
        stdlib.joinpath(f"m{i}.py").write_text("")
    _age(stdlib, 2 * 3600.0)
    cache = tmp_path / "cache"
    ask = _entry_point_asker(stdlib, cache)

    assert ask() == "False True"  # scanned once, and cached
    assert str(stdlib) in (cache / "backend-entry-points.json").read_text()
    assert ask() == "False False"  # from the cache: not listed again


def test_a_small_folder_without_distributions_is_listed_not_cached(tmp_path: Path):
    # The script's folder heads sys.path and changes between runs (an editor saving by rename, a log or checkpoint
    # written there): were its answer cached, most runs would rewrite the cache file (~1 ms, the scanning module
    # imported). A small folder with no *.dist-info / *.egg-info is listed instead, and nothing is written.
    project = tmp_path / "project"
    project.mkdir()
    for i in range(20):
        project.joinpath(f"f{i}.py").write_text("")
    _age(project)
    cache = tmp_path / "cache"
    ask = _entry_point_asker(project, cache)

    assert ask() == "False False"
    project.joinpath("checkpoint.pt").write_text("")  # the folder changed since: still no write
    _age(project, 30.0)
    assert ask() == "False False"
    assert not (cache / "backend-entry-points.json").exists()
    dist = project / "vendor-1.0.dist-info"  # a distribution there: the scan reads it, as before
    dist.mkdir()
    dist.joinpath("entry_points.txt").write_text("[ascend_compat.backends]\nv = v:V\n")
    assert ask() == "True True"
    for i in range(300):  # a large folder: listed once by the scan, then cached
        project.joinpath(f"g{i}.txt").write_text("")
    dist.joinpath("entry_points.txt").unlink()
    dist.rmdir()
    _age(project, 30.0)
    assert ask() == "False True"
    assert ask() == "False False"
