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

from ascend_compat import _import_hooks
from ascend_compat._cupy_alias import TARGETS, alias_target, forget_aliases, is_alias

__all__ = ["install_as_cupy", "is_installed_as_cupy", "real_cupy_usable", "uninstall_as_cupy"]

_TARGET = TARGETS["cupy"]
_LOCK = threading.Lock()
_PROVISION: Optional[_import_hooks.Provision] = None  # install_as_cupy's registration with the package finder


def _is_aliased_name(name: str) -> bool:
    return alias_target(name) is not None


def _unload_cupy() -> None:
    for name in [n for n in sys.modules if n.split(".")[0] in ("cupy", "cupyx", "cupy_backends")]:
        del sys.modules[name]


def _import_real() -> Optional[ModuleType]:
    """The real CuPy, imported with the aliases out of the way; None when absent or broken."""
    aliases = {n: sys.modules.pop(n) for n in list(sys.modules) if _is_aliased_name(n)}
    try:
        with _import_hooks.suspended(TARGETS):  # the package finder serves no cupy name meanwhile
            if importlib.util.find_spec("cupy") is None:
                return None
            return importlib.import_module("cupy")
    except Exception:  # a broken CuPy install (e.g. no CUDA libraries): not usable
        _unload_cupy()
        return None
    finally:
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
    global _PROVISION
    with _LOCK:
        if _PROVISION is not None and is_alias(sys.modules.get("cupy")):
            return True
        if real_cupy_usable():
            return False
        if _PROVISION is None:
            _PROVISION = _import_hooks.provide(tuple(TARGETS), "ascend_compat._cupy_alias:alias_provider",
                                               label="install_as_cupy: import cupy/cupyx -> ascend_compat.cupy")
        sys.modules["cupy"] = importlib.import_module(_TARGET)
        return True


def uninstall_as_cupy() -> None:
    """Undo :func:`install_as_cupy`: withdraw its provider and drop every ``cupy`` alias from ``sys.modules``."""
    global _PROVISION
    with _LOCK:
        if _PROVISION is not None:
            _import_hooks.withdraw(_PROVISION)
            _PROVISION = None
        forget_aliases()


def is_installed_as_cupy() -> bool:
    """True while ``import cupy`` resolves to ``ascend_compat.cupy``."""
    return _PROVISION is not None
