"""Accelerator backends as small declarative classes, one detection order, third-party registration.

A backend is data: its torch device type, the adapter module that provides it (imported only when installed),
its collective backend and its visible-devices variable. ``detect()`` walks ``DETECTION_ORDER`` once; third
parties add backends through the ``ascend_compat.backends`` entry-point group (each entry point names a
:class:`Backend` subclass).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import ClassVar, Optional

__all__ = ["DETECTION_ORDER", "Backend", "Detection", "all_backends", "detect", "get_backend", "register"]


class Backend:
    """Base class; subclasses set the class attributes."""

    name: ClassVar[str]
    device_type: ClassVar[str]
    adapter_module: ClassVar[Optional[str]] = None  # imported before torch.<device_type> is used
    collective_backend: ClassVar[str] = "gloo"
    visible_devices_env: ClassVar[Optional[str]] = None
    description: ClassVar[str] = ""

    @classmethod
    def installed(cls) -> bool:
        """Cheap check (no heavy import): the adapter module can be found, or torch has the device natively."""
        if cls.adapter_module is None:
            return True
        return cls.adapter_module in sys.modules or importlib.util.find_spec(cls.adapter_module) is not None

    @classmethod
    def load(cls) -> None:
        """Import the adapter module (registers the device with torch)."""
        if cls.adapter_module is not None:
            importlib.import_module(cls.adapter_module)

    @classmethod
    def device_module(cls) -> object:
        import torch

        return getattr(torch, cls.device_type)

    @classmethod
    def available(cls) -> bool:
        """True when the device can be used now (imports the adapter)."""
        if not cls.installed():
            return False
        try:
            cls.load()
            mod = cls.device_module()
            return bool(mod.is_available())  # type: ignore[attr-defined]
        except Exception:
            return False


class NPUBackend(Backend):
    name = "npu"
    device_type = "npu"
    adapter_module = "torch_npu"
    collective_backend = "hccl"
    visible_devices_env = "ASCEND_RT_VISIBLE_DEVICES"
    description = "Huawei Ascend NPU via torch_npu (CANN)"


class MLUBackend(Backend):
    name = "mlu"
    device_type = "mlu"
    adapter_module = "torch_mlu"
    collective_backend = "cncl"
    visible_devices_env = "MLU_VISIBLE_DEVICES"
    description = "Cambricon MLU via torch_mlu"


class MUSABackend(Backend):
    name = "musa"
    device_type = "musa"
    adapter_module = "torch_musa"
    collective_backend = "mccl"
    visible_devices_env = "MUSA_VISIBLE_DEVICES"
    description = "Moore Threads GPU via torch_musa"


class XPUBackend(Backend):
    name = "xpu"
    device_type = "xpu"
    collective_backend = "xccl"
    visible_devices_env = "ZE_AFFINITY_MASK"
    description = "Intel GPU via native torch.xpu"

    @classmethod
    def installed(cls) -> bool:
        import torch

        return hasattr(torch, "xpu")


class MPSBackend(Backend):
    name = "mps"
    device_type = "mps"
    description = "Apple GPU via native torch.mps"

    @classmethod
    def installed(cls) -> bool:
        import torch

        return hasattr(torch.backends, "mps")

    @classmethod
    def available(cls) -> bool:
        import torch

        return cls.installed() and bool(torch.backends.mps.is_available())


class CPUBackend(Backend):
    name = "cpu"
    device_type = "cpu"
    description = "CPU fallback (no accelerator found)"

    @classmethod
    def available(cls) -> bool:
        return True


#: One detection order, defined once. CUDA/ROCm are checked first by ``detect`` (activation is then a no-op).
DETECTION_ORDER: list[type[Backend]] = [NPUBackend, MLUBackend, MUSABackend, XPUBackend, MPSBackend, CPUBackend]
_REGISTRY: dict[str, type[Backend]] = {b.name: b for b in DETECTION_ORDER}
_BUILTIN = frozenset(_REGISTRY)
_ENTRY_POINTS_LOADED = False


def register(backend: type[Backend], before: Optional[str] = "cpu") -> None:
    """Add a backend to the registry and to the detection order (before ``before``; None = last)."""
    _REGISTRY[backend.name] = backend
    if backend in DETECTION_ORDER:
        return
    names = [b.name for b in DETECTION_ORDER]
    DETECTION_ORDER.insert(names.index(before) if before in names else len(DETECTION_ORDER), backend)


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    from importlib.metadata import entry_points

    eps = entry_points()
    group = (
        eps.select(group="ascend_compat.backends") if hasattr(eps, "select") else eps.get("ascend_compat.backends", [])
    )
    for ep in group:
        register(ep.load())


def all_backends() -> list[type[Backend]]:
    _load_entry_points()
    return list(DETECTION_ORDER)


def get_backend(name: str) -> type[Backend]:
    _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


@dataclass(frozen=True)
class Detection:
    """The outcome of detection: the chosen backend (None when real CUDA makes the shim a no-op) and why."""

    backend: Optional[type[Backend]]
    reason: str
    native_cuda: bool = False


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

    Entry-point backends are registered just before ``cpu``, so they are loaded (a scan of every installed
    distribution, ~20 ms) only when no built-in accelerator answers first.
    """
    override = override or os.environ.get("ASCEND_COMPAT_BACKEND") or None
    if override:
        return Detection(get_backend(override), f"requested ({override})")
    native = _native_cuda()
    if native:
        return Detection(None, f"real {native} is present: the shim stays inactive", native_cuda=True)
    for backend in [b for b in DETECTION_ORDER if b is not CPUBackend] + [None, CPUBackend]:
        if backend is None:  # built-in accelerators exhausted: now the third-party ones
            _load_entry_points()
            for extra in [b for b in DETECTION_ORDER if b.name not in _BUILTIN and b is not CPUBackend]:
                if extra.installed() and extra.available():
                    return Detection(extra, f"{extra.adapter_module or extra.name} found (entry point)")
            continue
        if backend.installed() and backend.available():
            reason = "no accelerator found" if backend.name == "cpu" else f"{backend.adapter_module or 'torch'} found"
            return Detection(backend, reason)
    return Detection(CPUBackend, "no accelerator found")
