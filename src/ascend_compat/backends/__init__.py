"""Accelerator backends as small declarative classes, one detection order, third-party registration.

Every backend is a :class:`~ascend_compat.backends.registry.BackendInfo` subclass (data: device type, adapter
module, collective backend, visible-devices variable, display name, ``accelerator``, and the methods for what
differs: ``is_available()``, ``device_module()`` (what ``torch.cuda.*`` becomes), ``autocast_bf16()``). The
built-in ones live one per file (``npu.py``, ``mlu.py``, ``musa.py``, ``xpu.py``, ``mps.py``, ``cpu.py``) and are
registered here, in detection order; to add one, write the subclass (e.g. in ``backends/myvendor.py``) and
``register`` it below, or ship it from another distribution through the
``ascend_compat.backends`` entry-point group. ``detect()`` walks the order once.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ascend_compat.backends.cpu import CPUBackend
from ascend_compat.backends.mlu import MLUBackend
from ascend_compat.backends.mps import MPSBackend
from ascend_compat.backends.musa import MUSABackend
from ascend_compat.backends.npu import NPUBackend
from ascend_compat.backends.registry import (
    _BUILTIN_NAMES,
    _REGISTRY,
    DETECTION_ORDER,
    ENTRY_POINT_GROUP,
    BackendInfo,
    all_backends,
    get_backend,
    load_entry_points,
    register,
)
from ascend_compat.backends.xpu import XPUBackend

__all__ = [
    "DETECTION_ORDER",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendInfo",
    "CPUBackend",
    "Detection",
    "MLUBackend",
    "MPSBackend",
    "MUSABackend",
    "NPUBackend",
    "XPUBackend",
    "all_backends",
    "detect",
    "get_backend",
    "register",
]

#: The former name of the base class, kept for backends written against it.
Backend = BackendInfo


# The built-in backends, in detection order (CPU last). Register a new backend here, before the CPU fallback.
for _backend in (NPUBackend, MLUBackend, MUSABackend, XPUBackend, MPSBackend, CPUBackend):
    register(_backend, before=None)
_BUILTIN = frozenset(_REGISTRY)
_BUILTIN_NAMES.update(_BUILTIN)


class Detection:
    """The outcome of detection: the chosen backend (None when real CUDA makes the shim a no-op) and why.

    Immutable, compared and printed as the frozen dataclass it was; a plain class because building a dataclass
    costs about half a millisecond at import, and every ``activate()`` imports this module.
    """

    __slots__ = ("backend", "native_cuda", "reason")
    backend: Optional[type[BackendInfo]]
    reason: str
    native_cuda: bool

    def __init__(self, backend: Optional[type[BackendInfo]], reason: str, native_cuda: bool = False) -> None:
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "native_cuda", native_cuda)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        mine = (self.backend, self.reason, self.native_cuda)
        return mine == (other.backend, other.reason, other.native_cuda)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.backend, self.reason, self.native_cuda))

    def __repr__(self) -> str:
        return f"Detection(backend={self.backend!r}, reason={self.reason!r}, native_cuda={self.native_cuda!r})"


def _native_cuda() -> Optional[str]:
    import torch

    try:
        if torch.cuda.is_available():
            return "ROCm (HIP)" if getattr(torch.version, "hip", None) else "CUDA"
    except Exception:
        return None
    return None


def detect(override: Optional[str] = None) -> Detection:
    """Choose the backend: ``override`` (or ``ASCEND_COMPAT_BACKEND``), else the first available one.

    Entry-point backends are registered just before ``cpu``, so they are loaded only when no built-in accelerator
    answers first, and then only when a cached check finds a distribution that may declare one (the scan of every
    installed distribution costs ~4 ms).
    """
    override = override or os.environ.get("ASCEND_COMPAT_BACKEND") or None
    if override:
        return Detection(get_backend(override), f"requested ({override})")
    native = _native_cuda()
    if native:
        return Detection(None, f"real {native} is present: the shim stays inactive", native_cuda=True)
    for backend in [b for b in DETECTION_ORDER if b is not CPUBackend] + [None, CPUBackend]:
        if backend is None:  # built-in accelerators exhausted: now the third-party ones
            load_entry_points(cached=True)
            for extra in [b for b in DETECTION_ORDER if b.name not in _BUILTIN and b is not CPUBackend]:
                if extra.installed() and extra.available():
                    return Detection(extra, f"{extra.adapter_module or extra.name} found (entry point)")
            continue
        if backend.installed() and backend.available():
            reason = "no accelerator found" if not backend.accelerator else f"{backend.adapter_module or 'torch'} found"
            return Detection(backend, reason)
    return Detection(CPUBackend, "no accelerator found")
