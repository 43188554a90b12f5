"""``ascend_compat.superopt``: a kernel-graph superoptimizer that emits verified Triton for Ascend (and CUDA).

The API of Mirage/YiRage with the import changed::

    import ascend_compat.superopt as yr
    g = yr.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=yr.float16)
    W = g.new_input(dims=(64, 64), dtype=yr.float16)
    g.mark_output(g.matmul(g.rms_norm(X), W))
    opt = g.superoptimize(backend="ascend")   # or "triton" (CUDA), "torch"
    out = opt(inputs=[x, w])
    print(opt.explain()); print(opt.triton_code()); opt.save("kernels/")
"""

from __future__ import annotations

from typing import Any

from ascend_compat.superopt.graph import DTensor, GraphError, KernelGraph
from ascend_compat.superopt.runtime import BackendUnavailableError

float16 = "float16"
bfloat16 = "bfloat16"
float32 = "float32"
float64 = "float64"


def new_kernel_graph() -> KernelGraph:
    """An empty kernel graph (``new_input``, ops, ``mark_output``, then ``superoptimize``)."""
    return KernelGraph()


def _superoptimize(self: KernelGraph, backend: str = "ascend", **kwargs: Any) -> Any:
    from ascend_compat.superopt.core import superoptimize

    return superoptimize(self, backend=backend, **kwargs)


KernelGraph.superoptimize = _superoptimize  # type: ignore[attr-defined]

__all__ = ["BackendUnavailableError", "DTensor", "GraphError", "KernelGraph", "bfloat16", "float16", "float32",
           "float64", "new_kernel_graph"]
