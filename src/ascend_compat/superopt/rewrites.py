"""Algebraic rewrites of kernel graphs, on hash-consed terms.

Every graph is first put in a canonical form (commutative operands ordered, ``x*x`` as ``square``, ``a/sqrt(b)`` as
``a*rsqrt(b)``, row scales pulled outermost), so graphs written in different op orders meet. The search then
applies the rules below anywhere in the graph, breadth first, and keeps every distinct variant (each is verified
over the finite field before it can be used):

- ``scale-past-matmul``: ``(A * r) @ B -> (A @ B) * r`` and ``(A / r) @ B -> (A @ B) / r`` for a per-row ``r``
  (RMSNorm's and softmax's normalisation moved after the matmul, so the matmul no longer waits for it);
- ``scale-out-of-reduction``: ``sum(A * r) -> sum(A) * r`` for a per-row ``r`` (reduction reassociation);
- ``reduce-through-matmul``: ``sum(A @ B, -1) -> A @ sum(B, -1)`` (a reduction moved onto the weights);
- ``concat-matmuls`` (LoRA): ``A @ B + C @ D -> concat(A, C) @ concat(B, D)`` (one matmul, one accumulator).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ascend_compat.superopt.graph import COMMUTATIVE, GraphError, KernelGraph, Node, infer_shape


@dataclass(frozen=True)
class Term:
    op: str
    args: tuple[Term, ...]
    shape: tuple[int, ...]
    dtype: str
    attrs: tuple = ()
    group: str = field(default="", compare=False, hash=False)


def mk(op: str, args: tuple[Term, ...], attrs: tuple = (), group: str = "") -> Term:
    node = Node(op, (), (), args[0].dtype, attrs)
    return Term(op, args, infer_shape(node, [a.shape for a in args]), args[0].dtype, attrs, group)


def to_terms(graph: KernelGraph) -> list[Term]:
    memo: dict[int, Term] = {}
    for i, n in enumerate(graph.nodes):
        memo[i] = Term(n.op, tuple(memo[j] for j in n.inputs), n.shape, n.dtype, n.attrs, n.group)
    return [memo[o] for o in graph.outputs]


def to_graph(outputs: list[Term], inputs: list[Term]) -> KernelGraph:
    """Back to a node list: inputs first (in their order), then a post-order walk of the outputs."""
    g = KernelGraph()
    ids: dict[Term, int] = {}

    def visit(t: Term) -> int:
        if t in ids:
            return ids[t]
        args = tuple(visit(a) for a in t.args)
        g.nodes.append(Node(t.op, args, t.shape, t.dtype, t.attrs, t.group))
        ids[t] = len(g.nodes) - 1
        return ids[t]

    for t in inputs:
        visit(t)
    g.outputs = [visit(t) for t in outputs]
    return g


def _key(t: Term, memo: dict[Term, str]) -> str:
    if t not in memo:
        memo[t] = f"{t.op}{t.attrs}{t.shape}(" + ",".join(_key(a, memo) for a in t.args) + ")"
    return memo[t]


def is_row_scale(r: Term, like: Term) -> bool:
    """``r`` scales whole rows of ``like``: its last dim is 1 (or it is a scalar) and it broadcasts against ``like``."""
    if r.shape == ():
        return True
    if len(like.shape) < 2 or r.shape[-1] != 1 or len(r.shape) > len(like.shape):
        return False
    return all(x in (1, y) for x, y in zip(reversed(r.shape), reversed(like.shape)))


def canonical(outputs: list[Term]) -> list[Term]:
    """The canonical form of a term DAG (see the module docstring)."""
    memo: dict[Term, Term] = {}
    keys: dict[Term, str] = {}

    def canon(t: Term) -> Term:
        if t in memo:
            return memo[t]
        args = tuple(canon(a) for a in t.args)
        out = Term(t.op, args, t.shape, t.dtype, t.attrs, t.group)
        if t.op == "mul" and args[0] == args[1]:
            out = Term("square", (args[0],), t.shape, t.dtype, (), t.group)
        elif t.op == "div" and args[1].op == "sqrt":
            out = canon(Term("mul", (args[0], mk("rsqrt", args[1].args, group=args[1].group)), t.shape, t.dtype, (),
                             t.group))
        elif t.op == "mul":
            out = _pull_row_scale(out) or out
        if out.op in COMMUTATIVE:
            a, b = out.args
            if _key(a, keys) > _key(b, keys):
                out = Term(out.op, (b, a), out.shape, out.dtype, out.attrs, out.group)
        memo[t] = out
        return out

    return [canon(t) for t in outputs]


def _pull_row_scale(t: Term) -> Optional[Term]:
    """``(A * r) * c -> (A * c) * r`` for a per-row ``r`` and a ``c`` that is not: row scales end up outermost."""
    for inner, c in ((t.args[0], t.args[1]), (t.args[1], t.args[0])):
        if inner.op != "mul" or is_row_scale(c, t) or not is_row_scale_any(c):
            continue
        for a, r in ((inner.args[0], inner.args[1]), (inner.args[1], inner.args[0])):
            if is_row_scale(r, a) and not is_row_scale(a, r) and inner.shape == t.shape:
                ac = mk("mul", (a, c), group=t.group)
                if ac.shape == t.shape:
                    return mk("mul", (ac, r), group=inner.group)
    return None


def is_row_scale_any(c: Term) -> bool:
    """``c`` varies along its last dim (a column vector or a full tensor)."""
    return c.shape != () and c.shape[-1] != 1


# ---------------------------------------------------------------------------------------------------- rules
def rule_scale_past_matmul(t: Term) -> Optional[Term]:
    if t.op != "matmul" or t.args[0].op not in ("mul", "div"):
        return None
    inner, b = t.args
    pairs = [(inner.args[0], inner.args[1])]
    if inner.op == "mul":
        pairs.append((inner.args[1], inner.args[0]))
    for a, r in pairs:
        if is_row_scale(r, a) and a.shape == inner.shape and (r.shape == () or len(r.shape) <= len(a.shape)):
            if r.shape != () and len(r.shape) >= 2 and r.shape[-2] not in (1, a.shape[-2]):
                continue
            return mk(inner.op, (mk("matmul", (a, b), group=t.group), r), group=inner.group)
    return None


def rule_scale_out_of_reduction(t: Term) -> Optional[Term]:
    if t.op not in ("sum", "mean") or t.args[0].op != "mul" or t.attrs != (("dim", len(t.shape) - 1),):
        return None
    inner = t.args[0]
    for a, r in ((inner.args[0], inner.args[1]), (inner.args[1], inner.args[0])):
        if is_row_scale(r, a) and a.shape == inner.shape:
            return mk("mul", (mk(t.op, (a,), t.attrs, group=t.group), r), group=inner.group)
    return None


def rule_reduce_through_matmul(t: Term) -> Optional[Term]:
    if t.op not in ("sum", "mean") or t.args[0].op != "matmul" or t.attrs != (("dim", len(t.shape) - 1),):
        return None
    a, b = t.args[0].args
    return mk("matmul", (a, mk(t.op, (b,), (("dim", len(b.shape) - 1),), group=t.group)), group=t.args[0].group)


def rule_concat_matmuls(t: Term) -> Optional[Term]:
    if t.op != "add" or t.args[0].op != "matmul" or t.args[1].op != "matmul" or t.args[0].shape != t.args[1].shape:
        return None
    (a, b), (c, d) = t.args[0].args, t.args[1].args
    if a.shape[:-1] != c.shape[:-1] or b.shape[:-2] != d.shape[:-2] or b.shape[-1] != d.shape[-1]:
        return None
    ac = mk("concat", (a, c), (("dim", len(a.shape) - 1),), group=t.group)
    bd = mk("concat", (b, d), (("dim", len(b.shape) - 2),), group=t.group)
    return mk("matmul", (ac, bd), group=t.args[0].group)


RULES: dict[str, Callable[[Term], Optional[Term]]] = {
    "scale-past-matmul": rule_scale_past_matmul,
    "scale-out-of-reduction": rule_scale_out_of_reduction,
    "reduce-through-matmul": rule_reduce_through_matmul,
    "concat-matmuls": rule_concat_matmuls,
}


def _subterms(outputs: list[Term]) -> list[Term]:
    seen: dict[Term, None] = {}

    def walk(t: Term) -> None:
        if t in seen:
            return
        for a in t.args:
            walk(a)
        seen[t] = None

    for o in outputs:
        walk(o)
    return list(seen)


def _substitute(outputs: list[Term], old: Term, new: Term) -> list[Term]:
    memo: dict[Term, Term] = {}

    def sub(t: Term) -> Term:
        if t == old:
            return new
        if t not in memo:
            memo[t] = Term(t.op, tuple(sub(a) for a in t.args), t.shape, t.dtype, t.attrs, t.group)
        return memo[t]

    return [sub(o) for o in outputs]


@dataclass
class Variant:
    graph: KernelGraph
    rewrites: list[str]


def variants(graph: KernelGraph, limit: int = 48) -> list[Variant]:
    """The canonical form of ``graph`` and the distinct graphs reachable from it by the rules (breadth first)."""
    inputs_t = [Term(n.op, (), n.shape, n.dtype, n.attrs, n.group) for n in (graph.nodes[i] for i in graph.inputs)]
    start = canonical(to_terms(graph))
    seen = {tuple(start)}
    queue: list[tuple[list[Term], list[str]]] = [(start, [])]
    out: list[Variant] = []
    while queue and len(out) < limit:
        terms, path = queue.pop(0)
        try:
            out.append(Variant(to_graph(terms, inputs_t), path))
        except GraphError:
            continue
        for t in _subterms(terms):
            for name, rule in RULES.items():
                try:
                    new = rule(t)
                except GraphError:
                    new = None
                if new is None or new.shape != t.shape:
                    continue
                nxt = canonical(_substitute(terms, t, new))
                if tuple(nxt) not in seen:
                    seen.add(tuple(nxt))
                    queue.append((nxt, [*path, name]))
    return out
