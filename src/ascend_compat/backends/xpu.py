"""Intel GPU through torch's own ``torch.xpu`` (no adapter module)."""

from __future__ import annotations

from ascend_compat.backends.registry import BackendInfo


class XPUBackend(BackendInfo):
    name = "xpu"
    device_type = "xpu"
    collective_backend = "xccl"
    visible_devices_env = "ZE_AFFINITY_MASK"
    display_name = "Intel GPU via native torch.xpu"

    @classmethod
    def installed(cls) -> bool:
        """A torch built with XPU support (every torch has a ``torch.xpu`` module, CPU builds included)."""
        import torch

        xpu = getattr(torch, "xpu", None)
        try:
            return xpu is not None and bool(xpu._is_compiled())
        except Exception:  # an older torch without _is_compiled: its module exists only in XPU builds
            return xpu is not None and not hasattr(xpu, "_is_compiled")
