"""Emitted Triton run by Triton's CPU interpreter on CPU and on the simulated NPU, against torch eager."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("triton")

from ascend_compat.superopt import core
from ascend_compat.superopt.reference import random_inputs, run_graph
from ascend_compat.superopt.runtime import compare
from tests.superopt.conftest import SMALL, small

KERNELS = {"gated_mlp": 1, "rmsnorm_linear": 1, "lora": 1, "gqa_decode": 1}  # GQA's 64 keys fit in registers


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])  # bf16: the 910B has it
@pytest.mark.parametrize("name", list(SMALL))
def test_workload_on_the_interpreter_matches_eager(name: str, dtype: str, cache: str) -> None:
    g = small(name, dtype=dtype, order=1)
    opt = g.superoptimize(backend="ascend", cache_dir=cache)
    assert opt.record["mode"] == "interpret" and len(opt.kernels) == KERNELS[name]
    ins = random_inputs(g, seed=7)
    ok, detail = compare(opt(inputs=ins), run_graph(g, ins))
    assert ok, detail
    assert "matches torch eager" in opt.record["verification"]["numeric"]


@pytest.mark.parametrize("name", list(SMALL))
def test_on_the_simulated_npu(sim, name: str, cache: str) -> None:  # type: ignore[no-untyped-def]
    g = small(name, dtype="float16")
    opt = g.superoptimize(backend="ascend", cache_dir=cache)
    ins = random_inputs(g, device="npu", seed=3)
    (out,) = opt(inputs=ins)
    assert out.device.type == "npu"
    ok, detail = compare([out.cpu()], [r.cpu() for r in run_graph(g, [t.cpu() for t in ins])])
    assert ok, detail


def test_a_kernel_that_computes_the_wrong_thing_is_discarded(monkeypatch, cache: str) -> None:  # type: ignore[no-untyped-def]
    real_emit, calls = core.emit, []

    def broken_first(*args, **kwargs):  # type: ignore[no-untyped-def]
        ek = real_emit(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:  # the best candidate's kernel: silu replaced by exp
            ek.source = ek.source.replace("/ (1.0 + tl.exp(-", "* (1.0 + tl.exp(-")
        return ek

    monkeypatch.setattr(core, "emit", broken_first)
    opt = small("gated_mlp", dtype="float32").superoptimize(backend="ascend", cache_dir=cache)
    failed = opt.record["search"]["failed"]
    assert len(failed) == 1 and "rejected by the numeric check" in failed[0][1]
    assert "Discarded: 1 kernel(s)" in opt.explain() and len(opt.kernels) == 2


def test_explain_save_and_triton_code(tmp_path: Path, cache: str) -> None:
    opt = small("rmsnorm_linear", dtype="float16").superoptimize(backend="ascend", cache_dir=cache)
    text = opt.explain()
    assert "rewrites: scale-past-matmul" in text and "Candidates (best first):" in text
    assert "finite field: equal on 3 random tests" in text
    files = opt.save(str(tmp_path / "out"))
    kernel_files = [f for f in files if f.suffix == ".py"]
    assert len(kernel_files) == 1
    src = kernel_files[0].read_text()
    assert "Implements (plan graph" in src and "= matmul(t0, t1)" in src and "@triton.jit" in src
    assert src in opt.triton_code()
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["rewrites"] == ["scale-past-matmul"] and plan["target"] == "ascend-910b"


def test_310p_target_refuses_bf16(cache: str) -> None:
    from ascend_compat.superopt import GraphError

    with pytest.raises(GraphError, match="bfloat16 is not supported on ascend-310p"):
        small("gated_mlp", dtype="bfloat16").superoptimize(backend="ascend", target="310P", cache_dir=cache)


def _bias_relu_bf16(g):  # type: ignore[no-untyped-def]
    x, w, b = g.new_input((8, 64), "bfloat16"), g.new_input((64, 48), "bfloat16"), g.new_input((48,), "bfloat16")
    g.mark_output(g.relu(g.add(g.matmul(x, w), b)))


def _row_outputs(g):  # type: ignore[no-untyped-def]
    x = g.new_input((8, 40), "float32")
    g.mark_output(g.sum(g.square(x)))
    g.mark_output(g.mean(x))


def _softmax_wide(g):  # type: ignore[no-untyped-def]
    g.mark_output(g.softmax(g.new_input((5, 200), "float16")))  # rows looped over in chunks, then the tile


@pytest.mark.parametrize("build", [_bias_relu_bf16, _row_outputs, _softmax_wide])
def test_other_graph_shapes(build, cache: str) -> None:  # type: ignore[no-untyped-def]
    import ascend_compat.superopt as yr

    g = yr.new_kernel_graph()
    build(g)
    opt = g.superoptimize(backend="ascend", cache_dir=cache)
    ins = random_inputs(g, seed=2)
    ok, detail = compare(opt(inputs=ins), run_graph(g, ins))
    assert ok, detail
    assert not opt.record["search"]["failed"]
