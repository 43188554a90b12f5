"""DeepSpeed: its accelerator abstraction already picks the NPU (``NPU_Accelerator``, hccl) when torch_npu is
importable, so no patch is registered; ``natively_handled`` says so for ``ascend-compat info``."""

from __future__ import annotations

from ascend_compat.ecosystem.patching import version_of


def natively_handled() -> list[str]:
    if version_of("deepspeed") is None:
        return []
    return ["get_accelerator() is NPU_Accelerator when torch_npu is importable; init_distributed() uses hccl"]
