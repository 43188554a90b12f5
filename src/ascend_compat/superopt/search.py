"""The search: algebraic variants x fusion partitions x tile sizes, each candidate checked and costed.

1. ``rewrites.variants`` gives the canonical graph and every graph the rules reach; each variant must be equal to
   the user's graph over the finite field (``ffield.equivalent``) or it is discarded.
2. For each variant, partitions of its ops into kernels are enumerated depth first, fusing first (so the first
   partition found is the most fused), pruning groups that can never be one kernel and cycles between kernels.
3. Every kernel of a partition is scheduled (``schedule``), tiled (the cheapest tiling that passes the target's
   static checks), and costed (``cost``). An online-softmax kernel (a schedule that reorders the computation) is
   first proven over the finite field (``online.field_check``); it also gets a split-K alternative (``splitk``:
   several programs per tile over key ranges, then a combine; proven by ``splitk.split_check``), kept as its own
   candidate. Candidates are ranked by modelled time.
The numeric check of the winner (and the fallback to the next candidate) is done by ``runtime``.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from ascend_compat.superopt import cost as costmod
from ascend_compat.superopt import online, splitk
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
        if not self.kernels:  # backend='torch': the (rewritten) graph's ops, each a torch call
            ops = [i for i, n in enumerate(self.graph.nodes) if n.op not in ("input", "const")]
            return f"torch ops: {' '.join(map(name, ops)) or 'none (the outputs are inputs)'}"
        split = lambda k: f" (split-K: {k.tiles['SPLITS']} key ranges + combine)" if "SPLITS" in k.tiles else ""  # noqa: E731
        return f"{len(self.kernels)} kernel(s): " + " | ".join("+".join(map(name, k.nodes)) + split(k)
                                                               for k in self.kernels)


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


def _tile(graph: KernelGraph, s: KernelSchedule, target: dict[str, Any],
          ) -> tuple[list[tuple[dict[str, int], costmod.Cost]], list[str]]:
    """The cheapest tiling that passes the static checks, and for an online softmax also the cheapest split-K
    tiling (``splitk.py``): both are kept, for the cost model to rank as whole plans. Else the reasons."""
    best: dict[bool, tuple[dict[str, int], costmod.Cost]] = {}
    reasons: list[str] = []
    for base in tile_options(s):
        options = [base]
        if s.online is not None:
            options += [{**base, "SPLITS": n} for n in splitk.split_options(s, base, target)]
        for tiles in options:
            bad = check(graph, s, tiles, target)
            if bad:
                reasons = bad
                continue
            c = costmod.kernel_cost(graph, s, tiles, target)
            family = "SPLITS" in tiles
            if family not in best or c.time_us < best[family][1].time_us:
                best[family] = (tiles, c)
    return sorted(best.values(), key=lambda tc: tc[1].time_us), reasons


def _prove(graph: KernelGraph, choices: list[KernelChoice]) -> tuple[list[KernelChoice], str]:
    """Prove an online-softmax kernel's reordering (and its split-K combine) before it can be chosen."""
    m = choices[0].schedule.online
    assert m is not None
    verdict = online.field_check(graph, m)
    m.proof = verdict.reason
    if not verdict.equivalent:
        return [], f"online softmax not proven: {verdict.reason}"
    stable = online.stability_check(m.steps)  # float range, which the proof cannot see
    m.proof += f"; {stable.reason}"
    if not stable.equivalent:
        return [], f"online softmax {stable.reason}"
    if any("SPLITS" in k.tiles for k in choices):
        one_kernel = [k for k in choices if "SPLITS" not in k.tiles]
        split = splitk.split_check(graph, m)
        m.split_proof = split.reason
        if not split.equivalent:
            return one_kernel, f"split-K not proven: {split.reason}"
        stable = splitk.stability_check(m.steps)
        m.split_proof += f"; {stable.reason}"
        if not stable.equivalent:
            return one_kernel, f"split-K {stable.reason}"
    return choices, ""


def _candidate(graph: KernelGraph, part: list[list[int]], target: dict[str, Any], cache: dict[Any, Any],
               ) -> tuple[list[list[KernelChoice]], str]:
    """The plans of a partition (one per combination of its kernels' alternatives), and why some were not kept."""
    users = graph.consumers()
    alternatives, notes = [], []
    for group in sorted(part, key=min):
        members = set(group)
        outs = kernel_outputs(graph, members, users)
        key = (frozenset(members), tuple(outs))
        if key not in cache:
            try:
                s = schedule(graph, sorted(group), outs)
                found, reasons = _tile(graph, s, target)
                choices = [KernelChoice(sorted(group), outs, s, t, c) for t, c in found]
                if found and s.online is not None:  # a schedule that is not the graph's own order: prove it first
                    kept, note = _prove(graph, choices)
                    cache[key] = (kept, note) if kept else note
                else:
                    cache[key] = (choices, "") if found else f"static checks: {reasons[0]}"
            except UnschedulableError as e:
                cache[key] = f"not one kernel: {e}"
        if isinstance(cache[key], str):
            return [], cache[key]
        alternatives.append(cache[key][0])
        notes += [cache[key][1]] if cache[key][1] else []
    return [_order(graph, list(combo)) for combo in itertools.product(*alternatives)], "; ".join(notes)


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


def unkernelable(graph: KernelGraph) -> str:
    """Why a graph has no partition into kernels: the first op that cannot be part of any kernel, and the reason."""
    users = graph.consumers()
    for i, n in enumerate(graph.nodes):
        if n.op in ("input", "const"):
            continue
        try:
            schedule(graph, [i], kernel_outputs(graph, {i}, users))
        except UnschedulableError as e:
            if e.final:
                return f"{n.op} t{i} {n.shape} cannot be in any kernel: {e}"
    return "no partition of the ops into kernels was found"


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
        parts = partitions(var.graph)
        if not parts:  # an op that no kernel can hold: say which and why (else the error would give no reason)
            why = unkernelable(var.graph)
            res.rejected[why] = res.rejected.get(why, 0) + 1
        for part in parts:
            res.partitions += 1
            plans, why = _candidate(var.graph, part, target, cache)
            if why:
                res.rejected[why] = res.rejected.get(why, 0) + 1
            for kernels in plans:
                total = sum((k.cost for k in kernels), costmod.Cost())
                res.candidates.append(Candidate(vi, var.rewrites, var.graph, kernels, total))
    res.candidates.sort(key=lambda c: (round(c.cost.time_us, 3), c.cost.kernels, c.cost.dram_bytes,
                                       sum(1 for n in c.graph.nodes if n.op not in ("input", "const", "concat"))))
    res.seconds = time.perf_counter() - t0
    return res
