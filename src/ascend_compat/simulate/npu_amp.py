"""``torch.npu.amp``: autocast and GradScaler bound to the npu device, as in torch_npu."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class autocast(torch.amp.autocast_mode.autocast):  # noqa: N801 - torch_npu's name
    """``torch.npu.amp.autocast(dtype=torch.float16)``: ``torch.autocast("npu", ...)``."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True) -> None:
        super().__init__("npu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.npu.amp.GradScaler``: ``torch.amp.GradScaler("npu", ...)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("device", None)
        super().__init__("npu", *args, **kwargs)


def custom_fwd(fwd: Any = None, *, cast_inputs: torch.dtype | None = None) -> Any:
    return torch.amp.custom_fwd(fwd, device_type="npu", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any = None) -> Any:
    return torch.amp.custom_bwd(bwd, device_type="npu")
