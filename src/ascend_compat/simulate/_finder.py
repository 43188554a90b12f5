"""Make ``torch_npu`` importable under simulation, with a real module spec and distribution metadata.

A ``sys.meta_path`` finder answers ``torch_npu`` (and ``torch_npu.npu``), so ``importlib.util.find_spec``,
``import torch_npu``, transformers' ``is_torch_npu_available()`` and accelerate's ``is_npu_available()`` all see
it, and ``importlib.metadata.version("torch_npu")`` gives the simulated version. Nothing is written to disk.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any, Optional

_NAMES = ("torch_npu", "torch_npu.npu")


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return None

    def exec_module(self, module: ModuleType) -> None:
        from ascend_compat.simulate import torch_npu_compat

        torch_npu_compat.populate(module)


class _Distribution(importlib.metadata.Distribution):
    def __init__(self, version: str) -> None:
        self._version = version

    def read_text(self, filename: str) -> Optional[str]:
        if filename == "METADATA":
            return (
                "Metadata-Version: 2.1\nName: torch_npu\n"
                f"Version: {self._version}\n"
                "Summary: simulated torch_npu provided by ascend-compat (no Ascend hardware)\n"
            )
        if filename == "top_level.txt":
            return "torch_npu\n"
        return None

    def locate_file(self, path: Any) -> Any:
        return path


class TorchNpuFinder(importlib.abc.MetaPathFinder):
    """Finder for the simulated torch_npu package."""

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

    def find_distributions(
        self, context: Optional[importlib.metadata.DistributionFinder.Context] = None
    ) -> Iterable[importlib.metadata.Distribution]:
        name = context.name if context is not None else None
        if name is None or name.replace("-", "_").lower() == "torch_npu":
            return [_Distribution(self.version)]
        return []


def install_finder(version: str) -> None:
    if not any(isinstance(f, TorchNpuFinder) for f in sys.meta_path):
        sys.meta_path.append(TorchNpuFinder(version))
