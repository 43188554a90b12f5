"""CUDA backend flags, capability probes and compilation (AC402, AC501, AC502, AC503, AC507): ``torch.backends``
settings that do nothing (or something else) on the NPU, SM-version probes and ``torch.compile``."""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.pycontext import CudaRef

_PROBE_NAMES = frozenset({"get_device_capability", "get_arch_list", "get_gencode_flags"})


class CudaFlagRules(PyRuleFamily):
    TITLE = "CUDA backend flags, capability probes and torch.compile"
    RULES = (
        RuleDef(
            code="AC402", name="sdp-backend-flags", category="attention", level="note",
            message="CUDA SDPA backend selection",
            alternative="no effect on NPU; torch_npu dispatches scaled_dot_product_attention to its fused kernel",
            shim_handles=True, fixable=False, difficulty="easy", effort_days=0.05,
            source=(
                "PyTorch docs: torch.backends.cuda SDPA flags; torch_npu API docs: scaled_dot_product_attention on "
                "the NPU"
            ),
        ),
        RuleDef(
            code="AC501", name="cudnn-flags", category="blas_dnn", level="note",
            message="cuDNN flag (no effect on NPU)",
            alternative="torch.use_deterministic_algorithms(...) for determinism; nothing for benchmark mode",
            shim_handles=True, fixable=False, difficulty="trivial", effort_days=0.0,
            source="PyTorch docs: torch.backends.cudnn, torch.use_deterministic_algorithms",
        ),
        RuleDef(
            code="AC502", name="tf32-flags", category="blas_dnn", level="note",
            message="TF32 flag (CUDA only)",
            alternative="torch.npu.matmul.allow_hf32 / torch.npu.conv.allow_hf32 (HF32 on Ascend)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.05,
            source="torch_npu API docs: torch.npu.matmul.allow_hf32, torch.npu.conv.allow_hf32",
        ),
        RuleDef(
            code="AC503", name="capability-probe", category="device", level="warning",
            message="CUDA capability probe (SM version, CUDA version)",
            alternative="probe features instead (torch.npu.is_bf16_supported(), torch.npu.get_device_name())",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.25,
            source="torch_npu API docs: torch.npu.is_bf16_supported, torch.npu.get_device_name",
        ),
        RuleDef(
            code="AC507", name="torch-compile", category="compile", level="note",
            message="torch.compile (inductor generates CUDA/CPU code)",
            alternative="torchair's NPU backend (torchair.get_npu_backend()) or backend=\"eager\"",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5,
            source="Ascend/torchair: torchair.get_npu_backend()",
        ),
    )

    def on_torch(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if q.startswith("torch.backends.cudnn"):
            if q.endswith("allow_tf32"):
                self.add("AC502", node, f"`{q}` enables TF32 on CUDA only", q)
            else:
                self.add("AC501", node, f"`{q}` has no effect on the NPU", q)
        elif q.startswith("torch.backends.cuda"):
            self.backends_cuda(q, node)
        elif q == "torch.version.cuda":
            self.add("AC503", node, "`torch.version.cuda` is None on Ascend builds of torch", q)
        elif q in ("torch.compile", "torch._dynamo.optimize"):
            self.add("AC507", node, f"`{q}`: inductor does not generate NPU code", q)
        elif q == "torch.set_float32_matmul_precision":
            self.add("AC502", node, "matmul precision hint (TF32 on CUDA)", q,
                     alternative="torch.npu.matmul.allow_hf32")
        else:
            return False
        return True

    def backends_cuda(self, q: str, node: ast.AST) -> None:
        if "allow_tf32" in q or "allow_fp16_reduced" in q or "allow_bf16_reduced" in q:
            self.add("AC502", node, f"`{q}` is a CUDA matmul precision flag", q)
        elif "sdp" in q or "flash" in q or "mem_efficient" in q or "math_sdp" in q:
            self.add("AC402", node, f"`{q}` selects CUDA SDPA kernels", q)
        elif q.endswith("is_built"):
            self.add("AC503", node, f"`{q}` probes the CUDA build", q)
        else:
            self.add("AC501", node, f"`{q}` is a CUDA backend setting", q)

    def on_torch_cuda(self, ref: CudaRef, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if ref.name not in _PROBE_NAMES:
            return False
        self.add("AC503", node, f"`{ref.q}`: CUDA compute capability", ref.q)
        return True
