"""Cost model: bytes moved and flops of a plan against the target's bandwidth and peak (for ranking plans).

DRAM bytes count each tensor a kernel reads or writes once, plus the re-reads by other tiles when the tensor is too
big to stay in L2 (half of it); re-reads that L2 serves count as L2 traffic (modelled at 4x the DRAM bandwidth).
A kernel with fewer programs than cores runs at that fraction of the machine. The eager baseline runs each
user-level op (``rms_norm``, ``softmax`` count as one) as its own kernel reading and writing memory. A split-K plan
(``splitk.py``) writes its fp32 partials instead of the output and pays a second launch (the combine) that reads them
and writes the output; its programs each loop over one key range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ascend_compat.superopt._data import elem_bytes
from ascend_compat.superopt.checks import programs
from ascend_compat.superopt.graph import KernelGraph
from ascend_compat.superopt.schedule import KernelSchedule, dims3

L2_SPEEDUP = 4.0
STEP_US = 0.02  # per loop iteration of a program (issue, sync, pipeline fill): favours fewer passes, larger tiles


@dataclass
class Cost:
    dram_bytes: float = 0.0
    l2_bytes: float = 0.0
    flops: float = 0.0
    time_us: float = 0.0
    kernels: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.dram_bytes + other.dram_bytes, self.l2_bytes + other.l2_bytes, self.flops + other.flops,
                    self.time_us + other.time_us, self.kernels + other.kernels)

    def as_dict(self) -> dict[str, float]:
        return {"dram_bytes": int(self.dram_bytes), "l2_bytes": int(self.l2_bytes), "flops": int(self.flops),
                "time_us": round(self.time_us, 3), "kernels": self.kernels}


def nbytes(graph: KernelGraph, v: int) -> int:
    n = graph.nodes[v]
    return math.prod(n.shape) * elem_bytes(n.dtype)


def _time(c: Cost, target: dict[str, Any], dtype: str, util: float) -> float:
    bw = target["hbm_gbps"] * 1e3  # bytes per microsecond
    peak = target["peak_tflops"].get(dtype, min(target["peak_tflops"].values())) * 1e6  # flops per microsecond
    return target["launch_us"] + max(c.dram_bytes / bw, c.l2_bytes / (bw * L2_SPEEDUP), c.flops / peak) / util


def _flops(graph: KernelGraph, ids: list[int]) -> float:
    total = 0.0
    for i in ids:
        n = graph.nodes[i]
        if n.op == "matmul":
            total += 2 * math.prod(n.shape) * graph.nodes[n.inputs[0]].shape[-1]
        elif n.op == "concat":
            continue
        elif n.op not in ("input", "const"):
            total += math.prod(graph.nodes[n.inputs[0]].shape if n.inputs else n.shape)
    return total


def kernel_cost(graph: KernelGraph, s: KernelSchedule, tiles: dict[str, int], target: dict[str, Any]) -> Cost:
    tasks, _ = programs(s, tiles, target)
    mb = -(-s.extent["M"] // tiles["BLOCK_M"])
    nb = -(-s.extent.get("N", 1) // tiles["BLOCK_N"])
    c = Cost(kernels=1, flops=_flops(graph, s.nodes))
    passes_over = {a: sum(1 for _, x in s.passes if x == a) for _, a in s.passes}
    for v in s.loads:
        size = nbytes(graph, v)
        col, row = s.col.get(v), s.row.get(v)
        b = dims3(graph.nodes[v].shape)[0]
        if row not in (None, "M"):  # a weight: every row block reads it
            factor = mb * (nb if col != "N" else 1) * (s.batch if b == 1 else 1)
        elif col == "N" and "N" not in s.full:
            factor = 1 + passes_over.get("N", 0)
        else:
            factor = (nb if row == "M" else mb * nb) * max(1, passes_over.get(col, 1) if col else 1)
        if factor > 1 and size <= target["l2_bytes"] / 2:
            c.dram_bytes += size
            c.l2_bytes += size * factor
        else:
            c.dram_bytes += size * factor
    splits = tiles.get("SPLITS", 1)
    # split-K writes fp32 partials instead of the output (the combine reads them and writes it)
    c.dram_bytes += _scratch(s, tiles) if splits > 1 else sum(nbytes(graph, o) for o in s.outputs)
    cores = target.get("cube_cores" if s.kind == "cube" else "vector_cores", target.get("sms", 1))
    util = min(1.0, tasks / cores)
    steps = sum(1 if a in s.full else -(-s.extent[a] // tiles["BLOCK_N" if a == "N" else f"BLOCK_{a}"])
                for _, a in s.passes)
    steps = -(-steps // splits)  # each program loops over its key range only
    dtype = graph.nodes[s.outputs[0]].dtype
    c.time_us = _time(c, target, dtype, util) + steps * STEP_US * -(-tasks // cores)
    return c + _combine_cost(graph, s, tiles, target) if splits > 1 else c


def _scratch(s: KernelSchedule, tiles: dict[str, int]) -> int:
    from ascend_compat.superopt import splitk

    return splitk.scratch_bytes(s, tiles)


def _combine_cost(graph: KernelGraph, s: KernelSchedule, tiles: dict[str, int], target: dict[str, Any]) -> Cost:
    """Split-K's second launch: read the partials, write the output (two short loops over the splits)."""
    from ascend_compat.superopt import splitk

    tasks, _ = splitk.combine_programs(s, tiles, target)
    splits = tiles["SPLITS"]
    c = Cost(kernels=1, flops=4.0 * s.batch * splits * s.extent["M"] * s.extent["N"])
    c.dram_bytes = _scratch(s, tiles) + sum(nbytes(graph, o) for o in s.outputs)
    cores = target.get("vector_cores", target.get("sms", 1))
    dtype = graph.nodes[s.outputs[0]].dtype
    c.time_us = _time(c, target, dtype, min(1.0, tasks / cores)) + 2 * splits * STEP_US * -(-tasks // cores)
    return c


def groups_cost(graph: KernelGraph, groups: list[list[int]], target: dict[str, Any]) -> Cost:
    """Each group of nodes as one memory-to-memory kernel (eager torch, or the torch backend)."""
    users = graph.consumers()
    total = Cost()
    for ids in groups:
        members = set(ids)
        ins = {j for i in ids for j in graph.nodes[i].inputs if j not in members and graph.nodes[j].op != "const"}
        outs = {i for i in ids if i in graph.outputs or any(u not in members for u in users[i])}
        c = Cost(kernels=1, flops=_flops(graph, ids))
        c.dram_bytes = sum(nbytes(graph, v) for v in ins | outs)
        c.time_us = _time(c, target, graph.nodes[ids[-1]].dtype, 1.0)
        total = total + c
    return total


def eager_cost(graph: KernelGraph, target: dict[str, Any], by_group: bool = True) -> Cost:
    """torch eager: one kernel per user-level op (``by_group``) or per primitive op."""
    groups: dict[str, list[int]] = {}
    for i, n in enumerate(graph.nodes):
        if n.op not in ("input", "const"):
            groups.setdefault(n.group if by_group and n.group else f"#{i}", []).append(i)
    return groups_cost(graph, list(groups.values()), target)
