"""What a new user of the superoptimizer ran into: one-row outputs (a single token's ``x @ W``, MHA decode), ops no
kernel can hold, calling the optimized graph, inputs on two devices, build-time checks, an unwritable plan cache."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy
import pytest
import torch

import ascend_compat.superopt as yr
from tests.superopt.conftest import small

F32 = yr.float32


def _graph(shapes: list[tuple[int, ...]], build: Callable[..., Any]) -> yr.KernelGraph:
    g = yr.new_kernel_graph()
    g.mark_output(build(g, *[g.new_input(dims=s, dtype=F32) for s in shapes]))
    return g


ONE_ROW = {
    "linear, one token": ([(1, 64), (64, 32)], lambda g, x, w: g.matmul(x, w),
                          lambda x, w: x @ w),
    "rmsnorm + linear, one token": ([(1, 64), (64, 32)], lambda g, x, w: g.matmul(g.rms_norm(x), w),
                                    lambda x, w: (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)) @ w),
    "batched, one row each": ([(2, 1, 64), (64, 32)], lambda g, x, w: g.matmul(x, w), lambda x, w: x @ w),
    "softmax of one row": ([(1, 64)], lambda g, x: g.softmax(x), lambda x: x.softmax(-1)),
    "sum of a vector": ([(8,)], lambda g, x: g.sum(x), lambda x: x.sum(-1, keepdim=True)),
    "max over rows of one": ([(2, 1, 8)], lambda g, x: g.max(x), lambda x: x.amax(-1, keepdim=True)),
    "exp of one element": ([(1,)], lambda g, x: g.exp(x), torch.exp),
}


@pytest.mark.parametrize("name", list(ONE_ROW))
def test_one_row_outputs_run_on_the_ascend_backend(name: str, cache: str) -> None:
    shapes, build, eager = ONE_ROW[name]
    opt = _graph(shapes, build).superoptimize(backend="ascend", cache_dir=cache)
    ins = [torch.randn(*s) for s in shapes]
    (out,) = opt(inputs=ins)
    torch.testing.assert_close(out, eager(*ins), atol=1e-4, rtol=1e-4)


def test_attention_decode_with_one_query_per_head(cache: str) -> None:
    """MHA decode (group 1): q is (heads, 1, d); the online-softmax kernel stores one row."""
    g = small("gqa_decode", group=1, dtype="float32")
    opt = g.superoptimize(backend="ascend", cache_dir=cache)
    q, kt, v = torch.randn(2, 1, 32), torch.randn(2, 32, 64), torch.randn(2, 64, 32)
    (out,) = opt(inputs=[q, kt, v])
    torch.testing.assert_close(out, torch.softmax((q @ kt) * 32 ** -0.5, -1) @ v, atol=1e-4, rtol=1e-4)
    assert opt.record["plan"].startswith("1 kernel(s)")


def test_an_op_no_kernel_can_hold_is_named_with_the_reason(cache: str) -> None:
    g = _graph([(4, 8)], lambda g, x: g.softmax(x, dim=0))
    with pytest.raises(yr.GraphError, match=r"max t1 \(1, 8\) cannot be in any kernel: max over dim 0 \(only the "
                                            r"last dim is fused\).*backend='torch'"):
        g.superoptimize(backend="ascend", cache_dir=cache)
    x = torch.randn(4, 8)
    (out,) = g.superoptimize(backend="torch", cache_dir=cache)(inputs=[x])
    torch.testing.assert_close(out, x.softmax(0))


def test_call_with_positional_tensors(cache: str) -> None:
    g = _graph([(8, 64), (64, 32)], lambda g, x, w: g.matmul(x, w))
    x, w = torch.randn(8, 64), torch.randn(64, 32)
    for backend in ("torch", "ascend"):
        opt = g.superoptimize(backend=backend, cache_dir=cache)
        for outs in (opt(x, w), opt([x, w]), opt(inputs=(x, w))):
            torch.testing.assert_close(outs[0], x @ w, atol=1e-4, rtol=1e-4)
    one = _graph([(8, 64)], lambda g, x: g.relu(x)).superoptimize(backend="torch", cache_dir=cache)
    torch.testing.assert_close(one(x)[0], x.relu())


def test_inputs_that_are_not_torch_tensors_are_named(cache: str) -> None:
    opt = _graph([(8, 64), (64, 32)], lambda g, x, w: g.matmul(x, w)).superoptimize(backend="torch",
                                                                                     cache_dir=cache)
    with pytest.raises(yr.GraphError, match=r"input 0: expected a torch tensor of \(8, 64\) float32, got "
                                            r"numpy.ndarray"):
        opt(inputs=[numpy.ones((8, 64), numpy.float32), torch.ones(64, 32)])


@pytest.mark.parametrize("backend", ["ascend", "torch"])
def test_inputs_on_two_devices_are_refused(sim: Any, backend: str, cache: str) -> None:
    opt = _graph([(8, 64), (64, 32)], lambda g, x, w: g.matmul(x, w)).superoptimize(backend=backend,
                                                                                     cache_dir=cache)
    x, w = torch.randn(8, 64), torch.randn(64, 32)
    for pair, names in (((x, w.to("npu")), "cpu, npu:0"), ((x.to("npu:1"), w.to("npu:0")), "npu:1, npu:0")):
        with pytest.raises(yr.GraphError, match=f"the inputs are on different devices \\({names}\\)"):
            opt(inputs=list(pair))
    (out,) = opt(inputs=[x.to("npu:1"), w.to("npu:1")])
    assert out.device == torch.device("npu:1")
    torch.testing.assert_close(out.cpu(), x @ w, atol=1e-4, rtol=1e-4)


def test_dims_and_dim_are_checked_when_the_graph_is_built() -> None:
    g = yr.new_kernel_graph()
    with pytest.raises(yr.GraphError, match=r"dims must be 1 to 4 positive ints, got \(True, 4\)"):
        g.new_input(dims=(True, 4))
    with pytest.raises(yr.GraphError, match="dims must be a tuple of 1 to 4 positive ints, got 8"):
        g.new_input(dims=8)  # type: ignore[arg-type]
    x = g.new_input(dims=(numpy.int64(4), 8), dtype=F32)  # a shape taken from an array
    assert x.dims == (4, 8) and all(type(d) is int for d in x.dims)
    with pytest.raises(yr.GraphError, match=r"sum: dim must be an int, got 1\.0"):
        g.sum(x, dim=1.0)  # type: ignore[arg-type]
    with pytest.raises(yr.GraphError, match="concat: dim must be an int, got True"):
        g.concat([x, x], True)  # type: ignore[arg-type]
    with pytest.raises(yr.GraphError, match=r"softmax: dim 2 is out of range for shape \(4, 8\)"):
        g.softmax(x, dim=2)


def test_an_unwritable_plan_cache_warns_and_runs_uncached(tmp_path: Any) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", "utf-8")
    g = _graph([(8, 64), (64, 32)], lambda g, x, w: g.matmul(x, w))
    x, w = torch.randn(8, 64), torch.randn(64, 32)
    for backend in ("ascend", "torch"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt = g.superoptimize(backend=backend, cache_dir=str(blocker / "cache"))
        messages = [str(c.message) for c in caught if c.category is RuntimeWarning]
        assert any("the plan cache cannot be written" in m for m in messages), messages
        assert caught[0].filename == __file__  # the warning points at the user's call
        torch.testing.assert_close(opt(inputs=[x, w])[0], x @ w, atol=1e-4, rtol=1e-4)
    assert blocker.read_text("utf-8") == "a file where the cache folder would be"


def test_torch_backend_plan_names_its_ops(cache: str) -> None:
    opt = _graph([(8, 64), (64, 32)], lambda g, x, w: g.relu(g.matmul(x, w))).superoptimize(
        backend="torch", cache_dir=cache)
    assert opt.record["plan"] == "torch ops: matmul relu"
    assert "Chosen: torch ops: matmul relu;" in opt.explain() and "0 kernel(s)" not in opt.explain()


def test_uncached_plans_leave_no_temporary_folders(tmp_path: Any) -> None:
    """Kernel modules of uncached plans went to a new temporary folder each, never removed."""
    from tests.conftest import run_python

    res = run_python("""
        import torch
        import ascend_compat.superopt as yr
        for n in (16, 32):
            g = yr.new_kernel_graph()
            g.mark_output(g.exp(g.new_input(dims=(8, n), dtype=yr.float32)))
            opt = g.superoptimize(backend="ascend", use_cache=False)
            print(float((opt(inputs=[torch.zeros(8, n)])[0] - 1).abs().max()))
    """, env={"TMPDIR": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0.0", "0.0"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ascend_compat_superopt_")) == []
