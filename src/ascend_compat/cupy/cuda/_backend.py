"""Which torch device module answers for the current device: ``torch.npu``, ``torch.cuda``, ..., or none (CPU)."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Optional

import torch


def current_torch_device() -> torch.device:
    """The torch device ``ascend_compat.cupy`` allocates on now (``npu:1`` inside ``Device(1)``)."""
    from ascend_compat.cupy import _core

    return _core.current_torch_device()


def device_type() -> str:
    return current_torch_device().type


def module(dtype: Optional[str] = None) -> Optional[ModuleType]:
    """``torch.<type>`` for an accelerator with a CUDA-like device API, or None for the CPU."""
    dtype = dtype or device_type()
    if dtype == "cpu":
        return None
    mod = getattr(torch, dtype, None)
    return mod if mod is not None and hasattr(mod, "device_count") else None


def device_count(dtype: Optional[str] = None) -> int:
    mod = module(dtype)
    return 1 if mod is None else int(mod.device_count())


def current_index() -> int:
    dev = current_torch_device()
    if dev.index is not None:
        return int(dev.index)
    mod = module(dev.type)
    return 0 if mod is None else int(mod.current_device())


def torch_device(index: int) -> torch.device:
    dtype = device_type()
    return torch.device(dtype) if dtype == "cpu" else torch.device(dtype, index)


def call(name: str, *args: Any, default: Any = None) -> Any:
    """``torch.<type>.<name>(*args)`` when the backend has it, else ``default`` (the CPU has no device API)."""
    fn = getattr(module(), name, None)
    return default if fn is None else fn(*args)
