"""The search: algebraic variants x fusion partitions x tile sizes, each candidate checked and costed.

1. ``rewrites.variants`` gives the canonical graph and every graph the rules reach; each variant must be equal to
   the user's graph over the finite field (``ffield.equivalent``) or it is discarded.
2. For each variant, partitions of its ops into kernels are enumerated depth first, fusing first (so the first
   partition found is the most fused), pruning groups that can never be one kernel and cycles between kernels.
3. Every kernel of a partition is scheduled (``schedule``), tiled (the cheapest tiling that passes the target's
   static checks), and costed (``cost``). An online-softmax kernel (a schedule that reorders the computation) is
   first proven over the finite field (``online.field_check``). Candidates are ranked by modelled time.
The numeric check of the winner (and the fallback to the next candidate) is done by ``runtime``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from ascend_compat.superopt import cost as costmod
from ascend_compat.superopt import online
from ascend_compat.superopt.checks import check, tile_options
from ascend_compat.superopt.ffield import Verdict, equivalent
from ascend_compat.superopt.graph import KernelGraph
from ascend_compat.superopt.rewrites import variants
from ascend_compat.superopt.schedule import KernelSchedule, UnschedulableError, schedule

MAX_PARTITIONS = 600
MAX_STEPS = 40000


@dataclass
class KernelChoice:
    nodes: list[int]
    outputs: list[int]
    schedule: KernelSchedule
    tiles: dict[str, int]
    cost: costmod.Cost


@dataclass
class Candidate:
    variant: int
    rewrites: list[str]
    graph: KernelGraph
    kernels: list[KernelChoice]
    cost: costmod.Cost
    status: str = "unverified"

    def summary(self, ids: bool = False) -> str:
        """``2 kernel(s): matmul+mul | max+...`` (with ``ids``, each op with its plan-graph tensor: ``matmul t4``)."""
        name = (lambda i: f"{self.graph.nodes[i].op} t{i}") if ids else (lambda i: self.graph.nodes[i].op)
        return f"{len(self.kernels)} kernel(s): " + " | ".join("+".join(map(name, k.nodes)) for k in self.kernels)


@dataclass
class SearchResult:
    graph: KernelGraph
    target: dict[str, Any]
    backend: str
    variants: list[tuple[list[str], Verdict]]
    candidates: list[Candidate]
    rejected: dict[str, int] = field(default_factory=dict)
    eager: Optional[costmod.Cost] = None
    seconds: float = 0.0
    partitions: int = 0


def kernel_outputs(graph: KernelGraph, members: set[int], users: dict[int, list[int]],
                   pending: Optional[set[int]] = None) -> list[int]:
    """Members read outside the kernel (or by ops not yet placed) and graph outputs, in node order."""
    outside = lambda u: u not in members or (pending is not None and u in pending)  # noqa: E731
    return sorted(i for i in members if i in graph.outputs or any(outside(u) for u in users[i]))


def _acyclic(graph: KernelGraph, assign: dict[int, int]) -> bool:
    edges: dict[int, set[int]] = {}
    for i, k in assign.items():
        for j in graph.nodes[i].inputs:
            if j in assign and assign[j] != k:
                edges.setdefault(assign[j], set()).add(k)
    state: dict[int, int] = {}

    def dfs(k: int) -> bool:
        state[k] = 1
        for m in edges.get(k, ()):
            if state.get(m) == 1 or (m not in state and not dfs(m)):
                return False
        state[k] = 2
        return True

    return all(dfs(k) for k in set(assign.values()) if k not in state)


def partitions(graph: KernelGraph) -> list[list[list[int]]]:
    """Partitions of the graph's ops into kernels, most fused first (capped at MAX_PARTITIONS)."""
    ops = [i for i, n in enumerate(graph.nodes) if n.op not in ("input", "const")]
    users = graph.consumers()
    results: list[list[list[int]]] = []
    seen: set[frozenset[frozenset[int]]] = set()
    steps = [0]
    memo: dict[tuple[frozenset[int], tuple[int, ...]], bool] = {}

    def viable(members: set[int], placed: set[int]) -> bool:
        outs = kernel_outputs(graph, members, users, set(ops) - placed)
        key = (frozenset(members), tuple(outs))
        if key not in memo:
            try:
                schedule(graph, sorted(members), outs)
                memo[key] = True
            except UnschedulableError as e:
                memo[key] = not e.final
        return memo[key]

    def dfs(k: int, assign: dict[int, int]) -> None:
        steps[0] += 1
        if len(results) >= MAX_PARTITIONS or steps[0] > MAX_STEPS:
            return
        if k == len(ops):
            groups: dict[int, list[int]] = {}
            for i in ops:
                groups.setdefault(assign[i], []).append(i)
            key = frozenset(frozenset(g) for g in groups.values())
            if key not in seen:
                seen.add(key)
                results.append(list(groups.values()))
            return
        n = ops[k]
        prods = sorted({assign[j] for j in graph.nodes[n].inputs if j in assign})
        options = ([prods] if len(prods) > 1 else []) + [[p] for p in prods] + [[]]
        placed = set(ops[:k + 1])
        for merge in options:
            new = {i: (min(merge) if kk in merge else kk) for i, kk in assign.items()}
            new[n] = min(merge) if merge else max(assign.values(), default=-1) + 1
            members = {i for i, kk in new.items() if kk == new[n]}
            if _acyclic(graph, new) and viable(members, placed):
                dfs(k + 1, new)

    dfs(0, {})
    return results


def _tile(graph: KernelGraph, s: KernelSchedule, target: dict[str, Any]) -> tuple[Optional[dict[str, int]], Any]:
    best, best_cost, reasons = None, None, []
    for tiles in tile_options(s):
        bad = check(graph, s, tiles, target)
        if bad:
            reasons = bad
            continue
        c = costmod.kernel_cost(graph, s, tiles, target)
        if best_cost is None or c.time_us < best_cost.time_us:
            best, best_cost = tiles, c
    return best, (best_cost if best else reasons)


def _candidate(graph: KernelGraph, part: list[list[int]], target: dict[str, Any], cache: dict[Any, Any],
               ) -> tuple[Optional[list[KernelChoice]], str]:
    users = graph.consumers()
    kernels = []
    for group in sorted(part, key=min):
        members = set(group)
        outs = kernel_outputs(graph, members, users)
        key = (frozenset(members), tuple(outs))
        if key not in cache:
            try:
                s = schedule(graph, sorted(group), outs)
                tiles, res = _tile(graph, s, target)
                cache[key] = KernelChoice(sorted(group), outs, s, tiles, res) if tiles else f"static checks: {res[0]}"
                if tiles and s.online is not None:  # a schedule that is not the graph's own order: prove it first
                    verdict = online.field_check(graph, s.online)
                    s.online.proof = verdict.reason
                    if not verdict.equivalent:
                        cache[key] = f"online softmax not proven: {verdict.reason}"
            except UnschedulableError as e:
                cache[key] = f"not one kernel: {e}"
        if isinstance(cache[key], str):
            return None, cache[key]
        kernels.append(cache[key])
    return _order(graph, kernels), ""


def _order(graph: KernelGraph, kernels: list[KernelChoice]) -> list[KernelChoice]:
    """Kernels in dependency order."""
    done: set[int] = {i for i, n in enumerate(graph.nodes) if n.op in ("input", "const")}
    out, todo = [], list(kernels)
    while todo:
        for k in todo:
            if all(j in done or j in k.nodes for i in k.nodes for j in graph.nodes[i].inputs):
                out.append(k)
                done |= set(k.nodes)
                todo.remove(k)
                break
        else:
            raise RuntimeError("kernels form a cycle")
    return out


def run_search(graph: KernelGraph, target: dict[str, Any], backend: str) -> SearchResult:
    """All verified variants and their candidates, best (lowest modelled time) first."""
    t0 = time.perf_counter()
    res = SearchResult(graph, target, backend, [], [], eager=costmod.eager_cost(graph, target))
    for vi, var in enumerate(variants(graph)):
        verdict = equivalent(graph, var.graph)
        res.variants.append((var.rewrites, verdict))
        if not verdict.equivalent:
            continue
        if backend == "torch":
            c = costmod.eager_cost(var.graph, target, by_group=False)
            res.candidates.append(Candidate(vi, var.rewrites, var.graph, [], c))
            continue
        cache: dict[Any, Any] = {}
        for part in partitions(var.graph):
            res.partitions += 1
            kernels, why = _candidate(var.graph, part, target, cache)
            if kernels is None:
                res.rejected[why] = res.rejected.get(why, 0) + 1
                continue
            total = sum((k.cost for k in kernels), costmod.Cost())
            res.candidates.append(Candidate(vi, var.rewrites, var.graph, kernels, total))
    res.candidates.sort(key=lambda c: (round(c.cost.time_us, 3), c.cost.kernels, c.cost.dram_bytes,
                                       sum(1 for n in c.graph.nodes if n.op not in ("input", "const", "concat"))))
    res.seconds = time.perf_counter() - t0
    return res
