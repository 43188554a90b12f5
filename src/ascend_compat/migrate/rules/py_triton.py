"""Triton kernels against triton-ascend's restrictions (AC420-AC424). The checks are ``pytriton.TritonChecks``
(scope analysis and constant folding of launch grids); the limits are data (``data/triton_ascend.json``)."""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate import pytriton
from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.pycontext import Source


class TritonAscendRules(PyRuleFamily):
    TITLE = "Triton kernels against triton-ascend's restrictions"
    RULES = (
        RuleDef(
            code="AC420", name="triton-inline-asm", category="custom_kernel", level="error",
            message="inline assembly in a Triton kernel",
            alternative=(
                "express it with tl ops (bit operations, tl.where, tl.math) or triton-ascend's Ascend extension ops; "
                "PTX/GCN assembly cannot run on the NPU"
            ),
            shim_handles=False, fixable=False, difficulty="medium", effort_days=1.0,
            source="data/triton_ascend.json rules.AC420 (triton-lang/triton-ascend docs)",
        ),
        RuleDef(
            code="AC421", name="triton-cuda-libdevice", category="custom_kernel", level="error",
            message="CUDA libdevice (or other tl.extra.cuda) call in a Triton kernel",
            alternative=(
                "the core tl.math functions (exp, log, sqrt, erf, ...) or triton-ascend's libdevice "
                "(triton.language.extra.cann.libdevice; triton.language.extra.ascend.libdevice in 3.2.0)"
            ),
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.25,
            source="data/triton_ascend.json rules.AC421 (triton-lang/triton-ascend docs)",
        ),
        RuleDef(
            code="AC422", name="triton-dot-dtype", category="custom_kernel", level="warning",
            message="tl.dot with a dtype or input precision triton-ascend does not take",
            alternative=(
                "int8, fp16, bf16 or fp32 operands with an fp32 (int32 for int8) accumulator; input_precision=\"hf32\" "
                "or \"ieee\" instead of tf32"
            ),
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5,
            source="data/triton_ascend.json rules.AC422 (triton-lang/triton-ascend docs)",
        ),
        RuleDef(
            code="AC423", name="triton-grid-limit", category="custom_kernel", level="error",
            message="Triton launch with more than 65535 programs",
            alternative=(
                "fewer, larger programs: raise BLOCK_SIZE so the grid stays <= 65535 or loop over tiles inside each "
                "program (or TRITON_ALL_BLOCKS_PARALLEL=1 when programs are independent)"
            ),
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.25,
            source="data/triton_ascend.json rules.AC423 (triton-lang/triton-ascend docs)",
        ),
        RuleDef(
            code="AC424", name="triton-non-adjacent-permute", category="custom_kernel", level="warning",
            message="tl.permute/tl.trans of non-adjacent axes in a Triton kernel",
            alternative=(
                "load the data in the order the kernel needs (swap the strides or make_block_ptr's order) or compose "
                "swaps of adjacent axes"
            ),
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5,
            source="data/triton_ascend.json rules.AC424 (triton-lang/triton-ascend docs)",
        ),
    )

    def begin(self) -> None:
        if pytriton.imports_triton(self.ctx.aliases):
            pytriton.TritonChecks(self).run()

    # What TritonChecks reads of its scanner.
    @property
    def tree(self) -> ast.Module:
        return self.ctx.tree

    @property
    def src(self) -> Source:
        return self.ctx.src

    def qual(self, node: ast.AST) -> Optional[str]:
        return self.ctx.qual(node)
