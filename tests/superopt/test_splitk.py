"""Split-K (flash-decoding's key split): proven over the finite field, offered by the search, checked, costed, run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from ascend_compat.superopt import cache as cachemod
from ascend_compat.superopt import splitk
from ascend_compat.superopt._data import target
from ascend_compat.superopt.checks import check, programs
from ascend_compat.superopt.core import _looped_extents, emit_candidate
from ascend_compat.superopt.cost import nbytes
from ascend_compat.superopt.search import Candidate, run_search
from tests.superopt.conftest import WORKLOADS

KEYS = 600  # > 128 keys: the online-softmax schedule (and so its split-K alternative)


def _split(g, name: str = "ascend-910b") -> Candidate:  # type: ignore[no-untyped-def]
    """The search's best split-K candidate for ``g``."""
    cands = run_search(g, target(name), "ascend").candidates
    found = [c for c in cands if len(c.kernels) == 1 and "SPLITS" in c.kernels[0].tiles]
    assert found, [c.summary() for c in cands[:4]]
    return found[0]


def _combine(**steps: object) -> splitk.Combine:
    c = splitk.COMBINE
    return replace(c, steps=tuple((var, steps.get(var, expr)) for var, expr in c.steps))


BROKEN = {
    "numerator not rescaled (a dropped rescale)": _combine(num=("add", "num", "acc_s")),
    "denominator not rescaled": _combine(den=("add", "den", "l_s")),
    "l instead of acc in the numerator": _combine(num=("add", "num", ("mul", "l_s", "w"))),
    "no max shift (partials summed as if they shared one)": _combine(w=("exp", ("sub", "m_s", "m_s"))),
    "shift inverted": _combine(w=("exp", ("sub", "m_c", "m_s"))),
    "only the last key range": _combine(num=("mul", "acc_s", "w"), den=("mul", "l_s", "w")),
    "normalised partials": replace(splitk.COMBINE, partials=(("m_s", "m_i"), ("l_s", "l_i"),
                                                             ("acc_s", ("div", "acc", "l_i")))),
}


def test_key_ranges_cover_the_keys_in_whole_blocks_unevenly_and_none_is_empty() -> None:
    assert splitk.segments(14, 3, 3) == [(0, 3), (3, 9), (9, 14)]  # 5 blocks over 3 ranges, a partial last block
    for keys, block, n in [(14, 4, 2), (600, 128, 5), (4096, 64, 5), (961, 64, 5)]:
        segs = splitk.segments(keys, block, n)
        assert segs[0][0] == 0 and segs[-1][1] == keys and all(a[1] == b[0] for a, b in zip(segs, segs[1:]))
        assert all(lo < hi and lo % block == 0 for lo, hi in segs)


@pytest.mark.parametrize("order", [0, 1])
def test_the_split_proof_accepts_the_combine_and_rejects_broken_ones(order: int) -> None:
    c = _split(WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=KEYS, order=order))
    m = c.kernels[0].schedule.online
    assert m.split_proof.startswith("split-K (recurrence per key range, then the combine) equal to the plan graph")
    assert splitk.split_check(c.graph, m).equivalent
    for what, combine in BROKEN.items():
        verdict = splitk.split_check(c.graph, m, combine=combine)
        assert not verdict.equivalent and "differs from the plan graph" in verdict.reason, what


def test_a_combine_that_fails_the_proof_never_becomes_a_candidate(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(splitk, "COMBINE", BROKEN["l instead of acc in the numerator"])
    res = run_search(WORKLOADS.gqa_decode(), target("ascend-910b"), "ascend")
    assert not any("SPLITS" in k.tiles for c in res.candidates for k in c.kernels)
    assert any(why.startswith("split-K not proven: split-K differs from the plan graph") for why in res.rejected)
    assert res.candidates[0].kernels[0].schedule.online is not None  # the one-kernel online softmax stays


def test_the_proof_holds_whatever_the_common_shift_is() -> None:
    # M cancels exactly: another uninterpreted function (operands swapped), or no max pass at all (M is then the
    # start value, unrelated to the data) are both proven; that M is the largest m_s only keeps exp in float range
    c = _split(WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=KEYS))
    m = c.kernels[0].schedule.online
    for shift in [(("m_c", ("max2", "m_s", "m_c")),), ()]:
        assert splitk.split_check(c.graph, m, combine=replace(splitk.COMBINE, shift=shift)).equivalent


@pytest.mark.parametrize("order", [0, 1])
def test_the_search_offers_split_k_for_gqa_within_the_ascend_limits_and_costs_it(order: int) -> None:
    g = WORKLOADS.gqa_decode(order=order)  # Mirage's shapes: 32 query heads, 8 KV heads, d 128, 4096 keys, batch 1
    t = target("ascend-910b")
    res = run_search(g, t, "ascend")
    c = _split(g)
    k = c.kernels[0]
    assert "(split-K: " in c.summary() and check(c.graph, k.schedule, k.tiles, t) == []
    tasks, grid = programs(k.schedule, k.tiles, t)
    assert grid <= t["cube_cores"] <= tasks and tasks % t["cube_cores"] == 0  # whole waves on the physical cores
    ctasks, cgrid = splitk.combine_programs(k.schedule, k.tiles, t)
    assert cgrid <= t["vector_cores"] and ctasks == tasks // k.tiles["SPLITS"]
    # one column tile: K is read once (no L2 re-reads); partials written then read; two launches
    assert k.tiles["BLOCK_N"] == 128 and c.cost.l2_bytes == 0 and c.cost.kernels == 2
    floor = sum(nbytes(g, i) for i in g.inputs) + nbytes(g, g.outputs[0])
    assert c.cost.dram_bytes == floor + 2 * splitk.scratch_bytes(k.schedule, k.tiles)
    # at 4096 keys the column-tiled kernel still wins in the model: K's re-reads hit L2 under the DRAM stream, and
    # the combine's launch costs more than the shorter key loops save
    best = res.candidates[0]
    assert "SPLITS" not in best.kernels[0].tiles and best.cost.l2_bytes > 0
    assert best.cost.time_us < c.cost.time_us < best.cost.time_us + 2 * t["launch_us"]


def test_long_context_decode_chooses_split_k_and_targets_get_their_own_split() -> None:
    g = WORKLOADS.gqa_decode(kv_len=32768)
    best = run_search(g, target("ascend-910b"), "ascend").candidates[0]
    assert best.kernels[0].tiles["SPLITS"] == 5 and best.cost.l2_bytes == 0  # 8 heads x 5 = 40: 2 waves of 20
    on_310p = run_search(g, target("ascend-310p"), "ascend").candidates[0]
    assert on_310p.kernels[0].tiles.get("SPLITS") != 5  # 8 cube cores: the 8 heads already fill them
    keys = [cachemod.key(g.signature(), "ascend", name, "interpret", {}) for name in ("ascend-910b", "ascend-310p")]
    assert keys[0] != keys[1]


def test_violated_split_k_constraints_are_clear_errors() -> None:
    c = _split(WORKLOADS.gqa_decode())
    k, t = c.kernels[0], target("ascend-910b")
    nblk = 4096 // k.tiles["BLOCK_K1"]
    assert f"split-K: {nblk + 1} key ranges > {nblk} key blocks (each range must span at least one block)" in \
        check(c.graph, k.schedule, {**k.tiles, "SPLITS": nblk + 1}, t)
    wide = check(c.graph, k.schedule, {**k.tiles, "BLOCK_M": 64, "BLOCK_N": 256}, t)
    assert any(b.startswith("split-K combine: live tiles need ") and b.endswith("(on-chip budget)") for b in wide)
    strict = {**t, "align_vector_bytes": 1024}
    assert "split-K partials: tile rows of 512 bytes are not 1024-byte aligned" in \
        check(c.graph, k.schedule, k.tiles, strict)


def _split_310p(dtype: str, before_emit: Callable[[], object] = lambda: None) -> tuple:  # type: ignore[type-arg]
    """A GQA graph, its split-K candidate on the 310P (8 cube cores: 2 key ranges), the emitted kernels, and the
    numeric check's extents (each key range spans >= 3 blocks)."""
    g = WORKLOADS.gqa_decode(kv_heads=4, head_dim=32, kv_len=1024, dtype=dtype)
    t = target("ascend-310p")
    c = _split(g, "ascend-310p")
    before_emit()
    kernels, problems = emit_candidate(c, t, g.digest())
    assert problems == [] and "def k0_combine(" in kernels[0]["source"]
    extents = _looped_extents(c)
    keys, tiles = extents[1024], c.kernels[0].tiles
    assert tiles["SPLITS"] == 2 and 3 * tiles["SPLITS"] * tiles["BLOCK_K1"] < keys < 1024
    return g, c, kernels, extents, keys


def _numeric(dtype: str, before_emit: Callable[[], object] = lambda: None):  # type: ignore[no-untyped-def]
    """The split-K candidate's emitted kernels against torch eager (the search's own numeric check)."""
    from ascend_compat.superopt.runtime import numeric_check

    g, c, kernels, extents, keys = _split_310p(dtype, before_emit)
    ok, why = numeric_check(g, c.graph, kernels, "interpret", "cpu", None, at_least=extents)
    return ok, why, keys


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_split_k_kernels_on_the_interpreter_match_eager(dtype: str) -> None:
    ok, why, keys = _numeric(dtype)
    assert ok and f", {keys}), " in why, why


@pytest.mark.slow
def test_split_k_kernels_on_the_simulated_npu(sim) -> None:  # type: ignore[no-untyped-def]
    from ascend_compat.superopt.ffield import small_shapes
    from ascend_compat.superopt.reference import random_inputs, run_graph
    from ascend_compat.superopt.runtime import compare, run_kernels

    g, c, kernels, extents, keys = _split_310p("float16")
    small = g.with_input_shapes(small_shapes(g, at_least=extents))
    ins = random_inputs(small, device="npu", seed=3)
    assert ins[1].shape[-1] == keys
    (out,) = run_kernels(c.graph, kernels, ins, "interpret", None)  # partials allocated on the npu by the launcher
    assert out.device.type == "npu"
    ok, detail = compare([out.cpu()], run_graph(small, [x.cpu() for x in ins]))
    assert ok, detail


@pytest.mark.slow
def test_a_broken_combine_is_caught_by_the_numeric_check(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    broken = BROKEN["numerator not rescaled (a dropped rescale)"]
    ok, why, _ = _numeric("float32", lambda: monkeypatch.setattr(splitk, "COMBINE", broken))  # emitted, not proven
    assert not ok and why.startswith("output 0: max abs error"), why


@pytest.mark.slow
def test_superoptimize_chooses_split_k_explains_its_proof_and_caches_it(cache: str) -> None:
    g = WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=8192, dtype="float32")
    opt = g.superoptimize(backend="ascend", cache_dir=cache)
    (kern,) = opt.kernels
    partial, combine = kern["max_programs"]  # grid limits of the two launches: cube cores, vector cores
    assert "(split-K: " in opt.record["plan"] and partial == 20 and 0 < combine <= 40
    text = opt.explain()
    assert "schedule: k0: split-K (recurrence per key range, then the combine) equal" in text
    assert "proof k0: split-K (recurrence per key range" in text and "Split-K: " in kern["source"]
    again = WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=8192, dtype="float32").superoptimize(
        backend="ascend", cache_dir=cache)
    assert again.record["cache"] == "hit" and again.kernels == opt.kernels


# ---------------------------------------------------------------------------------------------------- review fixes
def _run_on(c: Candidate, g, ins: list) -> tuple:  # type: ignore[no-untyped-def,type-arg]
    """The candidate's emitted kernels and torch eager on ``ins`` (any extents), both as fp32 CPU tensors."""
    from ascend_compat.superopt.reference import run_graph
    from ascend_compat.superopt.runtime import run_kernels

    t = target("ascend-310p")
    kernels, problems = emit_candidate(c, t, g.digest())
    assert problems == []
    (got,) = run_kernels(c.graph, kernels, ins, "interpret", None)
    (want,) = run_graph(g.with_input_shapes([tuple(x.shape) for x in ins]), ins)
    return got.float(), want.float()


def test_a_key_range_of_minus_inf_logits_and_huge_logits_match_eager_without_nan() -> None:
    # -inf logits on a whole key range (split-K) or on the first key block (one kernel): a running max starting at
    # -inf made alpha = exp(-inf - -inf) = NaN there, and the NaN reached the output through l and acc
    import torch

    g = WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=KEYS, dtype="float32")
    res = run_search(g, target("ascend-310p"), "ascend")
    split = _split(g, "ascend-310p")
    one = next(c for c in res.candidates if len(c.kernels) == 1 and "SPLITS" not in c.kernels[0].tiles)
    (lo, hi), *_ = splitk.segments(KEYS, split.kernels[0].tiles["BLOCK_K1"], split.kernels[0].tiles["SPLITS"])[1:]
    gen = torch.Generator().manual_seed(0)
    q, kt, v = (torch.randn(s, generator=gen) for s in [(2, 4, 32), (2, 32, KEYS), (2, KEYS, 32)])
    q = q * 100  # logits spread over hundreds: any shift but the largest max overflows exp in fp32
    q[..., 0] = q[..., 0].abs() + 1  # q . k = -inf wherever k's first entry is -inf
    for c, keys in [(split, slice(lo, hi)), (one, slice(0, one.kernels[0].tiles["BLOCK_K1"]))]:
        k = kt.clone()
        k[:, 0, keys] = float("-inf")
        got, want = _run_on(c, g, [q, k, v])
        assert not want.isnan().any() and not got.isnan().any(), c.summary()
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-4), (c.summary(), float((got - want).abs().max()))


LAST_SHIFT = replace(splitk.COMBINE, shift=(("m_c", "m_s"),))  # the last range's max, not the largest


def test_a_shift_that_is_not_the_largest_max_is_proven_but_refused_as_unstable() -> None:
    c = _split(WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=KEYS))
    m = c.kernels[0].schedule.online
    for shift in [(("m_c", "m_s"),), ()]:  # exact over Z_P (the shift cancels), overflowing in float32
        combine = replace(splitk.COMBINE, shift=shift)
        assert splitk.split_check(c.graph, m, combine=combine).equivalent
        verdict = splitk.stability_check(m.steps, combine)
        assert not verdict.equivalent and "not float32-stable" in verdict.reason, verdict.reason
    assert splitk.stability_check(m.steps, splitk.COMBINE).equivalent
    assert "float32-stable" in m.split_proof


def test_an_unstable_combine_never_becomes_a_candidate(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(splitk, "COMBINE", LAST_SHIFT)
    res = run_search(WORKLOADS.gqa_decode(kv_len=32768), target("ascend-910b"), "ascend")
    assert not any("SPLITS" in k.tiles for c in res.candidates for k in c.kernels)
    assert any(why.startswith("split-K not float32-stable: ") for why in res.rejected), res.rejected


def test_a_recurrence_shifted_by_the_block_max_is_proven_but_refused_as_unstable() -> None:
    from ascend_compat.superopt import online
    from ascend_compat.superopt.search import _prove

    best = run_search(WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=KEYS), target("ascend-910b"),
                      "ascend").candidates[0]
    m = best.kernels[0].schedule.online
    assert online.stability_check(m.steps).equivalent and "float32-stable" in m.proof
    # m_new the block's own max: exact over Z_P, but alpha = exp(m_old - m_new) overflows when the maxima fall
    block_max = tuple((var, ("rowmax", "x") if var == "m_new" else e) for var, e in m.steps)
    assert online.field_check(best.graph, replace(m, steps=block_max)).equivalent
    assert not online.stability_check(block_max).equivalent
    m.steps = block_max
    kept, note = _prove(best.graph, best.kernels)
    assert kept == [] and note.startswith("online softmax not float32-stable: "), note


def test_plans_cached_with_a_minus_inf_running_max_are_rebuilt_not_served(cache: str) -> None:
    import json
    from pathlib import Path

    root = Path(cache)
    root.mkdir(parents=True)
    old = {f: {} for f in cachemod.REQUIRED}
    (root / "k.json").write_text(json.dumps({**old, "schema": 2}), encoding="utf-8")  # schema of commit fb5209e
    assert cachemod.load("k", root) is None
    cachemod.store("k", old, root)
    assert cachemod.load("k", root) is not None
