"""cupy.fft on the simulated NPU: values against NumPy, single precision kept single, errors."""

from __future__ import annotations

import numpy
import pytest


@pytest.fixture()
def cp(sim):
    import ascend_compat.cupy as cupy

    return cupy


@pytest.mark.parametrize("dtype,complex_out,real_out", [
    (numpy.float32, numpy.complex64, numpy.float32), (numpy.complex64, numpy.complex64, numpy.float32),
    (numpy.float64, numpy.complex128, numpy.float64), (numpy.int32, numpy.complex128, numpy.float64),
])
def test_precision_is_kept(cp, dtype, complex_out, real_out):
    x = cp.asarray(numpy.arange(16).reshape(4, 4).astype(dtype))
    assert cp.fft.fft(x).dtype == complex_out
    assert cp.fft.fftn(x).dtype == complex_out
    assert cp.fft.irfft(x).dtype == real_out
    if numpy.dtype(dtype).kind != "c":
        assert cp.fft.rfft(x).dtype == complex_out


def test_transforms_match_numpy_on_npu1(cp, sim):
    a = numpy.random.default_rng(0).standard_normal((4, 6, 8))
    with cp.cuda.Device(1):
        d = cp.asarray(a)
        out = cp.fft.fft(d, n=10, axis=1, norm="ortho")
        assert out._t.device == sim.device("npu", 1)
        numpy.testing.assert_allclose(cp.asnumpy(out), numpy.fft.fft(a, n=10, axis=1, norm="ortho"), atol=1e-12)
        for name, kw in [("ifft", {}), ("fft2", {}), ("ifftn", {"axes": (0, 2)}), ("rfft", {}), ("rfftn", {}),
                         ("irfftn", {"s": (4, 6, 10), "axes": (0, 1, 2)}), ("hfft", {"n": 14}), ("ihfft", {})]:
            got = getattr(cp.fft, name)(d, **kw)
            numpy.testing.assert_allclose(cp.asnumpy(got), getattr(numpy.fft, name)(a, **kw), atol=1e-10,
                                          err_msg=name)
        numpy.testing.assert_allclose(cp.asnumpy(cp.fft.fftshift(d, axes=1)), numpy.fft.fftshift(a, axes=1))
        numpy.testing.assert_allclose(cp.asnumpy(cp.fft.ifftshift(d)), numpy.fft.ifftshift(a))
    numpy.testing.assert_allclose(cp.asnumpy(cp.fft.fftfreq(9, 0.5)), numpy.fft.fftfreq(9, 0.5))


def test_fft_errors(cp):
    x = cp.arange(8, dtype=cp.float32)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        cp.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="norm"):
        cp.fft.fft(x, norm="bogus")
    with pytest.raises(numpy.exceptions.AxisError):
        cp.fft.fft(x, axis=1)
    with pytest.raises(TypeError, match=r"cupy\.ndarray"):
        cp.fft.fft(numpy.arange(8.0))
    with pytest.raises(NotImplementedError, match="set_cufft_gpus"):
        cp.fft.config.set_cufft_gpus([0, 1])
