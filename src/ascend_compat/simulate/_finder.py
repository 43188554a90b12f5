"""Make ``torch_npu`` importable under simulation, with a real module spec and distribution metadata.

The package's one ``sys.meta_path`` finder (:mod:`ascend_compat._import_hooks`) serves ``torch_npu`` (and
``torch_npu.npu``) from :class:`TorchNpuProvider`, so ``importlib.util.find_spec``, ``import torch_npu``,
transformers' ``is_torch_npu_available()`` and accelerate's ``is_npu_available()`` all see it, and
``importlib.metadata.version("torch_npu")`` gives the simulated version. Nothing is written to disk.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
from collections.abc import Sequence
from types import ModuleType
from typing import Optional

from ascend_compat import _import_hooks

_NAMES = ("torch_npu", "torch_npu.npu")
_SUMMARY = "simulated torch_npu provided by ascend-compat (no Ascend hardware)"


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return None

    def exec_module(self, module: ModuleType) -> None:
        from ascend_compat.simulate import torch_npu_compat

        torch_npu_compat.populate(module)


class TorchNpuProvider:
    """Serves the simulated torch_npu package (mode "replace": the simulator refuses to install beside a real one)."""

    def __init__(self, version: str) -> None:
        self.version = version

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in _NAMES:
            return None
        is_pkg = fullname == "torch_npu"
        spec = importlib.machinery.ModuleSpec(fullname, _Loader(), origin="ascend-compat-simulated", is_package=is_pkg)
        if is_pkg:
            spec.submodule_search_locations = []
        return spec

    def distribution(self) -> tuple[str, str]:
        """``(version, summary)`` of the simulated torch_npu distribution."""
        return self.version, _SUMMARY


def install_finder(version: str) -> None:
    """Serve ``torch_npu`` for the rest of the process (once; the simulator is never uninstalled)."""
    if not _import_hooks.provides("torch_npu"):
        _import_hooks.provide("torch_npu", lambda: TorchNpuProvider(version), metadata=True,
                              label="simulated torch_npu")
