"""``import cupy`` resolving to ``ascend_compat.cupy``: a meta-path finder that aliases ``cupy`` and ``cupy.*``.

Never shadows a real CuPy that is installed and usable (importable, with a CUDA/ROCm device): then
:func:`install_as_cupy` changes nothing and returns False. A real CuPy that cannot run here (no device, or its
import fails) is unloaded and the alias takes its place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Optional

__all__ = ["install_as_cupy", "is_installed_as_cupy", "real_cupy_usable", "uninstall_as_cupy"]

_TARGET = "ascend_compat.cupy"
_LOCK = threading.Lock()


class _AliasLoader(importlib.abc.Loader):
    """Loads ``cupy.X`` by importing ``ascend_compat.cupy.X`` and putting that very module in ``sys.modules``."""

    def __init__(self, real: str, module: Optional[ModuleType] = None) -> None:
        self.real = real
        self.module = module  # a module the package exposes as an attribute (cupy.exceptions = numpy.exceptions)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return None  # a throwaway module; exec_module swaps in the real one (its __spec__ stays untouched)

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = self.module or importlib.import_module(self.real)


class CupyAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``cupy`` and ``cupy.<sub>`` as ``ascend_compat.cupy[.<sub>]`` when that module exists."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != "cupy" and not fullname.startswith("cupy."):
            return None
        real = _TARGET + fullname[len("cupy"):]
        if real in sys.modules:
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real))
        try:
            if importlib.util.find_spec(real) is not None:
                return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real))
        except (ImportError, ValueError):
            pass
        parent, _, attr = real.rpartition(".")
        value = getattr(sys.modules.get(parent), attr, None)
        if isinstance(value, ModuleType):
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real, value))
        return None


def _finder() -> Optional[CupyAliasFinder]:
    return next((f for f in sys.meta_path if isinstance(f, CupyAliasFinder)), None)


def _ours(module: Optional[ModuleType]) -> bool:
    return module is not None and getattr(module, "__name__", "") == _TARGET


def _unload_cupy() -> None:
    for name in [n for n in sys.modules if n.split(".")[0] in ("cupy", "cupyx", "cupy_backends")]:
        del sys.modules[name]


def _import_real() -> Optional[ModuleType]:
    """The real CuPy, imported with the alias out of the way; None when absent or broken."""
    finder = _finder()
    aliases = {n: sys.modules.pop(n) for n in list(sys.modules) if n == "cupy" or n.startswith("cupy.")}
    if finder is not None:
        sys.meta_path.remove(finder)
    try:
        if importlib.util.find_spec("cupy") is None:
            return None
        return importlib.import_module("cupy")
    except Exception:  # a broken CuPy install (e.g. no CUDA libraries): not usable
        _unload_cupy()
        return None
    finally:
        if finder is not None:
            sys.meta_path.insert(0, finder)
        if aliases and "cupy" not in sys.modules:
            sys.modules.update(aliases)


def real_cupy_usable() -> bool:
    """True when a real CuPy is importable and sees a device (then it is never shadowed).

    A real CuPy imported to find out, and found unusable, is unloaded again.
    """
    loaded = sys.modules.get("cupy")
    module = loaded if loaded is not None and not _ours(loaded) else _import_real()
    if module is None:
        return False
    try:
        usable = bool(module.cuda.is_available())  # type: ignore[attr-defined]
    except Exception:
        usable = False
    if not usable:
        _unload_cupy()
    return usable


def install_as_cupy() -> bool:
    """Make ``import cupy`` give ``ascend_compat.cupy``; False (and nothing changed) if a real CuPy is usable.

    Idempotent. Modules that already imported a real (unusable) CuPy keep it; later imports get the alias.
    """
    with _LOCK:
        if _finder() is not None and _ours(sys.modules.get("cupy")):
            return True
        if real_cupy_usable():
            return False
        if _finder() is None:
            sys.meta_path.insert(0, CupyAliasFinder())
        sys.modules["cupy"] = importlib.import_module(_TARGET)
        return True


def uninstall_as_cupy() -> None:
    """Undo :func:`install_as_cupy`: remove the finder and every ``cupy`` alias from ``sys.modules``."""
    with _LOCK:
        finder = _finder()
        if finder is not None:
            sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == "cupy" or n.startswith("cupy.")]:
            if sys.modules[name].__name__.startswith(_TARGET):
                del sys.modules[name]


def is_installed_as_cupy() -> bool:
    """True while ``import cupy`` resolves to ``ascend_compat.cupy``."""
    return _finder() is not None
