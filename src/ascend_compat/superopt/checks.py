"""Static checks of an emitted kernel against its target (triton-ascend's documented limits), and tile choice.

Live-tile model: per pass, the tiles it loads (x2 for double buffering) plus two fp32 working tiles, plus the
accumulators and per-row values that stay live across the whole kernel. Ascend gives a core 192 KB of UB; with
double buffering the budget for live tiles is half of it (``live_tile_budget_bytes``). A split-K plan is checked as
its partial kernel (programs per key range included in the grid) plus its combine kernel (``splitk.check_combine``).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from ascend_compat.superopt._data import elem_bytes
from ascend_compat.superopt.emit import block_name
from ascend_compat.superopt.graph import KernelGraph
from ascend_compat.superopt.schedule import KernelSchedule, dims3

FORBIDDEN = {"sort": r"tl\.sort\(", "histogram": r"tl\.histogram\(", "associative_scan": r"tl\.associative_scan\(",
             "inline_asm_elementwise": r"inline_asm", "permute_nonadjacent": r"tl\.(permute|trans)\("}


def pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def tile_tasks(s: KernelSchedule, tiles: dict[str, int]) -> int:
    """(batch, row tile, column tile) tasks: a kernel's tiles of work (split-K runs SPLITS programs on each)."""
    return int(s.batch * -(-s.extent["M"] // tiles["BLOCK_M"]) * -(-s.extent.get("N", 1) // tiles["BLOCK_N"]))


def grid_size(tasks: int, kind: str, target: dict[str, Any]) -> int:
    """Programs launched for ``tasks`` on a ``kind`` ("cube" or "vector") kernel: on Ascend the physical cores."""
    if target["vendor"] == "ascend":
        return min(tasks, target["cube_cores"] if kind == "cube" else target["vector_cores"])
    return tasks


def programs(s: KernelSchedule, tiles: dict[str, int], target: dict[str, Any]) -> tuple[int, int]:
    """(tasks, programs launched); split-K (``splitk.py``) has SPLITS tasks per tile, one per key range."""
    tasks = tile_tasks(s, tiles) * tiles.get("SPLITS", 1)
    return tasks, grid_size(tasks, s.kind, target)


def live_bytes(graph: KernelGraph, s: KernelSchedule, tiles: dict[str, int]) -> int:
    """Bytes of on-chip tiles live at once (double-buffered loads, fp32 working tiles, accumulators)."""
    if s.online is not None:
        from ascend_compat.superopt import online

        return online.live_bytes(graph, s, tiles)
    bm = tiles["BLOCK_M"]
    persistent = 0
    for i in s.nodes:
        op = graph.nodes[i].op
        if op == "matmul":
            persistent += bm * (tiles[block_name(s.col[i])] if s.col[i] else 1) * 4
        elif op in ("sum", "mean", "max"):
            persistent += bm * 4
    worst = 0
    for axis in {a for _, a in s.passes} | {"N"}:
        blk = tiles[block_name(axis)]
        loaded = 0
        for v in s.loads:
            r = dims3(graph.nodes[v].shape)[1]
            eb = elem_bytes(graph.nodes[v].dtype)
            if s.row.get(v) == axis:  # a weight tile of this contraction
                loaded += blk * tiles[block_name(s.col[v])] * eb if s.col.get(v) else blk * eb
            elif s.col.get(v) == axis:
                loaded += (bm if r > 1 else 1) * blk * eb
        worst = max(worst, 2 * loaded + 2 * bm * blk * 4)
    return persistent + worst


def check(graph: KernelGraph, s: KernelSchedule, tiles: dict[str, int], target: dict[str, Any],
          source: str = "") -> list[str]:
    """Every violated constraint of ``target`` for this kernel and tiling, as sentences (empty: all hold)."""
    bad = []
    for v in [*s.loads, *s.outputs, *s.nodes]:
        dt = graph.nodes[v].dtype
        if dt not in target["dtypes"]:
            bad.append(f"dtype {dt} of t{v} is not supported on {target['name']}")
    for i in s.nodes:
        n = graph.nodes[i]
        if n.op != "matmul":
            continue
        if n.dtype not in target["dot_dtypes"]:
            bad.append(f"tl.dot on {n.dtype} (t{i}) is not supported on {target['name']}")
        dims = [tiles["BLOCK_M"], tiles[block_name(s.col[i])] if s.col[i] else 1,
                *[tiles[block_name(s.col[a])] for a, _ in s.segments[i]]]
        if min(dims) < target["dot_min"]:
            bad.append(f"tl.dot block dims {dims} of t{i}: each must be >= {target['dot_min']}")
        eb = elem_bytes(n.dtype)
        for a, _ in s.segments[i]:
            k = tiles[block_name(s.col[a])]
            for what, size in (("A", tiles["BLOCK_M"] * k * eb), ("B", k * (dims[1]) * eb)):
                if size % target["align_cube_bytes"]:
                    bad.append(f"tl.dot operand {what} tile of t{i} is {size} bytes, not a multiple of "
                               f"{target['align_cube_bytes']} (cube alignment)")
    for v in [*s.loads, *s.outputs]:
        if s.col.get(v):
            inner = tiles[block_name(s.col[v])] * elem_bytes(graph.nodes[v].dtype)
            if inner % target["align_vector_bytes"]:
                bad.append(f"t{v}: tile rows of {inner} bytes are not {target['align_vector_bytes']}-byte aligned")
    live = live_bytes(graph, s, tiles)
    if live > target["live_tile_budget_bytes"]:
        bad.append(f"live tiles need {live} bytes > {target['live_tile_budget_bytes']} (on-chip budget)")
    _, grid = programs(s, tiles, target)
    if grid > target["max_grid"]:
        bad.append(f"grid of {grid} programs > {target['max_grid']}")
    if tiles.get("SPLITS", 1) > 1:
        from ascend_compat.superopt import splitk

        bad += splitk.check_combine(s, tiles, target)
    for op, pattern in FORBIDDEN.items():
        if op in target["unsupported_ops"] and re.search(pattern, source):
            bad.append(f"uses {op}, which {target['name']} lacks")
    return bad


def tile_options(s: KernelSchedule) -> list[dict[str, int]]:
    """Candidate block sizes: powers of two >= 16, no larger than needed; axes held whole get their full width."""
    def sizes(extent: int, top: int) -> list[int]:
        return [b for b in (16, 32, 64, 128, 256) if b <= max(16, min(top, pow2(extent)))]

    axes = sorted(a for a in s.extent if a != "M")
    choices: list[list[int]] = [sizes(s.extent["M"], 64)]
    for a in axes:
        whole = a in s.full
        choices.append([pow2(max(16, s.extent[a]))] if whole else sizes(s.extent[a], 256))
    if "N" not in s.extent:
        axes.append("N")
        choices.append([16])
    out = []
    for combo in itertools.product(*choices):
        tiles = {"BLOCK_M": combo[0]}
        tiles.update({block_name(a): b for a, b in zip(axes, combo[1:])})
        out.append(tiles)
    return out
