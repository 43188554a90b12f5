"""Moore Threads GPU through torch_musa."""

from __future__ import annotations

from ascend_compat.backends.registry import BackendInfo


class MUSABackend(BackendInfo):
    name = "musa"
    device_type = "musa"
    adapter_module = "torch_musa"
    collective_backend = "mccl"
    visible_devices_env = "MUSA_VISIBLE_DEVICES"
    display_name = "Moore Threads GPU via torch_musa"
