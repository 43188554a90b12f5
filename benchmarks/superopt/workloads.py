"""Mirage's workloads as kernel graphs (shapes are parameters so tests build the same graphs small).

Each builder takes ``order``: 0 writes the graph the usual way, 1 writes the same program in another op order
(operands swapped, ops spelled differently), which the search must bring to the same plan.
"""

from __future__ import annotations

import ascend_compat.superopt as yr


def gated_mlp(m: int = 8, k: int = 4096, n: int = 4096, dtype: str = "float16", order: int = 0) -> yr.KernelGraph:
    g = yr.new_kernel_graph()
    x = g.new_input(dims=(m, k), dtype=dtype)
    w1 = g.new_input(dims=(k, n), dtype=dtype)
    w2 = g.new_input(dims=(k, n), dtype=dtype)
    if order == 0:
        g.mark_output(g.mul(g.silu(g.matmul(x, w1)), g.matmul(x, w2)))
    else:
        up = g.matmul(x, w2)
        g.mark_output(g.mul(up, g.silu(g.matmul(x, w1))))
    return g


def rmsnorm_linear(m: int = 8, k: int = 4096, n: int = 4096, dtype: str = "float16", order: int = 0) -> yr.KernelGraph:
    g = yr.new_kernel_graph()
    x = g.new_input(dims=(m, k), dtype=dtype)
    w = g.new_input(dims=(k, n), dtype=dtype)
    if order == 0:
        g.mark_output(g.matmul(g.rms_norm(x, eps=1e-6), w))
    else:  # x / sqrt(mean(x*x) + eps), by hand
        ms = g.mean(g.mul(x, x), dim=-1)
        g.mark_output(g.matmul(g.div(x, g.sqrt(g.add(1e-6, ms))), w))
    return g


def lora(m: int = 8, k: int = 4096, n: int = 4096, r: int = 16, dtype: str = "float16", order: int = 0,
         ) -> yr.KernelGraph:
    g = yr.new_kernel_graph()
    x = g.new_input(dims=(m, k), dtype=dtype)
    w = g.new_input(dims=(k, n), dtype=dtype)
    a = g.new_input(dims=(k, r), dtype=dtype)
    b = g.new_input(dims=(r, n), dtype=dtype)
    if order == 0:
        g.mark_output(g.add(g.matmul(x, w), g.matmul(g.matmul(x, a), b)))
    else:
        g.mark_output(g.add(g.matmul(g.matmul(x, a), b), g.matmul(x, w)))
    return g


def gqa_decode(batch: int = 1, kv_heads: int = 8, group: int = 4, head_dim: int = 128, kv_len: int = 4096,
               dtype: str = "float16", order: int = 0) -> yr.KernelGraph:
    """One decode step: q (batch*kv_heads, group, d), K^T (batch*kv_heads, d, L), V (batch*kv_heads, L, d)."""
    g = yr.new_kernel_graph()
    q = g.new_input(dims=(batch * kv_heads, group, head_dim), dtype=dtype)
    kt = g.new_input(dims=(batch * kv_heads, head_dim, kv_len), dtype=dtype)
    v = g.new_input(dims=(batch * kv_heads, kv_len, head_dim), dtype=dtype)
    scale = head_dim ** -0.5
    if order == 0:
        g.mark_output(g.matmul(g.softmax(g.mul(g.matmul(q, kt), scale)), v))
    else:  # softmax by hand
        s = g.mul(scale, g.matmul(q, kt))
        e = g.exp(g.sub(s, g.max(s, dim=-1)))
        g.mark_output(g.matmul(g.div(e, g.sum(e, dim=-1)), v))
    return g


WORKLOADS = {"gated_mlp": gated_mlp, "rmsnorm_linear": rmsnorm_linear, "lora": lora, "gqa_decode": gqa_decode}
