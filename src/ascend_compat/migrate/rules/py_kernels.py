"""Custom kernels (AC410-AC413): Triton and numba.cuda kernels, CUDA extension builds and Triton kernels
registered as torch operators. What a Triton kernel does inside is judged by ``py_triton`` (AC420-AC424)."""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef

_TRITON_OPS = ("torch.library.wrap_triton", "torch.library.triton_op", "torch._library.triton.wrap_triton")
_CUDA_BUILD = ("torch.utils.cpp_extension.CUDAExtension", "torch.utils.cpp_extension.CUDA_HOME")
_JIT_BUILD = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")


def builds_cuda(call: ast.Call) -> bool:
    """Whether a ``cpp_extension.load``/``load_inline`` call compiles CUDA sources."""
    for kw in call.keywords:
        if kw.arg in ("cuda_sources", "with_cuda") and not (
            isinstance(kw.value, ast.Constant) and kw.value.value in (None, False)
        ):
            return True
    for node in ast.walk(call):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith((".cu", ".cuh")):
            return True
    return False


class CustomKernelRules(PyRuleFamily):
    TITLE = "custom GPU kernels and CUDA extension builds"
    RULES = (
        RuleDef(
            code="AC410", name="triton-kernel", category="custom_kernel", level="warning",
            message="Triton kernel",
            alternative="triton-ascend (Triton for Ascend); retune block sizes, no warp-level assumptions",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=1.0,
            source="triton-lang/triton-ascend (Triton for Ascend NPUs): docs/sources/python-api/outline.md",
        ),
        RuleDef(
            code="AC411", name="cuda-extension", category="custom_kernel", level="error",
            message="custom CUDA extension build",
            alternative="torch_npu.utils.cpp_extension.NpuExtension with Ascend C kernels",
            shim_handles=False, fixable=False, difficulty="hard", effort_days=5.0,
            source="Ascend/pytorch torch_npu.utils.cpp_extension.NpuExtension; Ascend C programming guide",
        ),
        RuleDef(
            code="AC412", name="numba-cuda-kernel", category="custom_kernel", level="error",
            message="numba.cuda kernel",
            alternative="rewrite with torch ops or an Ascend C kernel",
            shim_handles=False, fixable=False, difficulty="hard", effort_days=2.0,
            source="numba docs: numba.cuda (CUDA GPUs only)",
        ),
        RuleDef(
            code="AC413", name="triton-custom-op", category="custom_kernel", level="warning",
            message="user Triton kernel registered as a torch operator (torch.library.wrap_triton / triton_op)",
            alternative=(
                "keeps working only where its kernel does: compile it with triton-ascend and check it against "
                "AC420-AC424; torch.compile on Ascend (torchair) does not take Inductor's user-Triton path"
            ),
            shim_handles=False, fixable=False, difficulty="medium", effort_days=1.0,
            source="PyTorch docs: torch.library.triton_op / wrap_triton; triton-lang/triton-ascend docs",
        ),
    )

    def visit_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qual = self.ctx.qual
        for dec in node.decorator_list:
            q = qual(dec.func if isinstance(dec, ast.Call) else dec)
            if q in ("triton.jit", "triton.autotune", "triton.heuristics"):
                # One finding per kernel: on @triton.jit, or on the first wrapper of a kernel without one.
                if q == "triton.jit" or not any(
                    qual(d.func if isinstance(d, ast.Call) else d) == "triton.jit" for d in node.decorator_list
                ):
                    self.add("AC410", dec, f"Triton kernel `{node.name}` (@{q})", q)
            elif q in ("numba.cuda.jit", "numba.cuda.reduce"):
                self.add("AC412", dec, f"numba CUDA kernel `{node.name}`", q)

    def on_torch(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if q in _TRITON_OPS:
            self.add("AC413", node, f"`{q}` registers a Triton kernel as a torch operator", q)
        elif q in _CUDA_BUILD:
            self.add("AC411", node, f"`{q.rsplit('.', 1)[1]}` builds CUDA code", q)
        elif q in _JIT_BUILD and call is not None and builds_cuda(call):
            self.add("AC411", node, f"`{q.rsplit('.', 1)[1]}` compiles CUDA sources", q)
        else:
            return False
        return True
