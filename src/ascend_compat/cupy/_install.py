"""``import cupy`` resolving to ``ascend_compat.cupy`` (and ``import cupyx`` to its ``cupyx`` subset).

Never shadows a real CuPy that is installed and usable (importable, with a CUDA/ROCm device): then
:func:`install_as_cupy` changes nothing and returns False. A real CuPy that cannot run here (no device, or its
import fails) is unloaded and the alias takes its place.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Optional

from ascend_compat._cupy_alias import (  # re-exported: the finders live in a light module the shim can import
    TARGETS,
    CupyAliasFinder,
    ShimCupyFinder,
    alias_target,
    is_alias,
    shim_finder,
)

__all__ = [
    "CupyAliasFinder",
    "ShimCupyFinder",
    "install_as_cupy",
    "is_installed_as_cupy",
    "real_cupy_usable",
    "shim_finder",
    "uninstall_as_cupy",
]

_TARGET = TARGETS["cupy"]
_LOCK = threading.Lock()


def _is_aliased_name(name: str) -> bool:
    return alias_target(name) is not None


def _finder() -> Optional[CupyAliasFinder]:
    return next((f for f in sys.meta_path if type(f) is CupyAliasFinder), None)


def _unload_cupy() -> None:
    for name in [n for n in sys.modules if n.split(".")[0] in ("cupy", "cupyx", "cupy_backends")]:
        del sys.modules[name]


def _import_real() -> Optional[ModuleType]:
    """The real CuPy, imported with the aliases out of the way; None when absent or broken."""
    finders = [(i, f) for i, f in enumerate(sys.meta_path) if isinstance(f, (CupyAliasFinder, ShimCupyFinder))]
    aliases = {n: sys.modules.pop(n) for n in list(sys.modules) if _is_aliased_name(n)}
    for _, finder in finders:
        sys.meta_path.remove(finder)
    try:
        if importlib.util.find_spec("cupy") is None:
            return None
        return importlib.import_module("cupy")
    except Exception:  # a broken CuPy install (e.g. no CUDA libraries): not usable
        _unload_cupy()
        return None
    finally:
        for i, finder in finders:
            sys.meta_path.insert(i, finder)
        if aliases and "cupy" not in sys.modules:
            sys.modules.update(aliases)


def real_cupy_usable() -> bool:
    """True when a real CuPy is importable and sees a device (then it is never shadowed).

    A real CuPy imported to find out, and found unusable, is unloaded again.
    """
    loaded = sys.modules.get("cupy")
    module = loaded if loaded is not None and not is_alias(loaded) else _import_real()
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
        if _finder() is not None and is_alias(sys.modules.get("cupy")):
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
        for name in [n for n in sys.modules if _is_aliased_name(n)]:
            if getattr(sys.modules[name], "__name__", "").startswith(_TARGET):
                del sys.modules[name]


def is_installed_as_cupy() -> bool:
    """True while ``import cupy`` resolves to ``ascend_compat.cupy``."""
    return _finder() is not None
