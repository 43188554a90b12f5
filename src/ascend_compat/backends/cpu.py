"""CPU fallback: no accelerator found, the host is the device.

What differs is data and one method: ``accelerator = False`` (nothing to pin memory for, every CUDA ordinal is
the one host device, DDP takes no device_ids, the core patches marked "cpu fallback" apply) and
``device_module()``, what ``torch.cuda.*`` means on the host (:mod:`ascend_compat.backends.cpu_device`).
"""

from __future__ import annotations

from ascend_compat.backends.registry import BackendInfo


class CPUBackend(BackendInfo):
    name = "cpu"
    device_type = "cpu"
    display_name = "CPU fallback (no accelerator found)"
    accelerator = False

    @staticmethod
    def is_available() -> bool:
        return True

    @classmethod
    def device_module(cls) -> object:
        """What ``torch.cuda.*`` means on the host (one device, synchronous, host memory)."""
        from ascend_compat.backends import cpu_device

        return cpu_device
