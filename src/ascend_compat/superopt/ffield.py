"""Equivalence of kernel graphs by random tests over a prime field (Mirage's method).

Both graphs are evaluated on the same random inputs in Z_p. add/sub/mul/matmul/sum/concat are exact there, division
is multiplication by the inverse, ``mean`` divides by the extent, and constants that are small rationals map to
their field values, so every algebraic rewrite (reassociation, moving a scale past a matmul, splitting a matmul
over concatenated operands) keeps the outputs equal. The transcendental ops (exp, sqrt, silu, gelu, relu, clamp and
the max reduction) are uninterpreted: each is a fixed random function of its argument, the same in both graphs, so
a rewrite is only accepted if it holds whatever those functions are. A wrong graph agrees on one test with
probability about 1/p; several independent tests make that negligible. Graphs are checked on small extents (each
distinct size mapped to a distinct small size) so that a check takes milliseconds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ascend_compat.superopt.graph import GraphError, KernelGraph

P = 32749  # largest prime below 2**15: products stay below 2**30 and sums of 2**33 products fit in int64


def _inv(x: np.ndarray) -> np.ndarray:
    """Elementwise inverse mod P (0 maps to 0) by Fermat's little theorem."""
    result = np.ones_like(x)
    base, e = x % P, P - 2
    while e:
        if e & 1:
            result = result * base % P
        base = base * base % P
        e >>= 1
    return result


def _tag(name: str) -> tuple[int, int, int]:
    h = hashlib.sha256(name.encode()).digest()
    return tuple(int.from_bytes(h[i:i + 4], "little") % (P - 1) + 1 for i in (0, 4, 8))  # type: ignore[return-value]


def _uninterpreted(name: str, x: np.ndarray) -> np.ndarray:
    """A fixed pseudo-random function of each element, one per op name (and attributes)."""
    c1, c2, c3 = _tag(name)
    y = (x + c1) % P
    y5 = y * y % P
    y5 = y5 * y5 % P * y % P
    return (y5 * c2 + c3 * x + c1 * c3) % P


def const_value(value: float) -> int:
    """The field element for a constant: exact for small rationals (1/2, 1e-6 is 1/10**6), hashed otherwise."""
    frac = Fraction(value).limit_denominator(10**9)
    if float(frac) == value and abs(frac.numerator) < 10**12:
        num, den = frac.numerator % P, frac.denominator % P
        if den:
            return int(num * pow(den, P - 2, P) % P)
    return int.from_bytes(hashlib.sha256(repr(value).encode()).digest()[:4], "little") % P


def evaluate(graph: KernelGraph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs of ``graph`` over Z_p on ``inputs`` (int64 arrays of the input shapes)."""
    vals: dict[int, np.ndarray] = {}
    for i, n in enumerate(graph.nodes):
        a = [vals[j] for j in n.inputs]
        op = n.op
        if op == "input":
            v = inputs[n.attr("index")]
        elif op == "const":
            v = np.array(const_value(n.attr("value")), dtype=np.int64)
        elif op in ("add", "sub", "mul"):
            v = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a[0], a[1]) % P
        elif op == "div":
            v = a[0] * _inv(a[1]) % P
        elif op == "square":
            v = a[0] * a[0] % P
        elif op == "neg":
            v = (-a[0]) % P
        elif op == "rsqrt":  # rsqrt(x) = 1 / sqrt(x): keeps div(a, sqrt(b)) == mul(a, rsqrt(b)) provable
            v = _inv(_uninterpreted("sqrt", a[0]))
        elif op in ("exp", "sqrt", "silu", "gelu", "relu"):
            v = _uninterpreted(op, a[0])
        elif op == "clamp":
            v = _uninterpreted(f"clamp{n.attr('min')},{n.attr('max')}", a[0])
        elif op == "matmul":
            v = np.matmul(a[0], a[1]) % P
        elif op in ("sum", "mean"):
            v = np.sum(a[0], axis=n.attr("dim"), keepdims=True) % P
            if op == "mean":
                v = v * pow(a[0].shape[n.attr("dim")] % P, P - 2, P) % P
        elif op == "max":  # a symmetric uninterpreted function of the reduced elements
            v = np.sum(_uninterpreted("max", a[0]), axis=n.attr("dim"), keepdims=True) % P
        elif op == "concat":
            v = np.concatenate(a, axis=n.attr("dim"))
        else:
            raise GraphError(f"op {op!r} has no finite-field semantics")
        vals[i] = v
    return [vals[o] for o in graph.outputs]


def small_shapes(graph: KernelGraph, cap: int = 12) -> list[tuple[int, ...]]:
    """Input shapes with each distinct extent above ``cap`` mapped to a distinct small extent (1 stays 1)."""
    extents = sorted({d for i in graph.inputs for d in graph.nodes[i].shape})
    big = [e for e in extents if e > cap]
    mapping = {e: e for e in extents if e <= cap}
    free = [x for x in range(cap + 1, cap + 1 + 4 * len(big)) if x not in mapping.values()]
    for e, x in zip(big, free):
        mapping[e] = x
    return [tuple(mapping[d] for d in graph.nodes[i].shape) for i in graph.inputs]


@dataclass
class Verdict:
    equivalent: bool
    reason: str
    tests: int


def equivalent(a: KernelGraph, b: KernelGraph, tests: int = 3, seed: int = 0) -> Verdict:
    """Whether ``a`` and ``b`` compute the same outputs (random tests over Z_p, on small extents)."""
    ia, ib = [a.nodes[i] for i in a.inputs], [b.nodes[i] for i in b.inputs]
    if [(n.shape, n.dtype) for n in ia] != [(n.shape, n.dtype) for n in ib]:
        return Verdict(False, "the inputs differ (shapes or dtypes)", 0)
    if [a.nodes[o].shape for o in a.outputs] != [b.nodes[o].shape for o in b.outputs]:
        return Verdict(False, "the output shapes differ: "
                       f"{[a.nodes[o].shape for o in a.outputs]} vs {[b.nodes[o].shape for o in b.outputs]}", 0)
    shapes = small_shapes(a)
    try:
        sa, sb = a.with_input_shapes(shapes), b.with_input_shapes(shapes)
    except GraphError as e:
        return Verdict(False, f"not shape-generic: {e}", 0)
    rng = np.random.default_rng(seed)
    for t in range(tests):
        ins = [rng.integers(0, P, size=s, dtype=np.int64) for s in shapes]
        for k, (x, y) in enumerate(zip(evaluate(sa, ins), evaluate(sb, ins))):
            if x.shape != y.shape or not np.array_equal(x, y):
                return Verdict(False, f"output {k} differs over Z_{P} on random test {t + 1}", t + 1)
    return Verdict(True, f"equal on {tests} random tests over Z_{P}", tests)
