"""The finite-field verifier: the rewrites it must accept, and >= 200 generated broken graphs it must reject."""

from __future__ import annotations

from dataclasses import replace

import pytest

import ascend_compat.superopt as yr
from ascend_compat.superopt.ffield import equivalent
from ascend_compat.superopt.graph import KernelGraph
from ascend_compat.superopt.rewrites import variants
from tests.superopt.conftest import SMALL, small

UNARY_SWAP = {"exp": "silu", "silu": "gelu", "gelu": "relu", "relu": "exp", "sqrt": "exp", "rsqrt": "sqrt",
              "square": "exp"}
BINARY_SWAP = {"add": "sub", "sub": "add", "mul": "add", "div": "mul"}
REDUCE_SWAP = {"sum": "max", "mean": "sum", "max": "sum"}


def _graphs() -> list[KernelGraph]:
    out = [small(name, order=order) for name in SMALL for order in (0, 1)]
    # square shapes: swapped matmul operands and swapped weights still type-check there
    out += [small("gated_mlp", m=16, k=16, n=16), small("lora", m=16, k=16, n=16, r=16, order=1)]
    out += [small("rmsnorm_linear", m=16, k=16, n=16, order=o) for o in (0, 1)]
    out += [small("gqa_decode", group=32, head_dim=32, kv_len=32, order=o) for o in (0, 1)]
    g = yr.new_kernel_graph()
    x, w, gw = g.new_input((6, 20)), g.new_input((20, 10)), g.new_input((20,))
    g.mark_output(g.matmul(g.rms_norm(x, gw), w))
    out.append(g)
    g = yr.new_kernel_graph()
    x = g.new_input((6, 20))
    g.mark_output(g.clamp(g.softmax(g.gelu(x)), 0.0, 0.5))
    out.append(g)
    return out


def _rebuild(g: KernelGraph, nodes: list) -> KernelGraph | None:  # type: ignore[type-arg]
    m = KernelGraph(nodes=nodes, outputs=list(g.outputs))
    try:
        return m.with_input_shapes([g.nodes[i].shape for i in g.inputs])
    except yr.GraphError:
        return None


def mutations(g: KernelGraph) -> list[tuple[str, KernelGraph]]:
    """Broken copies of ``g``: swapped operands, wrong axis, dropped scale, wrong constant, wrong op, wrong input."""
    out = []
    ins = g.inputs
    for i, n in enumerate(g.nodes):
        cands: list[tuple[str, list]] = []  # type: ignore[type-arg]
        if n.op in ("sub", "div", "matmul", "concat") and n.inputs[0] != n.inputs[1]:
            cands.append(("swap", [replace(n, inputs=tuple(reversed(n.inputs)))]))
        if n.op == "const" and n.attr("value") is not None:
            cands.append(("constant", [replace(n, attrs=(("value", n.attr("value") * 1.5 + 0.25),))]))
        if n.op in ("sum", "mean", "max") and len(n.shape) >= 2:
            other = (n.attr("dim") - 1) % len(n.shape)
            if g.nodes[n.inputs[0]].shape[other] > 1:
                cands.append(("axis", [replace(n, attrs=(("dim", other),))]))
        if n.op in UNARY_SWAP:
            cands.append(("op", [replace(n, op=UNARY_SWAP[n.op])]))
        if n.op in BINARY_SWAP:
            cands.append(("op", [replace(n, op=BINARY_SWAP[n.op])]))
        if n.op in REDUCE_SWAP and g.nodes[n.inputs[0]].shape[n.attr("dim")] > 1:
            cands.append(("op", [replace(n, op=REDUCE_SWAP[n.op])]))
        for k, j in enumerate(n.inputs):
            for other in ins:
                if other != j and g.nodes[j].op == "input" and g.nodes[other].shape == g.nodes[j].shape:
                    new_inputs = tuple(other if x == k else y for x, y in enumerate(n.inputs))
                    cands.append(("input", [replace(n, inputs=new_inputs)]))
        for kind, (new,) in cands:
            m = _rebuild(g, [*g.nodes[:i], new, *g.nodes[i + 1:]])
            if m is not None:
                out.append((kind, m))
        if n.op in ("mul", "div"):  # dropped scale: the consumers read the first operand instead
            keep = n.inputs[0]
            if g.nodes[keep].shape == n.shape and g.nodes[n.inputs[1]].attr("value") != 1.0:
                nodes = [replace(x, inputs=tuple(keep if j == i else j for j in x.inputs)) for x in g.nodes]
                m = _rebuild(g, nodes)
                if m is not None:
                    m.outputs = [keep if o == i else o for o in m.outputs]
                    out.append(("drop-scale", m))
    return out


def test_the_verifier_accepts_none_of_200_broken_graphs() -> None:
    total, kinds = 0, {}
    for g in _graphs():
        broken = [(k, m) for v in variants(g) for k, m in mutations(v.graph)]  # the rewritten graphs, mutated
        for kind, m in broken:
            verdict = equivalent(g, m)
            assert not verdict.equivalent, f"accepted a {kind} mutation:\n" + "\n".join(m.describe())
            total += 1
            kinds[kind] = kinds.get(kind, 0) + 1
    assert total >= 200, (total, kinds)
    assert {"swap", "axis", "drop-scale", "constant", "op", "input"} <= set(kinds)


@pytest.mark.parametrize("name", list(SMALL))
def test_every_rewrite_variant_and_the_other_op_order_are_accepted(name: str) -> None:
    g0, g1 = small(name, order=0), small(name, order=1)
    assert equivalent(g0, g1).equivalent
    found = variants(g1)
    assert len(found) >= 1
    for v in found:
        assert equivalent(g0, v.graph).equivalent, v.rewrites


def test_reduction_reassociation_is_found_and_verified() -> None:
    g = yr.new_kernel_graph()
    x, w = g.new_input((6, 20), yr.float32), g.new_input((20, 10), yr.float32)
    r = g.rsqrt(g.mean(g.square(x)))
    g.mark_output(g.sum(g.mul(g.matmul(x, w), r)))
    found = {tuple(v.rewrites): v for v in variants(g)}
    assert ("scale-out-of-reduction",) in found and ("reduce-through-matmul",) not in found
    assert any("reduce-through-matmul" in k for k in found)
    for v in found.values():
        assert equivalent(g, v.graph).equivalent
