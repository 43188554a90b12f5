"""Large products of ``ascend_compat.cupy`` arrays: on the CPU they run NumPy's BLAS on the tensors' own memory
(``cupy/_linalg_host.py``: bit for bit NumPy's result, ``out=`` written in place); on the simulated NPU they never
take that host shortcut (device memory on a real NPU) and run the simulator's own host BLAS instead. Either way
the values agree with NumPy within the CuPy suite's matmul tolerance, for every layout and NumPy's dtype rules."""

from __future__ import annotations

import sys

import numpy
import pytest

from tests.cupy._xp import dev  # noqa: F401  (the cpu / npu fixture)

M, K, N = 300, 260, 310  # 24M multiply-adds: above both routes' 256^3 threshold


@pytest.fixture()
def cp():
    import ascend_compat.cupy as cupy

    return cupy


def _rand(shape, seed, dtype=numpy.float32):
    rng = numpy.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if numpy.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _products() -> int:
    ext = sys.modules.get("ascend_compat_npu_sim")
    return int(ext.host_blas_products()) if ext is not None else 0


def _check(got, want, dev) -> None:  # noqa: F811
    import ascend_compat.cupy as cupy

    host = cupy.asnumpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape and got._t.device.type == dev
    if dev == "cpu":  # NumPy's own kernel on the same memory: its exact bits
        numpy.testing.assert_array_equal(host, want)
    else:
        rtol = 1e-4 if want.dtype in (numpy.float32, numpy.complex64) else 1e-10
        numpy.testing.assert_allclose(host, want, rtol=rtol, atol=rtol * float(abs(want).max()))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_matmul_dot_and_operator_match_numpy(cp, dev, dtype):  # noqa: F811
    ah, bh = _rand((M, K), 0, dtype), _rand((K, N), 1, dtype)
    a, b = cp.asarray(ah), cp.asarray(bh)
    before = _products()
    _check(cp.matmul(a, b), ah @ bh, dev)
    _check(a @ b, ah @ bh, dev)
    _check(cp.dot(a, b), numpy.dot(ah, bh), dev)
    _check(a.dot(b), ah.dot(bh), dev)
    if dev == "npu":  # the simulator's BLAS took the real ones (complex: torch's kernel); no host shortcut
        assert _products() - before == (0 if dtype.startswith("complex") else 4)


def test_out_is_written_in_place(cp, dev):  # noqa: F811
    ah, bh = _rand((M, K), 2), _rand((K, N), 3)
    a, b = cp.asarray(ah), cp.asarray(bh)
    out = cp.empty((M, N), dtype=numpy.float32)
    ptr = out._t.data_ptr()
    assert cp.matmul(a, b, out=out) is out and out._t.data_ptr() == ptr
    _check(out, ah @ bh, dev)
    out2 = cp.zeros((M, N), dtype=numpy.float32)
    assert cp.dot(a, b, out=out2) is out2 and out2._t.data_ptr() != ptr
    _check(out2, ah @ bh, dev)
    view = cp.zeros((2 * M, N), dtype=numpy.float32)[::2]  # a strided out= view: its base sees the result
    cp.matmul(a, b, out=view)
    _check(view, ah @ bh, dev)
    with pytest.raises(ValueError, match="not acceptable"):  # dot's out= must be C-contiguous of the result dtype
        cp.dot(a, b, out=view)
    with pytest.raises(ValueError):
        cp.matmul(a, b, out=cp.empty((M, M), dtype=numpy.float32))


def test_overlapping_out_is_computed_from_the_inputs(cp, dev):  # noqa: F811
    ah = _rand((512, 512), 4)
    a = cp.asarray(ah)
    cp.matmul(a, a, out=a)  # NumPy (and torch) buffer an out= that is an operand
    _check(a, ah @ ah, dev)


def test_layouts_batches_and_vectors(cp, dev):  # noqa: F811
    ah, bh = _rand((K, M), 5).T, _rand((N, K), 6).T  # transposed views
    a, b = cp.asarray(numpy.ascontiguousarray(ah.T)).T, cp.asarray(numpy.ascontiguousarray(bh.T)).T
    _check(a @ b, ah @ bh, dev)
    fa = cp.asfortranarray(cp.asarray(numpy.ascontiguousarray(ah)))
    assert fa.flags.f_contiguous
    _check(fa @ b, ah @ bh, dev)
    wide = _rand((M, 2 * K), 7)
    _check(cp.asarray(wide)[:, ::2] @ b, wide[:, ::2] @ bh, dev)  # strides BLAS cannot take
    xh, yh = _rand((3, M, K), 8), _rand((3, K, N), 9)
    x, y = cp.asarray(xh), cp.asarray(yh)
    _check(x @ y, xh @ yh, dev)
    _check(x @ cp.asarray(bh), xh @ bh, dev)  # batch broadcast
    _check(cp.matmul(x.reshape(3, 1, M, K), y), xh.reshape(3, 1, M, K) @ yh, dev)
    vh = _rand(K, 10)
    got = cp.asarray(vh) @ b  # 1-D @ 2-D (a small product: torch's kernel)
    assert got.shape == (N,)
    numpy.testing.assert_allclose(cp.asnumpy(got), vh @ bh, rtol=1e-4, atol=1e-4)


def test_mixed_dtypes_promote_as_numpy(cp, dev):  # noqa: F811
    ah, bh = _rand((M, K), 12), _rand((K, N), 13, numpy.float64)
    got = cp.matmul(cp.asarray(ah), cp.asarray(bh))
    assert got.dtype == numpy.float64
    numpy.testing.assert_allclose(cp.asnumpy(got), ah @ bh, rtol=1e-6, atol=1e-6)
    ih = numpy.random.default_rng(14).integers(-5, 5, (M, K)).astype(numpy.int32)
    got = cp.asarray(ih) @ cp.asarray(_rand((K, N), 15))
    assert got.dtype == numpy.float64
    numpy.testing.assert_allclose(cp.asnumpy(got), ih @ _rand((K, N), 15), rtol=1e-6, atol=1e-5)
    with pytest.raises(ValueError):
        cp.matmul(cp.asarray(ah), cp.asarray(ah))


def test_host_route_only_for_cpu_tensors(sim):
    import torch

    from ascend_compat.cupy import _linalg_host

    a = torch.randn(M, K)
    b = torch.randn(K, N)
    f32 = numpy.dtype(numpy.float32)
    assert _linalg_host.product(numpy.matmul, a, b, f32, None) is not None
    assert _linalg_host.product(numpy.matmul, a.to("npu"), b.to("npu"), f32, None) is None
    assert _linalg_host.product(numpy.matmul, a[:8, :8], b[:8, :8], f32, None) is None  # small: torch's kernel
    assert _linalg_host.product(numpy.matmul, a.half(), b.half(), numpy.dtype(numpy.float16), None) is None


def test_float64_policy_on_npu(cp, sim):
    from ascend_compat import simulate
    from ascend_compat.cupy._core import use_device_kind

    with use_device_kind("npu"):
        a = cp.asarray(_rand((M, K), 16, numpy.float64))
        b = cp.asarray(_rand((K, N), 17, numpy.float64))
        try:
            simulate.configure(float64="error")
            with pytest.raises((RuntimeError, ValueError), match="float64 is not supported by the NPU operator"):
                a @ b  # the simulator's policy, not a host shortcut around it
        finally:
            simulate.configure(float64="allow")
        assert (a @ b).dtype == numpy.float64
