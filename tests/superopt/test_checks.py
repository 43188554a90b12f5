"""Static checks of a kernel against the target: on-chip budget, tl.dot limits, forbidden ops, dtypes."""

from __future__ import annotations

from ascend_compat.superopt._data import target
from ascend_compat.superopt.checks import check, tile_options
from ascend_compat.superopt.schedule import schedule
from tests.superopt.conftest import WORKLOADS


def _gated_mlp_kernel():  # type: ignore[no-untyped-def]
    g = WORKLOADS.gated_mlp()
    ops = [i for i, n in enumerate(g.nodes) if n.op != "input"]
    return g, schedule(g, ops, [ops[-1]])


def test_tiles_over_the_ub_budget_are_refused_on_ascend_but_fit_an_h100() -> None:
    g, s = _gated_mlp_kernel()
    tiles = {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K0": 128}
    (bad,) = check(g, s, tiles, target("ascend-910b"))
    assert bad.startswith("live tiles need ") and bad.endswith("> 98304 (on-chip budget)")
    assert check(g, s, tiles, target("nvidia-h100")) == []
    assert any(not check(g, s, t, target("ascend-910b")) for t in tile_options(s))


def test_dot_limits_and_forbidden_ops() -> None:
    g, s = _gated_mlp_kernel()
    problems = check(g, s, {"BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K0": 8}, target("ascend-910b"),
                     source="x = tl.sort(y)\n")
    assert any("tl.dot block dims [8, 64, 8] of t" in p and ">= 16" in p for p in problems)
    assert any("uses sort, which ascend-910b lacks" in p for p in problems)
    assert any("not a multiple of 512 (cube alignment)" in p for p in problems)
