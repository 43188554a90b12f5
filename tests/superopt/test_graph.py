"""Graph building errors, the torch backend, refusals before search, a missing Triton."""

from __future__ import annotations

import pytest
import torch

import ascend_compat.superopt as yr
from tests.superopt.conftest import small


def test_seed_example_api_with_the_import_changed(cache: str) -> None:
    g = yr.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=yr.float16)
    w = g.new_input(dims=(64, 32), dtype=yr.float16)
    g.mark_output(g.matmul(x, w))
    opt = g.superoptimize(backend="torch", warmup_iters=10, profile_iters=100, cache_dir=cache)
    xs, ws = torch.randn(8, 64, dtype=torch.float16), torch.randn(64, 32, dtype=torch.float16)
    (out,) = opt(inputs=[xs, ws])
    assert out.shape == (8, 32) and torch.allclose(out.float(), (xs @ ws).float(), atol=1e-2)


@pytest.mark.parametrize(("build", "message"), [
    (lambda g, a, b: g.matmul(a, b), "matmul: inner dims differ: (8, 64) @ (32, 16) (64 != 32)"),
    (lambda g, a, b: g.add(a, b), "add: shapes (8, 64) and (32, 16) do not broadcast"),
    (lambda g, a, b: g.concat([a, b], 1), "concat: (8, 64) float16 and (32, 16) float16 differ outside dim 1"),
])
def test_shape_mismatch_names_the_op_and_shapes(build, message: str) -> None:  # type: ignore[no-untyped-def]
    g = yr.new_kernel_graph()
    a, b = g.new_input((8, 64), yr.float16), g.new_input((32, 16), yr.float16)
    with pytest.raises(yr.GraphError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(g, a, b)


def test_dtype_mismatch_and_bad_inputs() -> None:
    g = yr.new_kernel_graph()
    a, b = g.new_input((8, 64), yr.float16), g.new_input((8, 64), yr.float32)
    with pytest.raises(yr.GraphError, match=r"mul: dtypes differ: \(8, 64\) float16 and \(8, 64\) float32"):
        g.mul(a, b)
    with pytest.raises(yr.GraphError, match="dims must be 1 to 4 positive ints"):
        g.new_input((8, 0))
    with pytest.raises(yr.GraphError, match="no output"):
        g.superoptimize(backend="torch")


def test_torch_backend_matches_eager_and_checks_inputs(cache: str) -> None:
    g = small("gated_mlp", dtype="float32", order=1)
    opt = g.superoptimize(backend="torch", cache_dir=cache)
    x, w1, w2 = torch.randn(8, 64), torch.randn(64, 48), torch.randn(64, 48)
    (out,) = opt(inputs=[x, w1, w2])
    torch.testing.assert_close(out, torch.nn.functional.silu(x @ w1) * (x @ w2), atol=1e-4, rtol=1e-4)
    with pytest.raises(yr.GraphError, match=r"input 1: expected \(64, 48\) float32, got \(48, 64\) float32"):
        opt(inputs=[x, w1.T.contiguous(), w2])


def test_torch_backend_under_torch_compile(cache: str) -> None:
    g = small("rmsnorm_linear", dtype="float32")
    opt = g.superoptimize(backend="torch", cache_dir=cache, torch_compile="eager")
    x, w = torch.randn(8, 64), torch.randn(64, 48)
    expected = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)) @ w
    torch.testing.assert_close(opt(inputs=[x, w])[0], expected, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="torch_compile applies to backend='torch'"):
        g.superoptimize(backend="ascend", cache_dir=cache, torch_compile=True)


def test_fp64_is_refused_for_ascend_before_search_and_runs_on_torch(cache: str) -> None:
    g = yr.new_kernel_graph()
    x = g.new_input((4, 32), yr.float64)
    g.mark_output(g.exp(x))
    with pytest.raises(yr.GraphError, match=r"float64 is not supported on ascend-910b \(Ascend's AI core has no fp64"):
        g.superoptimize(backend="ascend", cache_dir=cache)
    (out,) = g.superoptimize(backend="torch", cache_dir=cache)(inputs=[torch.ones(4, 32, dtype=torch.float64)])
    assert out.dtype == torch.float64


def test_triton_backend_without_cuda_says_what_to_use(cache: str) -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(yr.BackendUnavailableError, match=r"no CUDA device.*backend='ascend'"):
        small("gated_mlp").superoptimize(backend="triton", cache_dir=cache)


def test_missing_triton_gives_a_clear_message_and_torch_still_works(tmp_path, forked) -> None:  # type: ignore[no-untyped-def]
    proc = forked.run(code=f"""
        import sys
        sys.modules["triton"] = None  # as if not installed
        import torch
        import ascend_compat.superopt as yr
        g = yr.new_kernel_graph(); x = g.new_input((4, 32), yr.float32); g.mark_output(g.relu(x))
        try:
            g.superoptimize(backend="ascend", cache_dir={str(tmp_path)!r})
        except yr.BackendUnavailableError as e:
            print("ERR", e)
        opt = g.superoptimize(backend="torch", cache_dir={str(tmp_path)!r})
        print("TORCH", opt(inputs=[-torch.ones(4, 32)])[0].sum().item())
    """)
    assert proc.returncode == 0, proc.stderr
    assert "ERR backend='ascend' needs Triton, which is not installed: `pip install triton`" in proc.stdout
    assert "TORCH 0.0" in proc.stdout
