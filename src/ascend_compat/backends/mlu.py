"""Cambricon MLU through torch_mlu."""

from __future__ import annotations

from ascend_compat.backends.registry import BackendInfo


class MLUBackend(BackendInfo):
    name = "mlu"
    device_type = "mlu"
    adapter_module = "torch_mlu"
    collective_backend = "cncl"
    visible_devices_env = "MLU_VISIBLE_DEVICES"
    display_name = "Cambricon MLU via torch_mlu"
