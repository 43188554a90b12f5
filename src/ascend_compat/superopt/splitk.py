"""Split-K (flash-decoding's key split) for online-softmax kernels: S programs per tile over key ranges, then a combine.

When an online-softmax kernel (``online.py``) has fewer (batch, row tile, column tile) tasks than cores, the
one-kernel schedule can only fill the cores by tiling V's columns, and each of those programs re-reads all of K.
Split-K gives each tile ``S`` key ranges instead: program (tile, s) runs the online recurrence (``online.STEPS``)
over its range only and writes fp32 partials (running max ``m``, running sum ``l``, unnormalised accumulator) to a
scratch buffer the launcher allocates; a small second kernel combines them per row::

    out = sum_s acc_s * exp(m_s - M) / sum_s l_s * exp(m_s - M),    M = max_s m_s

The combine is data (``COMBINE``) like the recurrence: the Triton emitter writes it out, and ``split_check`` runs the
very same steps over the finite field (homomorphic exp, uninterpreted max) after running the recurrence on uneven
key ranges (2 and 3 of them), which must give the plan graph's output exactly. The proof holds whatever ``M`` is
(the shift cancels); that ``M`` is the largest ``m_s`` keeps the exponentials in float range, which the random
inputs of the numeric check never test: ``stability_check`` runs the same steps in float32 on logits spread over
thousands and on key ranges of -inf logits. ``S`` is picked per target with the tiles (``split_options``), and the
cost model ranks split-K against the column-tiled kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ascend_compat.superopt import ffield, online
from ascend_compat.superopt.checks import grid_size, tile_tasks
from ascend_compat.superopt.graph import KernelGraph
from ascend_compat.superopt.online import Expr, OnlineMatch


@dataclass(frozen=True)
class Combine:
    """What a split writes (``partials``: name -> expression of the recurrence's final state) and how they combine:
    ``shift`` runs over the splits first (the common max), then ``steps`` over them again, then ``final``."""

    partials: tuple[tuple[str, Expr], ...] = (("m_s", "m_i"), ("l_s", "l_i"), ("acc_s", "acc"))
    init: tuple[tuple[str, str, str], ...] = (("m_c", "lowest", "row"), ("num", "zero", "tile"),
                                              ("den", "zero", "row"))
    shift: tuple[tuple[str, Expr], ...] = (("m_c", ("max2", "m_c", "m_s")),)
    steps: tuple[tuple[str, Expr], ...] = (
        ("w", ("exp", ("sub", "m_s", "m_c"))),
        ("num", ("add", "num", ("mul", "acc_s", "w"))),
        ("den", ("add", "den", ("mul", "l_s", "w"))),
    )
    final: Expr = ("div", "num", "den")


COMBINE = Combine()
# scratch buffer of each partial and its shape per row: "row" one value, "tile" BLOCK_N values
SCRATCH = {"m_s": ("pm", "row"), "l_s": ("pl", "row"), "acc_s": ("pacc", "tile")}
FIELD_CASES = ((2, 3), (3, 3), (3, 4))  # (key ranges, key block) of the proof: uneven ranges, partial last blocks


def segments(keys: int, block: int, splits: int) -> list[tuple[int, int]]:
    """The key ranges of ``splits`` programs (as the kernel deals them): whole blocks, spread evenly, none empty."""
    nblk = -(-keys // block)
    return [(s * nblk // splits * block, min((s + 1) * nblk // splits * block, keys)) for s in range(splits)]


# ---------------------------------------------------------------------------------------------------- proof
def run_split(steps: tuple[tuple[str, Expr], ...], combine: Combine, x: np.ndarray, v: np.ndarray, block: int,
              segs: list[tuple[int, int]], salt: int = 0, numeric: bool = False) -> np.ndarray:
    """Over Z_P (or in float32 with ``numeric``): the recurrence on each key range (over Z_P its own start value),
    its partials, then the combine."""
    f: Any = online._Float() if numeric else online._Field(x, v, salt)
    parts = []
    for k, (lo, hi) in enumerate(segs):
        final = online.run_segment(steps, x[..., lo:hi], v[..., lo:hi, :], block, salt=salt + 7 * (k + 1),
                                   f=f if numeric else None)
        parts.append({name: online._eval(expr, final, f) for name, expr in combine.partials})
    env: dict[str, Any] = {name: f.init(kind) for name, kind, _ in combine.init}
    for stage in (combine.shift, combine.steps):
        for part in parts:
            env.update(part)
            for name, expr in stage:
                env[name] = online._eval(expr, env, f)
    return np.asarray(f.value(online._eval(combine.final, env, f)))


def split_check(graph: KernelGraph, m: OnlineMatch, tests: int = 3, combine: Optional[Combine] = None,
                ) -> ffield.Verdict:
    """Are the per-range recurrences plus ``combine`` (default: ``COMBINE``, the one emitted) equal to the plan
    graph's kernel over the finite field?"""
    combine = combine or COMBINE
    cases = online.field_inputs(graph, m, tests)
    if cases is None:
        return ffield.Verdict(False, "the homomorphic exp does not apply (a value feeds exp and something else)", 0)
    keys = cases[0][0].shape[-1]
    for t, (x, v, want) in enumerate(cases):
        for n, block in FIELD_CASES:
            segs = segments(keys, block, n)
            try:
                got = run_split(m.steps, combine, x, v, block, segs, salt=t)
            except ValueError as e:
                return ffield.Verdict(False, f"the split-K combine is ill-formed: {e}", t)
            if got.shape != want.shape or not np.array_equal(got, want):
                return ffield.Verdict(False, f"split-K differs from the plan graph over Z_{ffield.P} on random test "
                                      f"{t + 1} (key ranges {segs}, blocks of {block})", t + 1)
    ranges = "; ".join(str(segments(keys, b, n)) for n, b in FIELD_CASES)
    return ffield.Verdict(True, f"split-K (recurrence per key range, then the combine) equal to the plan graph on "
                          f"{tests} random tests over Z_{ffield.P} with key ranges {ranges} of {keys} keys (exp "
                          f"homomorphic, max uninterpreted)", tests)


def stability_check(steps: tuple[tuple[str, Expr], ...], combine: Optional[Combine] = None) -> ffield.Verdict:
    """Do the per-range recurrences plus ``combine``, run in float32 as emitted, stay finite and match float64 on
    ``online.hostile_inputs`` (ranges of all -inf logits among them)? The proof holds whatever the common shift;
    only the largest ``m_s`` keeps exp in float range, and random inputs of the numeric check never show it."""
    combine = combine or COMBINE
    x, v, want = online.hostile_inputs()
    for n, block in FIELD_CASES:
        segs = segments(x.shape[-1], block, n)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            got = run_split(steps, combine, x, v, block, segs, numeric=True)
        why = online.float_error(got, want)
        if why:
            return ffield.Verdict(False, f"not float32-stable: the combine gives {why} against float64 on "
                                  f"{online.HOSTILE} (key ranges {segs})", 1)
    return ffield.Verdict(True, f"float32-stable on {online.HOSTILE} (within 1e-3 of float64; the key ranges of the "
                          "proof)", 1)


# ---------------------------------------------------------------------------------------------------- planning
def split_options(s: Any, tiles: dict[str, int], target: dict[str, Any]) -> list[int]:
    """Split counts worth costing for these tiles: the fewest that give every core a program, and the fewest that
    make whole waves of programs; each range spans at least one key block."""
    nblk = -(-s.extent["K1"] // tiles["BLOCK_K1"])
    tasks = tile_tasks(s, tiles)
    cores = int(target.get("cube_cores", target.get("sms", 1)))
    fill, waves = -(-cores // tasks), cores // math.gcd(tasks, cores)
    return sorted(n for n in {fill, waves} if 2 <= n <= nblk)


def combine_programs(s: Any, tiles: dict[str, int], target: dict[str, Any]) -> tuple[int, int]:
    """(tasks, programs launched) of the combine kernel: a vector kernel, on Ascend one program per vector core."""
    tasks = tile_tasks(s, tiles)
    return tasks, grid_size(tasks, "vector", target)


def scratch_bytes(s: Any, tiles: dict[str, int]) -> int:
    """fp32 partials: per batch entry, split and row, the running max, the running sum and N accumulator values."""
    return int(s.batch * online.splits(tiles) * s.extent["M"] * (s.extent["N"] + 2) * 4)


def combine_live_bytes(tiles: dict[str, int]) -> int:
    """Combine kernel: num and a working tile, m_c and den, and one split's partials double buffered."""
    bm, bn = tiles["BLOCK_M"], tiles["BLOCK_N"]
    return 2 * bm * bn * 4 + 2 * bm * 4 + 2 * (bm * bn * 4 + 2 * bm * 4)


def check_combine(s: Any, tiles: dict[str, int], target: dict[str, Any]) -> list[str]:
    """The split-K constraints on top of the partial kernel's own checks (which ``checks.check`` does)."""
    bad = []
    n, nblk = online.splits(tiles), -(-s.extent["K1"] // tiles["BLOCK_K1"])
    if n > nblk:
        bad.append(f"split-K: {n} key ranges > {nblk} key blocks (each range must span at least one block)")
    row = tiles["BLOCK_N"] * 4
    if row % target["align_vector_bytes"]:
        bad.append(f"split-K partials: tile rows of {row} bytes are not {target['align_vector_bytes']}-byte aligned")
    live = combine_live_bytes(tiles)
    if live > target["live_tile_budget_bytes"]:
        bad.append(f"split-K combine: live tiles need {live} bytes > {target['live_tile_budget_bytes']} "
                   "(on-chip budget)")
    _, grid = combine_programs(s, tiles, target)
    if grid > target["max_grid"]:
        bad.append(f"split-K combine: grid of {grid} programs > {target['max_grid']}")
    return bad


# ---------------------------------------------------------------------------------------------------- Triton
def _row(split: str) -> str:
    return f"prow = (pid_b * SPLITS + {split}) * M + offs_m  # partials of (batch entry, key range, row)"


def _scratch_ptr(name: str) -> tuple[str, str]:
    buf, shape = SCRATCH[name]
    if shape == "row":
        return f"{buf}_ptr + prow[:, None]", "mask_m[:, None]"
    return f"{buf}_ptr + prow[:, None] * N + offs_n[None, :]", "mask_m[:, None] & mask_n[None, :]"


def _names(expr: Expr) -> set[str]:
    return {expr} if isinstance(expr, str) else set().union(*(_names(a) for a in expr[1:]))


def partial_stores(dt: str, prec: str) -> list[str]:
    """The partial kernel's epilogue: its key range's partials to the scratch buffers."""
    lines = ["# this key range's partials (fp32), combined by the second kernel", _row("split")]
    for name, expr in COMBINE.partials:
        ptr, mask = _scratch_ptr(name)
        lines.append(f"tl.store({ptr}, {online._triton(expr, dt, prec)}, mask={mask})")
    return lines


def _combine_body(graph: KernelGraph, s: Any, tiles: dict[str, int]) -> list[str]:
    from ascend_compat.superopt.emit import TILE_DECODE, TL_DTYPE, Emitter

    m: OnlineMatch = s.online
    init = online.INIT_TRITON
    body = [*TILE_DECODE, *[f"{v} = tl.full({init[shape]}, {init[kind]}, tl.float32)" for v, kind, shape in
                            COMBINE.init]]
    for what, stage in (("the common shift (largest running max)", COMBINE.shift),
                        ("the partials rescaled to it and summed", COMBINE.steps)):
        used = sorted(set().union(*(_names(e) for _, e in stage)) & set(SCRATCH))
        loop = [_row("s")]
        for name in used:
            ptr, mask = _scratch_ptr(name)
            loop.append(f"{name} = tl.load({ptr}, mask={mask}, other=0.0)")
        loop += [f"{var} = {online._triton(expr, 'tl.float32', '')}" for var, expr in stage]
        body += [f"# over the key ranges: {what}", "for s in range(0, SPLITS):", *["    " + x for x in loop]]
    ptr, mask = Emitter(graph, s, tiles).address(m.out, "offs_m", "offs_n", "mask_n", store=True)
    out = ptr.replace(f"t{m.out}_ptr", f"out{m.out}_ptr")
    body.append(f"tl.store({out}, {online._triton(COMBINE.final, 'tl.float32', '')}"
                f".to({TL_DTYPE[graph.nodes[m.out].dtype]}), mask={mask})")
    return body


def emit_module(graph: KernelGraph, s: Any, name: str, tiles: dict[str, int], header: str, body: list[str],
                bf16_dot: bool) -> Any:
    """The split-K module: the partial kernel (``body``), the combine kernel and a launcher running both."""
    from ascend_compat.superopt.emit import EmittedKernel, kernel_def, module_head

    m: OnlineMatch = s.online
    axes = ["M", "N", *sorted(a for a in s.extent if a not in ("M", "N"))]
    scratch = ["pm_ptr", "pl_ptr", "pacc_ptr"]
    common = ["B", "MB", "NB", "TASKS", "GRID", "BLOCK_M", "BLOCK_N"]
    consts = [*axes, *common, *[f"BLOCK_{a}" for a in axes[2:]], "SPLITS", *(["DOT_BF16"] if bf16_dot else [])]
    src = module_head(header)
    src += [*kernel_def(f"{name}_kernel", [*[f"t{v}_ptr" for v in s.loads], *scratch], consts, body), "", ""]
    src += [*kernel_def(f"{name}_combine", [*scratch, f"out{m.out}_ptr"], ["M", "N", *common, "SPLITS"],
                        _combine_body(graph, s, tiles)), "", ""]
    src += _launcher(graph, s, name, tiles, axes, bf16_dot)
    return EmittedKernel(name, "\n".join(src) + "\n", list(s.loads), list(s.outputs), dict(tiles))


def _launcher(graph: KernelGraph, s: Any, name: str, tiles: dict[str, int], axes: list[str],
              bf16_dot: bool) -> list[str]:
    from ascend_compat.superopt.emit import DOT_BF16_LINES, launch_sizes, launch_tiles

    out = f"out{s.online.out}"
    args = [f"t{v}" for v in s.loads] + [out]
    blocks = ", ".join(f"BLOCK_{a}={tiles[f'BLOCK_{a}']}" for a in axes[2:])
    consts = ", ".join(f"{c}={c}" for c in [*axes, "B", "MB", "NB", "TASKS", "GRID", "BLOCK_M", "BLOCK_N"])
    return [
        f"def launch({', '.join(args)}, max_programs=None):",
        '    """Run split-K: the partial kernel (SPLITS key ranges per tile), then the combine. The fp32 partials'
        " are\n    allocated here, on the inputs' device. ``max_programs``: (partial, combine) grid limits, or one"
        ' for both."""',
        "    import torch  # here, not at the top: compiling the kernels needs no torch",
        "",
        *launch_sizes(graph, s, axes),
        *launch_tiles(out, tiles),
        f"    SPLITS = max(1, min({online.splits(tiles)}, triton.cdiv(K1, {tiles['BLOCK_K1']})))"
        "  # no range without keys",
        "    limits = max_programs if isinstance(max_programs, (tuple, list)) else (max_programs, max_programs)",
        "    TASKS = B * MB * NB * SPLITS",
        "    GRID = min(TASKS, limits[0] or TASKS)",
        f"    pm = torch.empty((B * SPLITS * M,), dtype=torch.float32, device={out}.device)",
        "    pl = torch.empty_like(pm)",
        f"    pacc = torch.empty((B * SPLITS * M * N,), dtype=torch.float32, device={out}.device)",
        *(DOT_BF16_LINES if bf16_dot else ()),
        f"    {name}_kernel[(GRID,)](",
        f"        {', '.join(args[:-1])}, pm, pl, pacc,",
        f"        {consts},",
        f"        {blocks}, SPLITS=SPLITS{', DOT_BF16=DOT_BF16' if bf16_dot else ''},",
        "    )",
        "    CTASKS = B * MB * NB",
        "    CGRID = min(CTASKS, limits[1] or CTASKS)",
        f"    {name}_combine[(CGRID,)](",
        f"        pm, pl, pacc, {out}, M=M, N=N, B=B, MB=MB, NB=NB, TASKS=CTASKS, GRID=CGRID, BLOCK_M=BLOCK_M,",
        "        BLOCK_N=BLOCK_N, SPLITS=SPLITS,",
        "    )",
    ]
