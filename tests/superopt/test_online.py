"""Online softmax (flash-decoding): GQA decode with more keys than registers hold is one kernel, proven and run."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ascend_compat.superopt import GraphError, core, online
from ascend_compat.superopt._data import target
from ascend_compat.superopt.checks import check, programs
from ascend_compat.superopt.cost import nbytes
from ascend_compat.superopt.search import Candidate, KernelChoice, run_search
from tests.superopt.conftest import ROOT, WORKLOADS, small

KEYS = 600  # > 128 keys: a row of scores no longer fits in registers; > 2 blocks of 256 keys


def _online(g, name: str = "ascend-910b") -> tuple[Candidate, KernelChoice]:  # type: ignore[no-untyped-def]
    best = run_search(g, target(name), "ascend").candidates[0]
    (k,) = best.kernels
    assert k.schedule.online is not None, best.summary()
    return best, k


@pytest.mark.parametrize("batch", [1, 8])
def test_gqa_at_4096_keys_is_one_kernel_at_the_traffic_floor_within_the_ascend_limits(batch: int) -> None:
    g = WORKLOADS.gqa_decode(batch=batch)  # Mirage's shapes: 32 query heads, 8 KV heads, d 128, 4096 keys
    best, k = _online(g)
    t = target("ascend-910b")
    assert check(best.graph, k.schedule, k.tiles, t) == []
    tasks, grid = programs(k.schedule, k.tiles, t)
    assert grid <= t["cube_cores"] <= tasks  # a 1-D grid on the physical cores, every core busy
    assert [axis for _, axis in k.schedule.passes] == ["K1"]  # one loop over the keys
    assert k.schedule.online.proof.startswith("online recurrence equal to the plan graph")
    floor = sum(nbytes(g, i) for i in g.inputs) + nbytes(g, g.outputs[0])
    assert best.cost.dram_bytes == floor  # Q, K, V read once, O written once: the scores never reach memory


def test_online_tiles_over_the_ub_budget_are_refused_on_ascend_but_fit_an_h100() -> None:
    best, k = _online(WORKLOADS.gqa_decode())
    tiles = {**k.tiles, "BLOCK_K1": 128, "BLOCK_N": 128}
    (bad,) = check(best.graph, k.schedule, tiles, target("ascend-910b"))
    assert bad.startswith("live tiles need ") and bad.endswith("> 98304 (on-chip budget)")
    assert check(best.graph, k.schedule, tiles, target("nvidia-h100")) == []


def _steps(**changed: object) -> tuple:  # type: ignore[type-arg]
    return tuple((var, changed.get(var, expr)) for var, expr in online.STEPS if changed.get(var, expr) is not None)


BROKEN = {
    "accumulator not rescaled": _steps(acc=("add", "acc", ("dot", "p", "v"))),
    "sum not rescaled": _steps(l_i=("add", "l_i", ("rowsum", "p"))),
    "p shifted by the old max": _steps(p=("exp", ("sub", "x", "m_i"))),
    "rescale factor inverted": _steps(alpha=("exp", ("sub", "m_new", "m_i"))),
    "running max never kept": _steps(m_i=None),
    "sum of the logits": _steps(l_i=("add", ("mul", "l_i", "alpha"), ("rowsum", "x"))),
    "values not weighted": _steps(acc=("add", ("mul", "acc", "alpha"), ("dot", "alpha", "v"))),
}


@pytest.mark.parametrize("order", [0, 1])
def test_the_field_proof_accepts_the_recurrence_and_rejects_broken_ones(order: int) -> None:
    best, k = _online(WORKLOADS.gqa_decode(kv_heads=2, head_dim=32, kv_len=KEYS, order=order))
    m = k.schedule.online
    assert online.field_check(best.graph, m).equivalent
    for what, steps in BROKEN.items():
        verdict = online.field_check(best.graph, replace(m, steps=steps))
        assert not verdict.equivalent, what


def test_a_homomorphic_exp_proves_shift_invariance_that_an_uninterpreted_one_cannot() -> None:
    import numpy as np

    import ascend_compat.superopt as yr
    from ascend_compat.superopt import ffield

    def softmax_of(shift: float) -> yr.KernelGraph:
        g = yr.new_kernel_graph()
        x = g.new_input((3, 7), yr.float32)
        g.mark_output(g.softmax(g.sub(x, shift) if shift else x))
        return g

    a, b = softmax_of(0.0), softmax_of(2.5)
    assert not ffield.equivalent(a, b).equivalent  # exp uninterpreted: softmax(x - 2.5) is another function
    ins = [np.random.default_rng(0).integers(0, ffield.P, size=(3, 7))]
    qa, qb = ffield.exponent_domain(a), ffield.exponent_domain(b)
    assert qa is not None and qb is not None
    va, vb = ffield.evaluate_nodes(a, ins, qa), ffield.evaluate_nodes(b, ins, qb)
    assert np.array_equal(va[a.outputs[0]], vb[b.outputs[0]])  # exp(x - c - m) / sum(...): the shift cancels
    assert not np.array_equal(va[a.outputs[0]], ffield.evaluate(a, ins)[0])


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_online_kernel_on_the_interpreter_matches_eager(dtype: str, cache: str) -> None:
    from ascend_compat.superopt.reference import random_inputs, run_graph
    from ascend_compat.superopt.runtime import compare

    g = small("gqa_decode", dtype=dtype, kv_len=KEYS, order=1)
    opt = g.superoptimize(backend="ascend", cache_dir=cache)
    (kern,) = opt.kernels
    assert "Schedule: online softmax" in kern["source"] and "schedule: k0: online recurrence equal" in opt.explain()
    keys = 2 * kern["tiles"]["BLOCK_K1"] + 1  # the numeric check ran over three key blocks (rescaling exercised)
    assert keys < KEYS and f", {keys}), " in opt.record["verification"]["numeric"]
    ins = random_inputs(g, seed=11)
    ok, detail = compare(opt(inputs=ins), run_graph(g, ins))
    assert ok, detail


@pytest.mark.slow
def test_online_kernel_on_the_simulated_npu(sim, cache: str) -> None:  # type: ignore[no-untyped-def]
    from ascend_compat.superopt.reference import random_inputs, run_graph
    from ascend_compat.superopt.runtime import compare

    g = small("gqa_decode", dtype="float16", kv_len=KEYS)
    opt = g.superoptimize(backend="ascend", cache_dir=cache)
    ins = random_inputs(g, device="npu", seed=4)
    (out,) = opt(inputs=ins)
    assert out.device.type == "npu" and len(opt.kernels) == 1
    ok, detail = compare([out.cpu()], run_graph(g, [t.cpu() for t in ins]))
    assert ok, detail


@pytest.mark.slow
def test_a_wrong_online_kernel_is_discarded_by_the_numeric_check(monkeypatch, cache: str) -> None:  # type: ignore[no-untyped-def]
    real_emit, calls = core.emit, []

    def broken_first(*args, **kwargs):  # type: ignore[no-untyped-def]
        ek = real_emit(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:  # the online kernel forgets to rescale its accumulator
            assert "(acc * alpha)" in ek.source
            ek.source = ek.source.replace("(acc * alpha)", "acc")
        return ek

    monkeypatch.setattr(core, "emit", broken_first)
    opt = small("gqa_decode", dtype="float32", kv_len=KEYS).superoptimize(backend="ascend", cache_dir=cache)
    (failed,) = opt.record["search"]["failed"]
    # the next candidate (its split-K variant, with its own source) is the one verified and chosen
    assert "rejected by the numeric check" in failed[1] and "split-K" in opt.record["plan"] != failed[0]


def test_310p_gets_the_online_kernel_in_fp16_and_refuses_bf16_with_the_reason(cache: str) -> None:
    best, k = _online(WORKLOADS.gqa_decode(), "ascend-310p")
    assert check(best.graph, k.schedule, k.tiles, target("ascend-310p")) == []
    with pytest.raises(GraphError, match=r"bfloat16 is not supported on ascend-310p .*no bf16 arithmetic"):
        small("gqa_decode", dtype="bfloat16", kv_len=KEYS).superoptimize(backend="ascend", target="310P",
                                                                          cache_dir=cache)


TA_PYTHON = os.environ.get("ASCEND_COMPAT_TRITON_ASCEND_PYTHON")


@pytest.mark.skipif(not TA_PYTHON, reason="set ASCEND_COMPAT_TRITON_ASCEND_PYTHON to a venv with triton-ascend 3.2.0")
def test_every_emitted_kernel_lowers_with_triton_ascend(tmp_path: Path) -> None:
    script = str(ROOT / "benchmarks/superopt/ascend_lowering.py")
    emitted = subprocess.run([sys.executable, script, "emit", str(tmp_path)], capture_output=True, text=True,
                             timeout=600)
    assert emitted.returncode == 0, emitted.stderr
    lowered = subprocess.run([str(TA_PYTHON), script, "lower", str(tmp_path)], capture_output=True, text=True,
                             timeout=1200)
    assert lowered.returncode == 0, lowered.stdout[-2000:]
    assert any(p.name.startswith("gqa_decode_big_bfloat16") for p in tmp_path.glob("*.py"))
    assert {"gqa_decode_big_float16_splitk_k0.py", "gqa_decode_big_float16_splitk_k0_combine.py"} <= {
        p.name for p in tmp_path.glob("*.py")}  # split-K's partial and combine kernels lower too
    assert "gated_mlp_one_float16_k0.py" in {p.name for p in tmp_path.glob("*.py")}  # one token: a one-row store
