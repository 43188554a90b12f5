"""The polynomial API (``poly1d``, ``polyfit``, ``roots``, ``cupy.polynomial``) and ``apply_along_axis`` /
``lib.stride_tricks``, on the CPU and the simulated NPU, against NumPy."""

from __future__ import annotations

import warnings

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def test_poly1d_arithmetic_and_repr_match_numpy(dev: str) -> None:  # noqa: F811
    c = numpy.array([0, 0, 1, 2, 3], dtype=numpy.int16)
    p, q = cp.poly1d(cp.asarray(c)), numpy.poly1d(c)
    assert p.order == q.order == 2 and repr(p) == repr(q) and str(p) == str(q)
    for got, want in [(p + p, q + q), (p - 5, q - 5), (p * p, q * q), (p ** 3, q ** 3), (2 * p, 2 * q)]:
        assert isinstance(got, cp.poly1d)
        assert got.coeffs.dtype == want.coeffs.dtype
        numpy.testing.assert_array_equal(got.coeffs.get(), want.coeffs)
    with pytest.raises(ValueError):
        p ** -1
    with pytest.raises(TypeError):
        p ** 2.0
    # a poly1d in a ufunc stands for its coefficients (CuPy's __cupy_get_ndarray__)
    numpy.testing.assert_array_equal(cp.add(p, p).get(), numpy.add(q.coeffs, q.coeffs))
    numpy.testing.assert_allclose(p(cp.arange(4.0)).get(), q(numpy.arange(4.0)))
    assert p.get() == q and p[0] == 3 and p[7] == 0


def test_polyfit_full_and_cov_match_numpy(dev: str) -> None:  # noqa: F811
    x = numpy.linspace(0.0, 1.0, 12)
    y = numpy.stack([3 * x ** 2 - x + 0.5, numpy.sin(x)], axis=1)
    w = numpy.linspace(1.0, 2.0, 12)
    got = cp.polyfit(cp.asarray(x), cp.asarray(y), 2, full=True, w=cp.asarray(w))
    want = numpy.polyfit(x, y, 2, full=True, w=w)
    for g, n in zip(got[:2], want[:2]):
        numpy.testing.assert_allclose(cp.asnumpy(g), n, rtol=1e-10, atol=1e-12)
    assert int(got[2]) == want[2] and got[4] == want[4]
    c, cov = cp.polyfit(cp.asarray(x), cp.asarray(y[:, 0]), 1, cov=True)
    nc, ncov = numpy.polyfit(x, y[:, 0], 1, cov=True)
    numpy.testing.assert_allclose(cov.get(), ncov, rtol=1e-8)
    numpy.testing.assert_allclose(c.get(), nc, rtol=1e-10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cp.polyfit(cp.arange(5.0), cp.arange(5.0), 6)
    assert any(issubclass(r.category, numpy.exceptions.RankWarning) for r in caught)
    with pytest.raises(TypeError):
        cp.polyfit(cp.arange(5.0), cp.arange(4.0), 2)
    with pytest.raises(TypeError):
        cp.polyfit(cp.arange(5, dtype=cp.float16), cp.arange(5, dtype=cp.float16), 2)


@pytest.mark.parametrize("coeffs", [[1.0, -3.0, 2.0], [1.0, 0.0, 1.0], [2.0, 0.0, 0.0], [0.0, 5.0]])
def test_roots_and_poly_round_trip(dev: str, coeffs: list[float]) -> None:  # noqa: F811
    got, want = cp.roots(cp.asarray(coeffs)), numpy.roots(coeffs)
    assert got.dtype == want.dtype
    numpy.testing.assert_allclose(numpy.sort_complex(got.get()), numpy.sort_complex(want), atol=1e-12)
    back, nback = cp.poly(got), numpy.poly(want)
    if isinstance(nback, float):  # no roots: the constant 1.0, as in NumPy
        assert back == nback == 1.0
    else:
        assert back.dtype == nback.dtype
        numpy.testing.assert_allclose(back.get(), nback, atol=1e-12)
    with pytest.raises(TypeError):
        cp.roots(cp.asarray(3.0))


def test_polynomial_package(dev: str) -> None:  # noqa: F811
    x = numpy.array([0.5, -1.0, 2.0], dtype=numpy.float32)
    v = cp.polynomial.polynomial.polyvander(cp.asarray(x), 4)
    nv = numpy.polynomial.polynomial.polyvander(x, 4)
    assert v.dtype == nv.dtype and v.flags.f_contiguous == nv.flags.f_contiguous
    numpy.testing.assert_allclose(v.get(), nv, rtol=1e-6)
    c = numpy.array([3.0, 5.0, 7.0, 0.0, 0.0])
    numpy.testing.assert_array_equal(cp.polynomial.polynomial.polycompanion(cp.asarray(c)).get(),
                                     numpy.polynomial.polynomial.polycompanion(c))
    numpy.testing.assert_array_equal(cp.polynomial.polyutils.trimcoef(cp.asarray(c)).get(),
                                     numpy.polynomial.polyutils.trimcoef(c))
    series = cp.polynomial.polyutils.as_series(cp.asarray(numpy.arange(6).reshape(2, 3)))
    nseries = numpy.polynomial.polyutils.as_series(numpy.arange(6).reshape(2, 3))
    assert [s.dtype for s in series] == [s.dtype for s in nseries]
    with pytest.raises(ValueError):
        cp.polynomial.polyutils.as_series(cp.asarray([True, False]))
    with pytest.raises(TypeError):
        cp.polynomial.polynomial.polyvander(cp.asarray(x), 2.0)


def test_apply_along_axis_and_stride_tricks(dev: str) -> None:  # noqa: F811
    host = numpy.arange(24).reshape(2, 3, 4)
    a = cp.asarray(host)
    for axis in (0, 1, -1):
        got = cp.apply_along_axis(lambda v: v[::-1] * v[1:, None], axis, a)
        want = numpy.apply_along_axis(lambda v: v[::-1] * v[1:, None], axis, host)
        numpy.testing.assert_array_equal(got.get(), want)
    numpy.testing.assert_array_equal(cp.apply_over_axes(cp.sum, a, [0, 2]).get(),
                                     numpy.apply_over_axes(numpy.sum, host, [0, 2]))
    with pytest.raises(numpy.exceptions.AxisError):
        cp.apply_along_axis(cp.sum, 3, a)
    win = cp.lib.stride_tricks.sliding_window_view(a, (2, 2), axis=(1, 2))
    nwin = numpy.lib.stride_tricks.sliding_window_view(host, (2, 2), axis=(1, 2))
    assert win.shape == nwin.shape and win.strides == nwin.strides
    numpy.testing.assert_array_equal(win.get(), nwin)
    view = cp.lib.stride_tricks.as_strided(a, shape=(3,), strides=(8 * a.itemsize,))
    view[1] = -1  # a view: writes reach the original array
    assert int(a[0, 2, 0]) == -1
