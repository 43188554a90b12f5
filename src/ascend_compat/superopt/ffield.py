"""Equivalence of kernel graphs by random tests over a prime field (Mirage's method).

Both graphs are evaluated on the same random inputs in Z_p. add/sub/mul/matmul/sum/concat are exact there, division
is multiplication by the inverse, ``mean`` divides by the extent, and constants that are small rationals map to
their field values, so every algebraic rewrite (reassociation, moving a scale past a matmul, splitting a matmul
over concatenated operands) keeps the outputs equal. The transcendental ops (exp, sqrt, silu, gelu, relu, clamp and
the max reduction) are uninterpreted: each is a fixed random function of its argument, the same in both graphs, so
a rewrite is only accepted if it holds whatever those functions are. A wrong graph agrees on one test with
probability about 1/p; several independent tests make that negligible. Graphs are checked on small extents (each
distinct size mapped to a distinct small size) so that a check takes milliseconds.

With an exponent domain (``evaluate_nodes(graph, inputs, exponent_domain(graph))``, used to prove online-softmax
schedules, ``online.py``) ``exp`` is instead a group homomorphism, as in Mirage's verifier: ``exp(x) = OMEGA**x``
with OMEGA of prime order Q = 2729 in Z_p* (Q divides p - 1), so the values that feed an ``exp`` are computed in
Z_Q and ``exp(a - b) = exp(a) / exp(b)`` holds exactly; ``max`` stays uninterpreted (the shift a softmax subtracts
then provably cancels, whatever it is).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ascend_compat.superopt.graph import GraphError, KernelGraph

P = 32749  # largest prime below 2**15: products stay below 2**30 and sums of 2**33 products fit in int64
Q = 2729  # prime, divides P - 1 = 12 * 2729: the exponent field of the homomorphic exp
OMEGA = pow(2, (P - 1) // Q, P)  # an element of order Q (2**12 mod P is not 1)


def _inv(x: np.ndarray, mod: int = P) -> np.ndarray:
    """Elementwise inverse mod ``mod`` (0 maps to 0) by Fermat's little theorem."""
    return powmod(x % mod, np.full(np.shape(x), mod - 2, dtype=np.int64), mod)


def powmod(base: np.ndarray, e: np.ndarray, mod: int) -> np.ndarray:
    """Elementwise ``base ** e % mod`` (square and multiply; ``e`` >= 0)."""
    base, e = np.broadcast_arrays(np.asarray(base, dtype=np.int64) % mod, np.asarray(e, dtype=np.int64))
    base, e = base.copy(), e.copy()
    result = np.ones_like(base)
    while e.any():
        result = np.where(e & 1, result * base % mod, result)
        base = base * base % mod
        e >>= 1
    return result


def _tag(name: str, mod: int = P) -> tuple[int, int, int]:
    h = hashlib.sha256(name.encode()).digest()
    return tuple(int.from_bytes(h[i:i + 4], "little") % (mod - 1) + 1 for i in (0, 4, 8))  # type: ignore[return-value]


def uninterpreted(name: str, x: np.ndarray, mod: int = P) -> np.ndarray:
    """A fixed pseudo-random function of each element, one per op name (and attributes)."""
    c1, c2, c3 = _tag(name, mod)
    y = (x + c1) % mod
    y5 = y * y % mod
    y5 = y5 * y5 % mod * y % mod
    return (y5 * c2 + c3 * x + c1 * c3) % mod



def const_value(value: float, mod: int = P) -> int:
    """The field element for a constant: exact for small rationals (1/2, 1e-6 is 1/10**6), hashed otherwise."""
    frac = Fraction(value).limit_denominator(10**9)
    if float(frac) == value and abs(frac.numerator) < 10**12:
        num, den = frac.numerator % mod, frac.denominator % mod
        if den:
            return int(num * pow(den, mod - 2, mod) % mod)
    return int.from_bytes(hashlib.sha256(repr(value).encode()).digest()[:4], "little") % mod


def exponent_domain(graph: KernelGraph) -> set[int] | None:
    """Nodes computed in Z_Q under the homomorphic exp (those that feed an ``exp``), or None when a value would be
    needed in both fields (then the homomorphic semantics does not apply to this graph)."""
    users = graph.consumers()
    dom: set[int] = set()
    todo = [n.inputs[0] for n in graph.nodes if n.op == "exp"]
    while todo:
        i = todo.pop()
        if i in dom:
            continue
        if graph.nodes[i].op == "exp":
            return None
        dom.add(i)
        todo += list(graph.nodes[i].inputs)
    for i in dom:
        if any(u not in dom and graph.nodes[u].op != "exp" for u in users[i]) or i in graph.outputs:
            return None
    return dom


def evaluate(graph: KernelGraph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs of ``graph`` over Z_p on ``inputs`` (int64 arrays of the input shapes)."""
    vals = evaluate_nodes(graph, inputs)
    return [vals[o] for o in graph.outputs]


def evaluate_nodes(graph: KernelGraph, inputs: list[np.ndarray], qdom: set[int] | None = None,
                   ) -> dict[int, np.ndarray]:
    """Every node's value; with ``qdom`` (from ``exponent_domain``) those nodes are in Z_Q and exp is OMEGA**x."""
    vals: dict[int, np.ndarray] = {}
    for i, n in enumerate(graph.nodes):
        a = [vals[j] for j in n.inputs]
        op = n.op
        mod = Q if qdom is not None and i in qdom else P  # the field this node lives in
        if op == "input":
            v = inputs[n.attr("index")] % mod
        elif op == "const":
            v = np.array(const_value(n.attr("value"), mod), dtype=np.int64)
        elif op == "exp" and qdom is not None:
            v = powmod(np.array(OMEGA), a[0], mod)
        elif op in ("add", "sub", "mul"):
            v = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a[0], a[1]) % mod
        elif op == "div":
            v = a[0] * _inv(a[1], mod) % mod
        elif op == "square":
            v = a[0] * a[0] % mod
        elif op == "neg":
            v = (-a[0]) % mod
        elif op == "rsqrt":  # rsqrt(x) = 1 / sqrt(x): keeps div(a, sqrt(b)) == mul(a, rsqrt(b)) provable
            v = _inv(uninterpreted("sqrt", a[0], mod), mod)
        elif op in ("exp", "sqrt", "silu", "gelu", "relu"):
            v = uninterpreted(op, a[0], mod)
        elif op == "clamp":
            v = uninterpreted(f"clamp{n.attr('min')},{n.attr('max')}", a[0], mod)
        elif op == "matmul":
            v = np.matmul(a[0], a[1]) % mod
        elif op in ("sum", "mean"):
            v = np.sum(a[0], axis=n.attr("dim"), keepdims=True) % mod
            if op == "mean":
                v = v * pow(a[0].shape[n.attr("dim")] % mod, mod - 2, mod) % mod
        elif op == "max":  # a symmetric uninterpreted function of the reduced elements
            v = np.sum(uninterpreted("max", a[0], mod), axis=n.attr("dim"), keepdims=True) % mod
        elif op == "concat":
            v = np.concatenate(a, axis=n.attr("dim"))
        else:
            raise GraphError(f"op {op!r} has no finite-field semantics")
        vals[i] = v
    return vals


def small_shapes(graph: KernelGraph, cap: int = 12, at_least: dict[int, int] | None = None,
                 ) -> list[tuple[int, ...]]:
    """Input shapes with each distinct extent above ``cap`` mapped to a distinct small extent (1 stays 1).

    ``at_least`` maps an extent to the smallest small extent it may get (a looped axis must span several blocks).
    """
    extents = sorted({d for i in graph.inputs for d in graph.nodes[i].shape})
    big = [e for e in extents if e > cap]
    mapping = {e: e for e in extents if e <= cap}
    free = [x for x in range(cap + 1, cap + 1 + 4 * len(big)) if x not in mapping.values()]
    for e, x in zip(big, free):
        mapping[e] = x
    for e, low in sorted((at_least or {}).items()):
        if e in mapping and mapping[e] < min(low, e):
            x = min(low, e)
            while x in mapping.values() and x < e:
                x += 1
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
