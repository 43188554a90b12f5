"""ascend-compat: run CUDA-assuming PyTorch code on Ascend NPUs and measure the migration.

Importing this package imports no torch and patches nothing. Subpackages:

- ``ascend_compat.cuda_shim``: ``activate()`` / ``deactivate()`` / ``activated()``, the runtime shim.
- ``ascend_compat.backends``: the declarative accelerator backends and their detection order.
- ``ascend_compat.simulate``: a simulated ``npu`` device for development and CI without Ascend hardware.

``ASCEND_COMPAT_AUTO_ACTIVATE=1`` activates the shim as soon as torch is imported (at once if it already is).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use (``__getattr__``): importing the package must not import torch
    from ascend_compat.cuda_shim import activate, activated, deactivate, is_activated

__version__ = "0.1.0"
__all__ = ["__version__", "activate", "activated", "deactivate", "has_npu", "is_activated"]

_SHIM_NAMES = {"activate", "activated", "deactivate", "is_activated"}


def has_npu() -> bool:
    """True when an NPU is usable in this process: a real torch_npu with a device, or the simulated NPU installed.

    Cheap when there is none: without torch_npu installed (and no simulator installed) it imports nothing, not even
    torch. With torch_npu installed it imports it (that is how torch learns about the device) and asks
    ``torch.npu.is_available()``. It never installs the simulator.
    """
    import sys

    sim = sys.modules.get("ascend_compat.simulate")
    if sim is None or not sim.is_installed():
        import importlib.util

        try:
            if "torch_npu" not in sys.modules and importlib.util.find_spec("torch_npu") is None:
                return False
        except (ImportError, ValueError):
            return False
    try:
        import torch
        import torch_npu  # noqa: F401  (registers torch.npu)

        return bool(torch.npu.is_available())  # type: ignore[attr-defined]  # torch_npu adds torch.npu
    except Exception:  # a broken torch_npu (missing CANN libraries, ...) means no usable NPU
        return False


class _FieldValue:
    """:class:`ascend_compat._value.FieldValue`, defined here because ``activate()`` needs it and a module of its
    own costs ~0.1 ms on that path (see that module)."""

    __slots__ = ()
    _FIELDS: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS) + ")"


def __getattr__(name: str) -> Any:
    # Lazy, so that `import ascend_compat` imports no torch.
    if name in _SHIM_NAMES:
        from ascend_compat import cuda_shim

        return getattr(cuda_shim, name)
    raise AttributeError(f"module 'ascend_compat' has no attribute {name!r}")


def _setting(variable: str) -> Any:
    """The parsed value of the setting read from ``variable`` (:mod:`ascend_compat.settings`), or None when the
    variable is unset or blank (the setting's default; every caller reads None so). The settings module, about
    0.5 ms to import on ``activate()``'s path, is imported only for a variable that is set."""
    text = os.environ.get(variable)
    if text is None or not text.strip():
        return None
    from ascend_compat import settings

    return settings.by_variable(variable).get()


def _cache_root() -> str:
    """``settings.cache_root()`` (``$ASCEND_COMPAT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ascend_compat``, else
    ``~/.cache/ascend_compat``), reading the settings module only when one of the variables is set."""
    chosen = _setting("ASCEND_COMPAT_CACHE_DIR")
    if chosen:
        return str(chosen)
    base = _setting("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ascend_compat")


def _stacklevel_outside(directory: str) -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` issued by this function's caller point at the first frame
    whose file is outside ``directory`` (the user's line, however deep in a subpackage the warning is raised)."""
    import sys

    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(directory):
        frame, level = frame.f_back, level + 1
    return level


def _write_cache(path: str, data: bytes) -> None:
    """Replace the cache file ``path`` with ``data`` (:mod:`ascend_compat._atomic`, no fsync: a torn entry is
    rebuilt). Best effort: a read-only home or a full disk only loses the saving the cache gives."""
    from ascend_compat import _atomic

    try:
        _atomic.write_bytes(path, data, fsync=False)
    except OSError:
        pass


def _auto_activate() -> bool:
    """``ASCEND_COMPAT_AUTO_ACTIVATE``; a value it cannot read is said once and leaves the shim off (an import of
    the package must not fail on it)."""
    try:
        return bool(_setting("ASCEND_COMPAT_AUTO_ACTIVATE"))
    except ValueError as exc:  # settings.SettingError
        import warnings

        warnings.warn(f"ascend-compat: not activating: {exc}", RuntimeWarning, stacklevel=3)
        return False


if _auto_activate():
    from ascend_compat._import_hooks import when_imported

    def _activate_with(_torch: ModuleType) -> None:
        from ascend_compat.cuda_shim import activate

        activate()

    # Waits for torch (a sys.meta_path hook), so that importing ascend_compat still imports no torch.
    when_imported("torch", _activate_with)
