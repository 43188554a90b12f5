"""Can a group of ops be one Triton kernel, and how: axes, passes and the values each pass computes.

Every tensor is seen as (batch, rows, cols). All tensors of a kernel share the row axis ``M`` (tiled by programs),
except matmul weights whose rows are the contraction axis. Column axes are found by unification: an elementwise op
has its operands' column axis, a matmul ties A's columns to B's rows. The axis of the outputs is ``N`` (tiled by
programs); any other column axis is looped over in chunks (a *pass*), or held whole in registers (*full*) when a
matmul in the kernel produces values on it (LoRA's ``X @ A``, at most ``FULL_MAX`` wide).

A value's *level* is how many passes must finish before it can be computed: loads are level 0, a reduction or
matmul over values of level L is computed in pass (L, axis) and is level L + 1. Passes at the same level over the
same axis are one loop, so two matmuls reading X share one pass over X (gated MLP), and RMSNorm's sum of squares
shares the matmul's pass once the normalisation has been moved after the matmul.

A group whose scores would have to stay whole in registers but that is a softmax @ V gets the online-softmax
schedule instead (``online.py``: one pass over the keys with a running max and rescaled accumulator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

from ascend_compat.superopt.graph import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, KernelGraph

FULL_MAX = 128


class UnschedulableError(Exception):
    """This group of ops cannot be one kernel (the message says why; the search then cuts it elsewhere).

    ``final`` is False when adding more ops to the group could still make it a kernel (a concat waiting for its
    matmul, an intermediate that a later op would consume): the search only prunes on final reasons.
    """

    def __init__(self, message: str, final: bool = True) -> None:
        super().__init__(message)
        self.final = final


class TooWideError(UnschedulableError):
    """An axis would have to be held whole in registers and is wider than ``FULL_MAX``."""


def dims3(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(batch, rows, cols) of a shape."""
    cols = shape[-1] if shape else 1
    rows = shape[-2] if len(shape) >= 2 else 1
    return math.prod(shape[:-2]) if len(shape) > 2 else 1, rows, cols


@dataclass
class KernelSchedule:
    nodes: list[int]
    loads: list[int]                      # external tensors read, in argument order
    outputs: list[int]                    # tensors written, in argument order
    col: dict[int, Optional[str]]         # value -> column axis name (None: one column)
    row: dict[int, Optional[str]]         # value -> row axis name ("M", a contraction axis, or None)
    extent: dict[str, int]                # axis name -> extent
    full: set[str]                        # axes held whole in registers
    level: dict[int, int]
    segments: dict[int, list[tuple[int, int]]]  # matmul -> [(A, B)] (several after concat-matmuls)
    passes: list[tuple[int, str]] = field(default_factory=list)  # (stage, axis) in execution order
    batch: int = 1
    kind: str = "vector"                  # "cube" when it has a matmul
    online: Optional[Any] = None          # an online.OnlineMatch: the flash-decoding schedule (see online.py)

    @property
    def out_axis(self) -> Optional[str]:
        return "N" if "N" in self.extent else None


class _UF:
    def __init__(self) -> None:
        self.parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(self, x: tuple[str, int]) -> tuple[str, int]:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: tuple[str, int], b: tuple[str, int]) -> None:
        self.parent[self.find(a)] = self.find(b)


def _segments(graph: KernelGraph, ops: set[int], users: dict[int, list[int]]) -> dict[int, list[tuple[int, int]]]:
    """Each matmul's (A, B) pairs; a concat is only accepted as both operands of one matmul (concat-matmuls)."""
    segs: dict[int, list[tuple[int, int]]] = {}
    absorbed: set[int] = set()
    for i in ops:
        n = graph.nodes[i]
        if n.op != "matmul":
            continue
        a, b = n.inputs
        na, nb = graph.nodes[a], graph.nodes[b]
        if a in ops and b in ops and na.op == "concat" and nb.op == "concat":
            ka = [graph.nodes[j].shape[-1] for j in na.inputs]
            kb = [graph.nodes[j].shape[-2] for j in nb.inputs]
            if ka != kb or na.attr("dim") != len(na.shape) - 1 or nb.attr("dim") != len(nb.shape) - 2:
                raise UnschedulableError("concat operands of a matmul must split the contraction the same way")
            if users[a] != [i] or users[b] != [i]:
                raise UnschedulableError("a concat feeding a matmul is also used elsewhere")
            segs[i] = list(zip(na.inputs, nb.inputs))
            absorbed |= {a, b}
        else:
            segs[i] = [(a, b)]
    for i in ops:
        if graph.nodes[i].op == "concat" and i not in absorbed:
            raise UnschedulableError("concat is only fused as the two operands of one matmul", final=False)
    return segs


def schedule(graph: KernelGraph, ops: list[int], outputs: list[int]) -> KernelSchedule:
    """The schedule of ``ops`` (topologically ordered node ids) as one kernel writing ``outputs``."""
    opset = set(ops)
    users = graph.consumers()
    segs = _segments(graph, opset, users)
    body = [i for i in ops if graph.nodes[i].op != "concat"]
    loads: list[int] = []
    uf = _UF()
    shapes = {}

    def use(j: int) -> int:
        if j not in opset and graph.nodes[j].op != "const" and j not in loads:
            loads.append(j)
        shapes[j] = dims3(graph.nodes[j].shape)
        return j

    batch = max(dims3(graph.nodes[o].shape)[0] for o in outputs)
    for i in body:
        n = graph.nodes[i]
        shapes[i] = dims3(n.shape)
        rows = shapes[i][1]
        if n.op in ELEMENTWISE_BINARY or n.op in ELEMENTWISE_UNARY:
            for j in n.inputs:
                _, r, c = dims3(graph.nodes[use(j)].shape)
                if c > 1:
                    uf.union(("c", j), ("c", i))
                if r > 1:
                    uf.union(("r", j), ("r", i))
        elif n.op in ("sum", "mean", "max"):
            j = use(n.inputs[0])
            if n.attr("dim") != len(n.shape) - 1:
                raise UnschedulableError(f"{n.op} over dim {n.attr('dim')} (only the last dim is fused)")
            if rows > 1:
                uf.union(("r", j), ("r", i))
        elif n.op == "matmul":
            for a, b in segs[i]:
                use(a), use(b)
                if rows > 1:
                    uf.union(("r", a), ("r", i))
                uf.union(("c", a), ("r", b))
                uf.union(("c", b), ("c", i))
        else:
            raise UnschedulableError(f"op {n.op} cannot be fused")
        for j in n.inputs:
            if j in shapes and shapes[j][0] not in (1, batch):
                raise UnschedulableError(f"batch dims of {graph.nodes[j].shape} do not match the kernel's ({batch})")
    try:
        return _finish(graph, body, outputs, loads, uf, shapes, segs, batch)
    except TooWideError as e:
        from ascend_compat.superopt import online

        m = online.match(graph, body, outputs)
        if m is not None:
            return online.schedule(graph, m, batch)  # type: ignore[no-any-return]
        # a group on its way to an online softmax (it has the max) may still become one kernel
        raise UnschedulableError(str(e), final=not any(graph.nodes[i].op == "max" for i in body)) from None


def _finish(graph: KernelGraph, body: list[int], outputs: list[int], loads: list[int], uf: _UF,
            shapes: dict[int, tuple[int, int, int]], segs: dict[int, list[tuple[int, int]]], batch: int,
            ) -> KernelSchedule:
    names: dict[tuple[str, int], str] = {}
    matmuls = [i for i in body if graph.nodes[i].op == "matmul"]
    weights = {b for i in matmuls for _, b in segs[i]}
    acc_classes = {uf.find(("c", i)) for i in matmuls if shapes[i][2] > 1}
    out_classes = [uf.find(("c", o)) for o in outputs if shapes[o][2] > 1]
    reduced = {uf.find(("c", graph.nodes[i].inputs[0])) for i in body if graph.nodes[i].op in ("sum", "mean", "max")}
    contracted = {uf.find(("c", a)) for i in matmuls for a, _ in segs[i]}
    full = {c for c in acc_classes if c in reduced | contracted or c not in out_classes}
    tiled = [c for c in dict.fromkeys(out_classes) if c not in full]
    if len(tiled) > 1:
        raise UnschedulableError("the outputs have two different column axes", final=False)
    if tiled:
        names[tiled[0]] = "N"
    elif out_classes and out_classes[0] in full:
        names[out_classes[0]] = "N"
    extent: dict[str, int] = {}
    col: dict[int, Optional[str]] = {}
    row: dict[int, Optional[str]] = {}
    for v, (_, r, c) in shapes.items():
        if c > 1:
            cls = uf.find(("c", v))
            names.setdefault(cls, f"K{sum(1 for n in names.values() if n != 'N')}")
            col[v] = name = names[cls]
            extent[name] = c
        else:
            col[v] = None
        row[v] = "M" if r > 1 and v not in weights else None
    for i in matmuls:
        for a, b in segs[i]:
            row[b] = col[a]
            if b not in loads:
                raise UnschedulableError("a matmul's second operand must be read from memory (no ops on weights "
                                         "in-kernel)")
    full_names = {names[c] for c in full if c in names}
    for f in full_names:
        if extent[f] > FULL_MAX:
            raise TooWideError(f"axis {f} ({extent[f]} wide) would have to stay in registers (max {FULL_MAX})")
    rows = {shapes[v][1] for v in shapes if row.get(v) == "M"}
    if len(rows) > 1:
        raise UnschedulableError(f"row extents differ: {sorted(rows)}")
    extent["M"] = rows.pop() if rows else 1
    for o in outputs:
        if col[o] not in (None, "N", *full_names):
            raise UnschedulableError("an output lies on a looped axis", final=False)
    sched = KernelSchedule(body, loads, list(outputs), col, row, extent, full_names, {}, segs, batch=batch,
                           kind="cube" if matmuls else "vector")
    _levels(graph, sched)
    return sched


def _levels(graph: KernelGraph, s: KernelSchedule) -> None:
    passes: set[tuple[int, str]] = set()
    for v in s.col:
        s.level.setdefault(v, 0)
    for i in s.nodes:
        n = graph.nodes[i]
        if n.op == "matmul":
            stages = []
            for a, _ in s.segments[i]:
                axis = s.col[a]
                if axis is None:
                    raise UnschedulableError("matmul over a contraction of width 1")
                stages.append(s.level[a])
                passes.add((s.level[a], axis))
            s.level[i] = max(stages) + 1
        elif n.op in ("sum", "mean", "max"):
            j = n.inputs[0]
            axis = s.col[j]
            if axis is None:
                s.level[i] = s.level[j]
                continue
            passes.add((s.level[j], axis))
            s.level[i] = s.level[j] + 1
        else:
            s.level[i] = max(s.level[j] for j in n.inputs)
    s.passes = sorted(passes)
