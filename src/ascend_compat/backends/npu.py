"""Huawei Ascend NPU through torch_npu (CANN).

The simulated NPU (:mod:`ascend_compat.simulate`) is this same backend: ``simulate.install()`` registers torch's
``npu`` device and a ``torch_npu`` module, so detection finds it exactly as it finds a real torch_npu, and the
shim treats both alike.
"""

from __future__ import annotations

from ascend_compat.backends.registry import BackendInfo


class NPUBackend(BackendInfo):
    name = "npu"
    device_type = "npu"
    adapter_module = "torch_npu"
    collective_backend = "hccl"
    visible_devices_env = "ASCEND_RT_VISIBLE_DEVICES"
    display_name = "Huawei Ascend NPU via torch_npu (CANN)"
