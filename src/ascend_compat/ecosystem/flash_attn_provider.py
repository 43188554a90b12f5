"""Make ``import flash_attn`` give the NPU drop-in while the shim is active on an NPU.

A ``sys.meta_path`` finder (put first, through the ledger) answers ``flash_attn`` and the submodules the drop-in
has with the drop-in's own modules, and a distribution finder answers ``importlib.metadata`` for ``flash_attn``,
so ``importlib.metadata.version("flash_attn")`` and transformers' package checks see it. Any other
``flash_attn.*`` submodule fails to import, as it would with a package that lacks it. Deactivation removes the
finder and the ``flash_attn`` entries of ``sys.modules``.

Activation puts :class:`~ascend_compat.ecosystem.patching.DropInFinder` first instead, which imports this module
on the first question about ``flash_attn``; it calls :func:`provide` itself only when a real flash_attn is
imported or importable (to warn and hide it).

Never installed on CPU fallback or with real CUDA (where the real package works), nor when
``ASCEND_COMPAT_FLASH_ATTN=0``. A CUDA build of flash-attn installed on an NPU machine cannot run there, so the
drop-in shadows it (``ascend-compat info`` says so).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any, Optional

from ascend_compat.cuda_shim.ledger import Ledger
from ascend_compat.ecosystem.patching import DROP_IN_NAMES as _NAMES
from ascend_compat.ecosystem.patching import DROP_IN_SUBMODULES as SUBMODULES
from ascend_compat.ecosystem.patching import DROP_IN_TARGET as TARGET
from ascend_compat.ecosystem.patching import DropInFinder, forget_drop_in_modules
from ascend_compat.ecosystem.patching import drop_in_wanted as wanted

__all__ = ["SUBMODULES", "TARGET", "FlashAttnFinder", "is_provided", "provide", "shadowed_distribution", "wanted"]

log = logging.getLogger("ascend_compat")


class _AliasLoader(importlib.abc.Loader):
    """Loads ``flash_attn.X`` as the already importable ``ascend_compat.ecosystem.flash_attn.X``."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        return None  # executed already, as the drop-in's own module


class _Distribution(importlib.metadata.Distribution):
    def __init__(self, version: str) -> None:
        self._version = version

    def read_text(self, filename: str) -> Optional[str]:
        if filename == "METADATA":
            return (
                f"Metadata-Version: 2.1\nName: flash_attn\nVersion: {self._version}\n"
                "Summary: flash-attn drop-in on torch_npu.npu_fusion_attention, provided by ascend-compat\n"
            )
        if filename == "top_level.txt":
            return "flash_attn\n"
        return None

    def locate_file(self, path: Any) -> Any:
        return path


class FlashAttnFinder(importlib.abc.MetaPathFinder):
    """Answers flash_attn imports and metadata with the drop-in."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname == "flash_attn" or fullname.startswith("flash_attn."):
            if fullname not in _NAMES:
                return None  # the parent's __path__ is the drop-in's directory: unknown names are not found
            real = TARGET + fullname[len("flash_attn") :]
            is_pkg = fullname in ("flash_attn", "flash_attn.layers")
            spec = importlib.machinery.ModuleSpec(
                fullname, _AliasLoader(real), origin="ascend-compat", is_package=is_pkg
            )
            if is_pkg:
                spec.submodule_search_locations = []
            return spec
        return None

    def find_distributions(
        self, context: Optional[importlib.metadata.DistributionFinder.Context] = None
    ) -> Iterable[importlib.metadata.Distribution]:
        name = context.name if context is not None else None
        if name is None or name.replace("-", "_").lower() == "flash_attn":
            from ascend_compat.ecosystem.flash_attn import __version__

            return [_Distribution(__version__)]
        return []


def shadowed_distribution() -> Optional[str]:
    """The version of a real flash-attn installed here (which the drop-in shadows while active), if any."""
    for finder in sys.meta_path:
        if isinstance(finder, (FlashAttnFinder, DropInFinder)):
            continue
        find = getattr(finder, "find_distributions", None)
        if find is None:
            continue
        for dist in find(importlib.metadata.DistributionFinder.Context(name="flash_attn")):
            return str(dist.version)
    return None


def provide(ledger: Ledger) -> None:
    """Install the finder first on ``sys.meta_path``; the ledger removes it and the imported modules on restore."""
    shadowed = shadowed_distribution()
    if shadowed is not None:
        log.warning("ascend-compat: flash-attn %s is installed (a CUDA build); the NPU drop-in shadows it", shadowed)
    stale = [n for n in _NAMES if n in sys.modules]
    for name in stale:  # a real flash_attn imported before activation (its import would have failed on an NPU)
        ledger.setitem(sys.modules, name, None, label=f"sys.modules[{name}]")
    ledger.on_restore(forget_drop_in_modules, "sys.modules: flash_attn drop-in")
    ledger.insert(sys.meta_path, FlashAttnFinder(), 0, label="flash_attn drop-in finder")
    importlib.invalidate_caches()


def is_provided() -> bool:
    return any(isinstance(f, (FlashAttnFinder, DropInFinder)) for f in sys.meta_path)
