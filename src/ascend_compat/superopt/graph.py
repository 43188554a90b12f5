"""Kernel graphs: the user-facing builder (Mirage/YiRage API) and the primitive-op IR the search rewrites.

A graph is a list of immutable ``Node`` s in topological order. Composite ops (``rms_norm``, ``softmax``, ``mean``
over a dim written by hand...) are built from primitives at build time; each node remembers the user-level op it
came from (``group``) so the eager baseline and ``explain()`` speak in the user's terms. Shapes and dtypes are
checked when an op is added: a mismatch names the op and both shapes.
"""

from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union

DTYPES = ("float16", "bfloat16", "float32", "float64")
ELEMENTWISE_UNARY = ("exp", "sqrt", "rsqrt", "square", "silu", "gelu", "relu", "neg", "clamp")
ELEMENTWISE_BINARY = ("add", "sub", "mul", "div")
REDUCTIONS = ("sum", "mean", "max")
COMMUTATIVE = ("add", "mul")


class GraphError(ValueError):
    """A graph that cannot be built: the message names the op, the shapes and the dtypes involved."""


@dataclass(frozen=True)
class Node:
    """One primitive op. ``attrs`` is a sorted tuple of (name, value) so nodes hash and compare structurally."""

    op: str
    inputs: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    attrs: tuple[tuple[str, Any], ...] = ()
    group: str = ""

    def attr(self, name: str, default: Any = None) -> Any:
        return dict(self.attrs).get(name, default)


@dataclass(frozen=True)
class DTensor:
    """A tensor of a kernel graph under construction (what ``new_input`` and every op return)."""

    graph: KernelGraph
    index: int

    @property
    def dims(self) -> tuple[int, ...]:
        return self.graph.nodes[self.index].shape

    @property
    def dtype(self) -> str:
        return self.graph.nodes[self.index].dtype

    def __repr__(self) -> str:
        return f"DTensor(#{self.index}, dims={self.dims}, dtype={self.dtype})"


Operand = Union[DTensor, float, int]


def _int(value: Any) -> Optional[int]:
    """``value`` as an int when it is an integer (a Python or NumPy int), else None; a bool is not one: a shape of
    ``(True, 4)`` or ``dim=True`` is a mistake, not ``(1, 4)`` / ``dim=1``."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _dim(op: str, dim: Any, shape: tuple[int, ...]) -> int:
    """``dim`` as a non-negative axis of ``shape``, or a GraphError naming the op (an int, as in NumPy and torch)."""
    d = _int(dim)
    if d is None:
        raise GraphError(f"{op}: dim must be an int, got {dim!r}")
    if not -len(shape) <= d < len(shape):
        raise GraphError(f"{op}: dim {d} is out of range for shape {shape}")
    return d % len(shape)


def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy broadcasting of two shapes, or a GraphError naming the op and both shapes."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            raise GraphError(f"{op}: shapes {a} and {b} do not broadcast (dim -{i}: {x} vs {y})")
        out.append(max(x, y))
    return tuple(reversed(out))


@dataclass
class KernelGraph:
    """A tensor program over primitive ops; build it with ``new_input`` and the op methods, then ``mark_output``."""

    nodes: list[Node] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    _groups: int = 0

    # ------------------------------------------------------------------ building
    def _add(self, node: Node) -> DTensor:
        self.nodes.append(node)
        return DTensor(self, len(self.nodes) - 1)

    def _check(self, t: Operand, op: str) -> int:
        if isinstance(t, DTensor):
            if t.graph is not self:
                raise GraphError(f"{op}: operand #{t.index} belongs to another graph")
            return t.index
        raise GraphError(f"{op}: expected a tensor of this graph, got {type(t).__name__}")

    def _group(self, name: str) -> str:
        self._groups += 1
        return f"{name}#{self._groups}"

    def new_input(self, dims: tuple[int, ...], dtype: str = "float16") -> DTensor:
        """A graph input of shape ``dims`` (1 to 4 positive ints) and dtype (``yr.float16`` ...)."""
        try:
            given = tuple(dims)
        except TypeError:  # dims=8: a tuple is needed, as in Mirage
            raise GraphError(f"new_input: dims must be a tuple of 1 to 4 positive ints, got {dims!r}") from None
        ints = [_int(d) for d in given]  # NumPy ints too (shapes often come from arrays), never bools
        if not 1 <= len(ints) <= 4 or not all(d is not None and d > 0 for d in ints):
            raise GraphError(f"new_input: dims must be 1 to 4 positive ints, got {given}")
        dims = tuple(d for d in ints if d is not None)
        if dtype not in DTYPES:
            raise GraphError(f"new_input: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        n_in = sum(1 for n in self.nodes if n.op == "input")
        return self._add(Node("input", (), dims, dtype, (("index", n_in),), self._group("input")))

    def const(self, value: float, dtype: str) -> DTensor:
        return self._add(Node("const", (), (), dtype, (("value", float(value)),), "const"))

    def _operand(self, t: Operand, other: Operand, op: str) -> int:
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            if not isinstance(other, DTensor):
                raise GraphError(f"{op}: at least one operand must be a tensor")
            return self.const(float(t), other.dtype).index
        return self._check(t, op)

    def _binary(self, op: str, a: Operand, b: Operand, group: str = "") -> DTensor:
        ia, ib = self._operand(a, b, op), self._operand(b, a, op)
        na, nb = self.nodes[ia], self.nodes[ib]
        if na.dtype != nb.dtype:
            raise GraphError(f"{op}: dtypes differ: {na.shape} {na.dtype} and {nb.shape} {nb.dtype}")
        shape = broadcast_shapes(op, na.shape, nb.shape)
        return self._add(Node(op, (ia, ib), shape, na.dtype, (), group or self._group(op)))

    def add(self, a: Operand, b: Operand) -> DTensor:
        return self._binary("add", a, b)

    def sub(self, a: Operand, b: Operand) -> DTensor:
        return self._binary("sub", a, b)

    def mul(self, a: Operand, b: Operand) -> DTensor:
        return self._binary("mul", a, b)

    def div(self, a: Operand, b: Operand) -> DTensor:
        return self._binary("div", a, b)

    def _unary(self, op: str, a: DTensor, attrs: tuple[tuple[str, Any], ...] = (), group: str = "") -> DTensor:
        n = self.nodes[self._check(a, op)]
        return self._add(Node(op, (a.index,), n.shape, n.dtype, attrs, group or self._group(op)))

    def exp(self, a: DTensor) -> DTensor:
        return self._unary("exp", a)

    def sqrt(self, a: DTensor) -> DTensor:
        return self._unary("sqrt", a)

    def rsqrt(self, a: DTensor) -> DTensor:
        return self._unary("rsqrt", a)

    def square(self, a: DTensor) -> DTensor:
        return self._unary("square", a)

    def silu(self, a: DTensor) -> DTensor:
        return self._unary("silu", a)

    def gelu(self, a: DTensor) -> DTensor:
        return self._unary("gelu", a)

    def relu(self, a: DTensor) -> DTensor:
        return self._unary("relu", a)

    def clamp(self, a: DTensor, min_val: Optional[float] = None, max_val: Optional[float] = None) -> DTensor:
        if min_val is None and max_val is None:
            raise GraphError("clamp: give min_val, max_val or both")
        return self._unary("clamp", a, (("max", max_val), ("min", min_val)))

    def reduction(self, a: DTensor, dim: int, op: str = "sum", group: str = "") -> DTensor:
        """Reduce over ``dim`` keeping it (size 1), as Mirage's ``reduction``; ``op`` is sum, mean or max."""
        n = self.nodes[self._check(a, "reduction")]
        if op not in REDUCTIONS:
            raise GraphError(f"reduction: op {op!r} is not one of {', '.join(REDUCTIONS)}")
        dim = _dim(op, dim, n.shape)
        shape = tuple(1 if i == dim else d for i, d in enumerate(n.shape))
        return self._add(Node(op, (a.index,), shape, n.dtype, (("dim", dim),), group or self._group(op)))

    def sum(self, a: DTensor, dim: int = -1) -> DTensor:
        return self.reduction(a, dim, "sum")

    def mean(self, a: DTensor, dim: int = -1) -> DTensor:
        return self.reduction(a, dim, "mean")

    def max(self, a: DTensor, dim: int = -1) -> DTensor:
        return self.reduction(a, dim, "max")

    def matmul(self, a: DTensor, b: DTensor) -> DTensor:
        """``a @ b``: a (..., M, K), b (..., K, N) or (K, N); batch dims of b, when present, equal a's."""
        na, nb = self.nodes[self._check(a, "matmul")], self.nodes[self._check(b, "matmul")]
        if len(na.shape) < 2 or len(nb.shape) < 2:
            raise GraphError(f"matmul: operands must be at least 2-D, got {na.shape} @ {nb.shape}")
        if na.shape[-1] != nb.shape[-2]:
            raise GraphError(f"matmul: inner dims differ: {na.shape} @ {nb.shape} ({na.shape[-1]} != {nb.shape[-2]})")
        if len(nb.shape) > 2 and nb.shape[:-2] != na.shape[:-2]:
            raise GraphError(f"matmul: batch dims differ: {na.shape} @ {nb.shape}")
        if na.dtype != nb.dtype:
            raise GraphError(f"matmul: dtypes differ: {na.shape} {na.dtype} @ {nb.shape} {nb.dtype}")
        shape = (*na.shape[:-1], nb.shape[-1])
        return self._add(Node("matmul", (a.index, b.index), shape, na.dtype, (), self._group("matmul")))

    def concat(self, tensors: list[DTensor], dim: int) -> DTensor:
        """Concatenate along ``dim``; the other dims and the dtypes must agree."""
        if len(tensors) < 2:
            raise GraphError("concat: needs at least two tensors")
        ns = [self.nodes[self._check(t, "concat")] for t in tensors]
        rank = len(ns[0].shape)
        dim = _dim("concat", dim, ns[0].shape)
        for n in ns[1:]:
            same = len(n.shape) == rank and all(x == y for i, (x, y) in enumerate(zip(n.shape, ns[0].shape))
                                                if i != dim)
            if not same or n.dtype != ns[0].dtype:
                raise GraphError(f"concat: {ns[0].shape} {ns[0].dtype} and {n.shape} {n.dtype} differ outside "
                                 f"dim {dim}")
        shape = tuple(sum(n.shape[dim] for n in ns) if i == dim else d for i, d in enumerate(ns[0].shape))
        return self._add(Node("concat", tuple(t.index for t in tensors), shape, ns[0].dtype, (("dim", dim),),
                              self._group("concat")))

    def rms_norm(self, a: DTensor, weight: Optional[DTensor] = None, eps: float = 1e-6) -> DTensor:
        """``a * rsqrt(mean(a^2, -1) + eps) (* weight)``, built from primitives (one user-level op)."""
        g = self._group("rms_norm")
        sq = self._unary("square", a, group=g)
        ms = self.reduction(sq, -1, "mean", group=g)
        r = self._unary("rsqrt", self._binary("add", ms, eps, group=g), group=g)
        y = self._binary("mul", a, r, group=g)
        return self._binary("mul", y, weight, group=g) if weight is not None else y

    def softmax(self, a: DTensor, dim: int = -1) -> DTensor:
        """``exp(a - max) / sum(exp(a - max))`` over ``dim`` (one user-level op)."""
        dim = _dim("softmax", dim, self.nodes[self._check(a, "softmax")].shape)
        g = self._group("softmax")
        m = self.reduction(a, dim, "max", group=g)
        e = self._unary("exp", self._binary("sub", a, m, group=g), group=g)
        return self._binary("div", e, self.reduction(e, dim, "sum", group=g), group=g)

    def mark_output(self, t: DTensor) -> None:
        self.outputs.append(self._check(t, "mark_output"))

    # ------------------------------------------------------------------ queries
    @property
    def inputs(self) -> list[int]:
        ids = [i for i, n in enumerate(self.nodes) if n.op == "input"]
        return sorted(ids, key=lambda i: self.nodes[i].attr("index"))

    def consumers(self) -> dict[int, list[int]]:
        users: dict[int, list[int]] = {i: [] for i in range(len(self.nodes))}
        for i, n in enumerate(self.nodes):
            for j in n.inputs:
                users[j].append(i)
        return users

    def validate(self) -> None:
        if not self.outputs:
            raise GraphError("the graph has no output: call mark_output(tensor)")
        if not self.inputs:
            raise GraphError("the graph has no input: call new_input(dims, dtype)")

    def signature(self) -> dict[str, Any]:
        """A JSON-able description (ops, shapes, dtypes, outputs): the cache key's graph part and the kernel comment."""
        nodes = [[n.op, list(n.inputs), list(n.shape), n.dtype, [list(a) for a in n.attrs]] for n in self.nodes]
        return {"nodes": nodes,
                "outputs": list(self.outputs)}

    @classmethod
    def from_signature(cls, sig: dict[str, Any]) -> KernelGraph:
        g = cls()
        for op, inputs, shape, dtype, attrs in sig["nodes"]:
            g.nodes.append(Node(op, tuple(inputs), tuple(shape), dtype, tuple(tuple(a) for a in attrs)))
        g.outputs = list(sig["outputs"])
        return g

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.signature(), sort_keys=True).encode()).hexdigest()[:16]

    def describe(self, ids: Optional[list[int]] = None) -> list[str]:
        """One line per node: ``t5 = matmul(t0, t3)  # (8, 64) float16``."""
        lines = []
        for i in ids if ids is not None else range(len(self.nodes)):
            n = self.nodes[i]
            args = [f"t{j}" for j in n.inputs] + [f"{k}={v}" for k, v in n.attrs if v is not None and k != "index"]
            lines.append(f"t{i} = {n.op}({', '.join(args)})  # {n.shape} {n.dtype}")
        return lines

    def subgraph(self, loads: list[int], outputs: list[int]) -> tuple[KernelGraph, dict[int, int]]:
        """The ops computing ``outputs`` from ``loads`` (which become the inputs, in order) and the id mapping."""
        needed: set[int] = set()
        stack = list(outputs)
        while stack:
            i = stack.pop()
            if i not in needed and i not in loads:
                needed.add(i)
                stack += self.nodes[i].inputs
        g, ids = KernelGraph(), {}
        for k, v in enumerate(loads):
            n = self.nodes[v]
            g.nodes.append(Node("input", (), n.shape, n.dtype, (("index", k),)))
            ids[v] = len(g.nodes) - 1
        for i in sorted(needed):
            g.nodes.append(replace(self.nodes[i], inputs=tuple(ids[j] for j in self.nodes[i].inputs)))
            ids[i] = len(g.nodes) - 1
        g.outputs = [ids[o] for o in outputs]
        return g, ids

    def with_input_shapes(self, shapes: list[tuple[int, ...]]) -> KernelGraph:
        """The same program on other input shapes (shapes re-inferred; used to verify on small extents)."""
        out = KernelGraph()
        ins = self.inputs
        for i, n in enumerate(self.nodes):
            if n.op == "input":
                node = replace(n, shape=tuple(shapes[ins.index(i)]))
            else:
                node = replace(n, shape=infer_shape(n, [out.nodes[j].shape for j in n.inputs]))
            out.nodes.append(node)
        out.outputs = list(self.outputs)
        return out


def infer_shape(n: Node, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The output shape of node ``n`` on input shapes ``shapes`` (used when re-instantiating a graph)."""
    if n.op == "const":
        return ()
    if n.op in ELEMENTWISE_BINARY:
        return broadcast_shapes(n.op, shapes[0], shapes[1])
    if n.op in ELEMENTWISE_UNARY:
        return shapes[0]
    if n.op in REDUCTIONS:
        if n.attr("dim") >= len(shapes[0]):
            raise GraphError(f"{n.op}: dim {n.attr('dim')} is out of range for shape {shapes[0]}")
        return tuple(1 if i == n.attr("dim") else d for i, d in enumerate(shapes[0]))
    if n.op == "matmul":
        a, b = shapes
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2] or (len(b) > 2 and b[:-2] != a[:-2]):
            raise GraphError(f"matmul: {a} @ {b} do not multiply")
        return (*a[:-1], b[-1])
    if n.op == "concat":
        d = n.attr("dim")
        if any(len(s) != len(shapes[0]) or any(x != y for i, (x, y) in enumerate(zip(s, shapes[0])) if i != d)
               for s in shapes):
            raise GraphError(f"concat: shapes {shapes} differ outside dim {d}")
        return tuple(sum(s[d] for s in shapes) if i == d else x for i, x in enumerate(shapes[0]))
    raise GraphError(f"unknown op {n.op!r}")
