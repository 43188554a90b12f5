"""The simulated NPU's host BLAS for large float32/float64 products (simulate/_native/npu_blas.cpp, handed NumPy's
OpenBLAS by simulate/_host_blas.py): torch's mm/bmm/addmm/matmul on npu tensors agree with the CPU within BLAS
tolerance in every form users write them (out=, in place, transposed, batched, broadcast), small products keep
torch's kernel, and the float64 policy and OpenBLAS's own thread count are respected."""

from __future__ import annotations

import os
import sys
import time
import warnings

import pytest

from ascend_compat.simulate import _host_blas

pytestmark = pytest.mark.skipif(_host_blas.find() is None, reason="NumPy's BLAS here is not OpenBLAS")

M, K, N = 300, 260, 310  # 24M multiply-adds: above the route's 256^3 threshold


@pytest.fixture()
def torch(sim):
    return sim


def _products() -> int:
    return int(sys.modules["ascend_compat_npu_sim"].host_blas_products())


def _close(got, want, dtype) -> None:
    tol = 2e-5 if str(dtype).endswith("float32") else 1e-12
    scale = float(want.abs().max())
    err = float((got.cpu() - want).abs().max())
    assert got.device.type == "npu" and got.dtype == want.dtype and got.shape == want.shape
    assert err <= tol * scale, (err, scale)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mm_forms_match_cpu_and_take_the_host_blas(torch, dtype):
    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(M, K, generator=g, dtype=dt), torch.randn(K, N, generator=g, dtype=dt)
    da, db = a.to("npu"), b.to("npu")
    before = _products()
    _close(torch.mm(da, db), a @ b, dt)
    _close(da @ db, a @ b, dt)
    _close(torch.mm(da.t().contiguous().t(), db), a @ b, dt)  # a transposed first operand: BLAS's flag, no copy
    _close(torch.mm(db.t(), da.t()), b.t() @ a.t(), dt)  # a transposed second one: torch's kernel below 1024^3
    _close(torch.mm(da.t().contiguous().t(), db), a @ b, dt)  # column-major (F-order) storage
    out = torch.empty(M, N, dtype=dt, device="npu")
    assert torch.mm(da, db, out=out) is out
    _close(out, a @ b, dt)
    assert _products() - before == 5


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_addmm_bmm_and_batched_matmul_match_cpu(torch, dtype):
    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(M, K, generator=g, dtype=dt), torch.randn(K, N, generator=g, dtype=dt)
    bias, c = torch.randn(N, generator=g, dtype=dt), torch.randn(M, N, generator=g, dtype=dt)
    da, db, dc = a.to("npu"), b.to("npu"), c.to("npu")
    before = _products()
    _close(torch.addmm(bias.to("npu"), da, db, beta=0.5, alpha=2.0), torch.addmm(bias, a, b, beta=0.5, alpha=2.0), dt)
    assert dc.addmm_(da, db, alpha=-1.0) is dc
    _close(dc, c.addmm(a, b, alpha=-1.0), dt)
    nan_bias = torch.full((N,), float("nan"), dtype=dt)
    _close(torch.addmm(nan_bias.to("npu"), da, db, beta=0), a @ b, dt)  # beta=0 ignores self, nan included
    x, y = torch.randn(3, M, K, generator=g, dtype=dt), torch.randn(3, K, N, generator=g, dtype=dt)
    _close(torch.bmm(x.to("npu"), y.to("npu")), torch.bmm(x, y), dt)
    _close(torch.bmm(y.to("npu").transpose(1, 2), x.to("npu").transpose(1, 2)),  # second transposed: torch's
           torch.bmm(y.transpose(1, 2), x.transpose(1, 2)), dt)
    _close(torch.matmul(x.to("npu"), db), torch.matmul(x, b), dt)  # 3-D @ 2-D: folded into one mm
    _close(torch.matmul(x.view(3, 1, M, K).to("npu"), y.to("npu")), torch.matmul(x.view(3, 1, M, K), y), dt)
    assert _products() - before == 6


def test_gradients_through_the_host_blas(torch):
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)
    da, db = a.to("npu").requires_grad_(), b.to("npu").requires_grad_()
    ca, cb = a.clone().requires_grad_(), b.clone().requires_grad_()
    before = _products()
    (da @ db).square().sum().backward()
    (ca @ cb).square().sum().backward()
    _close(da.grad, ca.grad, torch.float32)
    _close(db.grad, cb.grad, torch.float32)
    # The forward and b's gradient (a^T @ g); a's gradient (g @ b^T, second operand transposed) is torch's below 1024^3.
    assert _products() - before == 2


def test_small_products_and_other_forms_keep_torchs_kernel(torch):
    g = torch.Generator().manual_seed(3)
    before = _products()
    s = torch.randn(64, 64, generator=g)
    _close(torch.mm(s.to("npu"), s.to("npu")), s @ s, torch.float32)  # a training step's size
    a, b = torch.randn(M, 2 * K, generator=g), torch.randn(K, N, generator=g)
    _close(torch.mm(a.to("npu")[:, ::2], b.to("npu")), a[:, ::2] @ b, torch.float32)  # strides BLAS cannot take
    half = torch.randn(M, K, generator=g).half()
    assert torch.mm(half.to("npu"), b.half().to("npu")).dtype == torch.float16
    assert _products() == before


def test_errors_and_out_resizing_as_on_the_cpu(torch):
    a, b = torch.randn(M, K), torch.randn(K, N)
    for dev in ("cpu", "npu"):
        x, y = a.to(dev), b.to(dev)
        with pytest.raises(RuntimeError, match="same dtype"):
            torch.mm(x, y.double())
        with pytest.raises(RuntimeError, match="cannot be multiplied"):
            torch.mm(x, x)
        with pytest.raises(RuntimeError, match="dtype"):
            torch.mm(x, y, out=torch.empty(M, N, dtype=torch.float64, device=dev))
    small = torch.empty(5, device="npu")  # out= of another shape: resized (and warned about) as torch does
    with pytest.warns(UserWarning, match="resized"):
        torch.mm(a.to("npu"), b.to("npu"), out=small)
    _close(small, a @ b, torch.float32)
    strided = torch.empty(N, M, device="npu").t()  # right shape, not contiguous: torch's kernel fills it in place
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.mm(a.to("npu"), b.to("npu"), out=strided) is strided
    _close(strided, a @ b, torch.float32)


def test_float64_policy_applies_to_host_blas_products(torch):
    from ascend_compat import simulate

    a = torch.randn(M, K, dtype=torch.float64, device="npu")
    b = torch.randn(K, N, dtype=torch.float64, device="npu")
    try:
        simulate.configure(float64="error")
        with pytest.raises(RuntimeError, match="float64 is not supported by the NPU operator aten::mm"):
            a @ b
    finally:
        simulate.configure(float64="allow")


def _thread_ticks() -> dict[str, int]:
    """CPU clock ticks (user + system) each thread of this process has used so far (Linux)."""
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        ticks[tid] = int(fields[11]) + int(fields[12])
    return ticks


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="per-thread CPU times are read from Linux's /proc")
def test_openblas_runs_with_torchs_thread_count_and_keeps_its_own_setting(torch):
    import ctypes

    blas = _host_blas.find()
    assert blas is not None and blas.get_threads and blas.set_threads
    get_threads = ctypes.CFUNCTYPE(ctypes.c_int)(blas.get_threads)
    set_threads = ctypes.CFUNCTYPE(None, ctypes.c_int)(blas.set_threads)
    saved, torch_threads = get_threads(), torch.get_num_threads()
    pool = max(2, saved)
    try:
        set_threads(pool)  # OpenBLAS's own setting: 2 threads or more
        time.sleep(0.5)  # a worker it just started spins a while before it sleeps: not the products' work
        torch.set_num_threads(1)
        a = torch.randn(1024, 1024, device="npu")
        a @ a
        before, ticks = _products(), _thread_ticks()
        for _ in range(8):
            a @ a
        after = _thread_ticks()
        assert _products() == before + 8
        busy = sorted((after[t] - ticks.get(t, 0) for t in after), reverse=True)
        assert busy[0] >= 5 and busy[1] <= max(2, busy[0] // 10), busy  # one thread did the work: torch's count
        assert get_threads() == pool  # and NumPy's setting is left as it was
    finally:
        set_threads(saved)
        torch.set_num_threads(torch_threads)


def test_detached_host_blas_leaves_every_product_to_torch(torch):
    ext = sys.modules["ascend_compat_npu_sim"]
    a, b = torch.randn(M, K), torch.randn(K, N)
    try:
        assert _host_blas.attach(ext, enabled=False) is None
        before = _products()
        got = torch.mm(a.to("npu"), b.to("npu"))
        assert _products() == before
        _close(got, a @ b, torch.float32)
    finally:
        assert _host_blas.attach(ext) is not None
    assert "OpenBLAS" in _host_blas.describe()


def test_linear_layers_below_1024_cubed_keep_torchs_kernel(torch):
    # x @ W^T (a Linear layer) with a transposed second operand: OpenBLAS is slower than torch's kernel there
    # (1.2x at 64x512x512), so a training step's products stay on torch's path; from 1024^3 the host BLAS is faster.
    g = torch.Generator().manual_seed(3)
    x, w, bias = torch.randn(64, 512, generator=g), torch.randn(512, 512, generator=g), torch.randn(512, generator=g)
    before = _products()
    _close(torch.nn.functional.linear(x.to("npu"), w.to("npu"), bias.to("npu")), x @ w.t() + bias, torch.float32)
    assert _products() == before
    _close(torch.mm(w.to("npu").t(), x.to("npu").t()), w.t() @ x.t(), torch.float32)  # (512x512)^T @ (64x512)^T
    assert _products() == before
    big_x, big_w = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    _close(torch.nn.functional.linear(big_x.to("npu"), big_w.to("npu")), big_x @ big_w.t(), torch.float32)
    assert _products() == before + 1


def test_configure_host_blas_off_gives_every_product_to_torch_and_back(torch):
    from ascend_compat import simulate

    a, b = torch.randn(M, K), torch.randn(K, N)
    da, db = a.to("npu"), b.to("npu")
    try:
        assert simulate.configure(host_blas=False).host_blas is False
        before = _products()
        _close(torch.mm(da, db), a @ b, torch.float32)
        assert _products() == before
        simulate.configure(float64="allow")  # another setting leaves the switch as it is
        torch.mm(da, db)
        assert _products() == before
    finally:
        assert simulate.configure(host_blas=True).host_blas is True
    torch.mm(da, db)
    assert _products() == before + 1


def test_install_with_host_blas_off():
    from tests.conftest import run_python

    proc = run_python(
        """
        import sys
        import torch
        from ascend_compat import simulate
        assert simulate.install(host_blas=False).host_blas is False
        a = torch.randn(300, 300, device="npu")
        a @ a
        print(sys.modules["ascend_compat_npu_sim"].host_blas_products())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0"]
