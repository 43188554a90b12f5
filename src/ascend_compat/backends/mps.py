"""Apple GPU through torch's own MPS backend (no adapter module)."""

from __future__ import annotations

from ascend_compat.backends.registry import BackendInfo


class MPSBackend(BackendInfo):
    name = "mps"
    device_type = "mps"
    display_name = "Apple GPU via native torch.mps"

    @classmethod
    def installed(cls) -> bool:
        """A torch built with MPS (macOS); every torch has ``torch.backends.mps``, Linux builds included."""
        import torch

        mps = getattr(torch.backends, "mps", None)
        try:
            return mps is not None and bool(mps.is_built())
        except Exception:
            return False

    @staticmethod
    def is_available() -> bool:
        import torch

        return MPSBackend.installed() and bool(torch.backends.mps.is_available())
