"""Make ``import flash_attn`` give the NPU drop-in while the shim is active on an NPU.

The package's import finder (:mod:`ascend_compat._import_hooks`, first on ``sys.meta_path``, registered through
the ledger) asks :class:`DropInProvider` for ``flash_attn`` and its submodules: the submodules the drop-in has are
the drop-in's own modules, and its metadata answers ``importlib.metadata`` for ``flash_attn``, so
``importlib.metadata.version("flash_attn")`` and transformers' package checks see it. Any other ``flash_attn.*``
submodule fails to import, as it would with a package that lacks it. Deactivation withdraws the provider and
drops the ``flash_attn`` entries of ``sys.modules``.

Activation registers the provider by its ``"module:function"`` path
(:func:`~ascend_compat.ecosystem.drop_in.provide_drop_in`), so this module is imported on the first question about
``flash_attn``; activation calls :func:`provide` itself only when a real flash_attn is imported or importable (to
warn and hide it).

Never installed on CPU fallback or with real CUDA (where the real package works), nor when
``ASCEND_COMPAT_FLASH_ATTN=0``. A CUDA build of flash-attn installed on an NPU machine cannot run there, so the
drop-in shadows it (``ascend-compat info`` says so).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import logging
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Optional

from ascend_compat import _import_hooks
from ascend_compat.cuda_shim.ledger import Ledger
from ascend_compat.ecosystem import DROP_IN_NAMES as _NAMES
from ascend_compat.ecosystem import DROP_IN_SUBMODULES as SUBMODULES
from ascend_compat.ecosystem import DROP_IN_TARGET as TARGET
from ascend_compat.ecosystem import drop_in_wanted as wanted
from ascend_compat.ecosystem.drop_in import PROVIDER, forget_drop_in_modules

__all__ = ["SUBMODULES", "TARGET", "DropInProvider", "is_provided", "provide", "provider", "shadowed_distribution",
           "wanted"]

log = logging.getLogger("ascend_compat")


class _AliasLoader(importlib.abc.Loader):
    """Loads ``flash_attn.X`` as the already importable ``ascend_compat.ecosystem.flash_attn.X``."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        return None  # executed already, as the drop-in's own module


class DropInProvider:
    """Answers flash_attn imports and metadata with the drop-in."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in _NAMES:
            return None  # the parent's __path__ is the drop-in's directory: unknown names are not found
        real = TARGET + fullname[len("flash_attn") :]
        is_pkg = fullname in ("flash_attn", "flash_attn.layers")
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), origin="ascend-compat", is_package=is_pkg)
        if is_pkg:
            spec.submodule_search_locations = []
        return spec

    def distribution(self) -> tuple[str, str]:
        """``(version, summary)`` of the drop-in's flash_attn distribution."""
        from ascend_compat.ecosystem.flash_attn import __version__

        return __version__, "flash-attn drop-in on torch_npu.npu_fusion_attention, provided by ascend-compat"

    def forget(self) -> None:
        forget_drop_in_modules()


def provider() -> DropInProvider:
    """The drop-in's provider (the factory :data:`~ascend_compat.ecosystem.drop_in.PROVIDER` names)."""
    return DropInProvider()


def shadowed_distribution() -> Optional[str]:
    """The version of a real flash-attn installed here (which the drop-in shadows while active), if any."""
    for finder in sys.meta_path:
        if finder is _import_hooks.FINDER:  # the drop-in's own metadata
            continue
        find = getattr(finder, "find_distributions", None)
        if find is None:
            continue
        for dist in find(importlib.metadata.DistributionFinder.Context(name="flash_attn")):
            return str(dist.version)
    return None


def provide(ledger: Ledger) -> None:
    """Serve flash_attn from the drop-in, shadowing a real one (with a warning); restoring ``ledger`` withdraws the
    provider, drops the drop-in's modules and puts the real ones back."""
    shadowed = shadowed_distribution()
    if shadowed is not None:
        log.warning("ascend-compat: flash-attn %s is installed (a CUDA build); the NPU drop-in shadows it", shadowed)
    stale = [n for n in _NAMES if n in sys.modules]
    for name in stale:  # a real flash_attn imported before activation (its import would have failed on an NPU)
        ledger.setitem(sys.modules, name, None, label=f"sys.modules[{name}]")
    _import_hooks.provide("flash_attn", PROVIDER, ledger=ledger, metadata=True, label="flash_attn drop-in")
    importlib.invalidate_caches()


def is_provided() -> bool:
    """True while ``import flash_attn`` gives the drop-in."""
    return _import_hooks.provides("flash_attn")
