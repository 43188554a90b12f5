"""``import cupy`` / ``import cupyx`` resolving to ``ascend_compat.cupy``: the meta-path finders.

Standard library only, and nothing imported until a ``cupy`` name is looked up: the CUDA shim adds
:func:`shim_finder` at activation without importing ``ascend_compat.cupy`` (NumPy and ~70 modules), which loads on the
first ``import cupy``. :mod:`ascend_compat.cupy._install` builds ``install_as_cupy()`` on :class:`CupyAliasFinder`.

Two finders:

- :class:`CupyAliasFinder` (``install_as_cupy``) answers every ``cupy``/``cupyx`` name; its caller has already
  checked that no usable real CuPy is installed.
- :class:`ShimCupyFinder` (the shim) never shadows anything: it answers ``cupy`` (or ``cupyx``) only when no other
  finder on ``sys.meta_path`` finds a module of that name, and ``cupy.<sub>`` only while ``sys.modules["cupy"]`` is
  ``ascend_compat.cupy``. An installed real CuPy, usable or not, is always imported instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Optional

__all__ = ["TARGETS", "CupyAliasFinder", "ShimCupyFinder", "alias_target", "forget_aliases", "is_alias", "shim_finder"]

#: The top-level names aliased, and the modules they resolve to.
TARGETS = {"cupy": "ascend_compat.cupy", "cupyx": "ascend_compat.cupy._cupyx"}


def alias_target(fullname: str) -> Optional[str]:
    """The module ``fullname`` (``cupy``, ``cupy.linalg``, ``cupyx``, ...) resolves to; None for other names."""
    top, dot, rest = fullname.partition(".")
    base = TARGETS.get(top)
    return None if base is None else base + dot + rest


def is_alias(module: Optional[ModuleType], top: str = "cupy") -> bool:
    """True when ``module`` is the product module that the top-level name ``top`` is aliased to."""
    return module is not None and getattr(module, "__name__", "") == TARGETS[top]


class _AliasLoader:
    """Loads ``cupy.X`` by importing ``ascend_compat.cupy.X`` and putting that very module in ``sys.modules``."""

    def __init__(self, real: str, module: Optional[ModuleType] = None) -> None:
        self.real = real
        self.module = module  # a module the package exposes as an attribute (cupy.exceptions = numpy.exceptions)

    def create_module(self, spec: ModuleSpec) -> Optional[ModuleType]:
        return None  # a throwaway module; exec_module swaps in the real one (whose __spec__ stays untouched)

    def exec_module(self, module: ModuleType) -> None:
        import importlib

        sys.modules[module.__name__] = self.module or importlib.import_module(self.real)


def _spec(fullname: str, loader: Any) -> ModuleSpec:
    return ModuleSpec(fullname, loader)  # a loader by protocol: importlib.abc (and importlib.resources) not imported


def _alias_spec(fullname: str) -> Optional[ModuleSpec]:
    real = alias_target(fullname)
    if real is None:
        return None
    if real in sys.modules:
        return _spec(fullname, _AliasLoader(real))
    import importlib.util

    try:
        if importlib.util.find_spec(real) is not None:
            return _spec(fullname, _AliasLoader(real))
    except (ImportError, ValueError):  # the parent is a plain module (cupyx.scipy): not a package here
        pass
    parent, _, attr = real.rpartition(".")
    value = getattr(sys.modules.get(parent), attr, None)
    if isinstance(value, ModuleType):
        return _spec(fullname, _AliasLoader(real, value))
    return None


class CupyAliasFinder:
    """Finds ``cupy[.<sub>]`` as ``ascend_compat.cupy[.<sub>]`` and ``cupyx`` as ``ascend_compat.cupy._cupyx``."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        return _alias_spec(fullname)

    def invalidate_caches(self) -> None:
        """Nothing cached."""


class ShimCupyFinder:
    """The shim's finder: a last resort for ``cupy``/``cupyx``, never in front of an installed one.

    Put it first on ``sys.meta_path`` (the import system asks it before the path finder, which would otherwise load
    ``cupy.linalg`` a second time from ``ascend_compat/cupy/linalg``); for a top-level name it first asks every
    other finder, and answers only when none finds it.
    """

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        top, dot, _ = fullname.partition(".")
        if top not in TARGETS:  # every other import pays this one lookup
            return None
        if dot:
            return _alias_spec(fullname) if is_alias(sys.modules.get(top), top) else None
        if top in sys.modules or self._found_elsewhere(fullname):
            return None
        return _alias_spec(fullname)

    def _found_elsewhere(self, name: str) -> bool:
        for finder in list(sys.meta_path):
            if finder is self or isinstance(finder, (CupyAliasFinder, ShimCupyFinder)):
                continue
            find: Any = getattr(finder, "find_spec", None)
            try:
                if find is not None and find(name, None) is not None:
                    return True
            except Exception:  # a broken third-party finder must not break `import cupy`; the import retries it
                continue
        return False

    def invalidate_caches(self) -> None:
        """Nothing cached."""


def shim_finder() -> ShimCupyFinder:
    """A new :class:`ShimCupyFinder`, for the shim to insert at the front of ``sys.meta_path`` through its ledger."""
    return ShimCupyFinder()


def forget_aliases() -> list[str]:
    """Drop the ``cupy``/``cupyx`` names bound to this package from ``sys.modules`` (a real CuPy's stay); the names
    dropped. The shim calls it when it deactivates, after removing its finder, so ``import cupy`` fails again."""
    gone = [name for name, module in list(sys.modules.items())
            if alias_target(name) is not None and getattr(module, "__name__", "").startswith(TARGETS["cupy"])]
    for name in gone:
        sys.modules.pop(name, None)
    return gone
