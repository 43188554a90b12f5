"""Run a kernel graph with torch ops: the eager reference every kernel is checked against, and ``backend='torch'``."""

from __future__ import annotations

from typing import Any

from ascend_compat.superopt.graph import GraphError, KernelGraph


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def run_graph(graph: KernelGraph, inputs: list[Any]) -> list[Any]:
    """Evaluate ``graph`` op by op in its dtypes (as the user's eager torch code would) and return its outputs."""
    import torch
    import torch.nn.functional as nnf

    ins = graph.inputs
    if len(inputs) != len(ins):
        raise GraphError(f"the graph takes {len(ins)} inputs, got {len(inputs)}")
    device = inputs[0].device if inputs else torch.device("cpu")
    vals: dict[int, Any] = {}
    for i, n in enumerate(graph.nodes):
        a = [vals[j] for j in n.inputs]
        if n.op == "input":
            t = inputs[n.attr("index")]
            if tuple(t.shape) != n.shape or str(t.dtype) != f"torch.{n.dtype}":
                raise GraphError(f"input {n.attr('index')}: expected {n.shape} {n.dtype}, got {tuple(t.shape)} "
                                 f"{str(t.dtype).replace('torch.', '')}")
            v = t
        elif n.op == "const":
            v = torch.tensor(n.attr("value"), dtype=torch_dtype(n.dtype), device=device)
        elif n.op in ("add", "sub", "mul", "div"):
            v = getattr(torch, n.op)(a[0], a[1])
        elif n.op == "matmul":
            v = torch.matmul(a[0], a[1])
        elif n.op in ("sum", "mean"):
            v = getattr(torch, n.op)(a[0], dim=n.attr("dim"), keepdim=True)
        elif n.op == "max":
            v = torch.amax(a[0], dim=n.attr("dim"), keepdim=True)
        elif n.op == "concat":
            v = torch.cat(a, dim=n.attr("dim"))
        elif n.op == "clamp":
            v = torch.clamp(a[0], n.attr("min"), n.attr("max"))
        elif n.op == "square":
            v = a[0] * a[0]
        elif n.op in ("silu", "gelu", "relu"):
            v = getattr(nnf, n.op)(a[0])
        elif n.op in ("exp", "sqrt", "rsqrt", "neg"):
            v = getattr(torch, n.op)(a[0])
        else:
            raise GraphError(f"op {n.op!r} has no torch lowering")
        vals[i] = v
    return [vals[o] for o in graph.outputs]


def random_inputs(graph: KernelGraph, device: str = "cpu", seed: int = 0) -> list[Any]:
    """Random inputs for ``graph`` (normal, scaled so that sums over 4096 stay in fp16 range)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in graph.inputs:
        n = graph.nodes[i]
        t = torch.randn(n.shape, generator=gen, dtype=torch.float32) * (n.shape[-1] ** -0.25 if len(n.shape) > 1 else 1)
        out.append(t.to(torch_dtype(n.dtype)).to(device))
    return out
