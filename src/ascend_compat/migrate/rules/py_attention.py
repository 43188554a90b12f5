"""Attention kernels (AC401, AC403): flash_attn and xformers calls. ``flash_attn`` imports are judged with the
dependencies (``flashattn.py``); CUDA SDPA backend flags (AC402) with the other backend flags (``py_flags``)."""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef

_ATTN_CALLS = frozenset({
    "flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache",
})


class AttentionRules(PyRuleFamily):
    TITLE = "CUDA attention kernels"
    RULES = (
        RuleDef(
            code="AC401", name="flash-attn-call", category="attention", level="note",
            message="flash_attn kernel call",
            alternative=(
                "runs on ascend-compat's flash_attn drop-in (torch_npu.npu_fusion_attention) under the shim or after "
                "`port --mode native` rewrites the import; check the options it documents as unsupported"
            ),
            shim_handles=True, fixable=False, difficulty="easy", effort_days=0.1,
            source=(
                "torch_npu API docs: npu_fusion_attention; ascend_compat's flash_attn drop-in (README, Runtime shim)"
            ),
        ),
        RuleDef(
            code="AC403", name="xformers-attention", category="attention", level="warning",
            message="xformers memory-efficient attention",
            alternative="torch_npu.npu_fusion_attention or F.scaled_dot_product_attention",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5,
            source="xformers memory_efficient_attention runs CUDA kernels; torch_npu API docs: npu_fusion_attention",
        ),
    )

    def on_module(self, q: str, head: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if call is None:
            return False
        if head == "flash_attn" and q.rsplit(".", 1)[-1] in _ATTN_CALLS:
            self.add("AC401", node, f"flash_attn kernel `{q.rsplit('.', 1)[-1]}`", q)
        elif head == "xformers" and q.endswith("memory_efficient_attention"):
            self.add("AC403", node, "xformers memory_efficient_attention", q)
        else:
            return False
        return True
