"""Statistics of ascend_compat.cupy on the simulated NPU against NumPy: cov/corrcoef, quantiles, histograms,
bincount, digitize (values, result dtypes, errors)."""

from __future__ import annotations

import warnings

import numpy
import pytest


@pytest.fixture()
def cp(sim):
    import ascend_compat.cupy as cupy

    return cupy


def _same(got, want, exact=True):
    got = got.get() if hasattr(got, "get") else got
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact:
        assert numpy.array_equal(got, want, equal_nan=True)
    else:
        numpy.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [numpy.int8, numpy.float16, numpy.float32, numpy.complex64])
def test_cov_and_corrcoef_match_numpy(cp, dtype):
    x = (numpy.arange(12).reshape(3, 4) ** 2 % 7).astype(dtype)
    y = x[::-1].copy()
    for kw in ({}, {"rowvar": False}, {"bias": True}, {"ddof": 2}, {"aweights": numpy.array([1.0, 4.0, 1.0, 2.0])},
               {"fweights": numpy.array([1, 2, 1, 3])}):
        dev = {k: cp.asarray(v) if isinstance(v, numpy.ndarray) else v for k, v in kw.items()}
        _same(cp.cov(cp.asarray(x), **dev), numpy.cov(x, **kw), exact=False)
    _same(cp.cov(cp.asarray(x), cp.asarray(y)), numpy.cov(x, y), exact=False)
    _same(cp.corrcoef(cp.asarray(x), cp.asarray(y)), numpy.corrcoef(x, y), exact=False)
    _same(cp.corrcoef(cp.asarray(x[:1])), numpy.corrcoef(x[:1]), exact=False)


def test_cov_errors_and_warning(cp):
    a = cp.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="ddof must be integer"):
        cp.cov(a, ddof=1.5)
    with pytest.raises(ValueError, match="more than 2 dimensions"):
        cp.cov(cp.zeros((2, 2, 2)))
    with pytest.raises(RuntimeError, match="fweights"):
        cp.cov(a, fweights=cp.asarray([1, 2]))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        cp.cov(a, ddof=3)
    with pytest.raises(TypeError):  # the float64 mean cannot go back into an int8 array, as in NumPy
        cp.corrcoef(cp.arange(6).reshape(2, 3), dtype=numpy.int8)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_percentile_positions_and_dtypes_follow_numpy(cp, method):
    a = numpy.arange(1, 1002, dtype=numpy.float32)
    for q in ([99, 99.9], numpy.array([10.0, 55.5], numpy.float32), 37.5):
        dq = cp.asarray(q) if isinstance(q, numpy.ndarray) else q
        _same(cp.percentile(cp.asarray(a), dq, method=method), numpy.percentile(a, q, method=method))
    r = numpy.random.default_rng(0).random((4, 6)).astype(numpy.float32)
    q32 = numpy.array([0.1, 0.5, 0.9], numpy.float32)
    _same(cp.quantile(cp.asarray(r), cp.asarray(q32), axis=1, method=method),
          numpy.quantile(r, q32, axis=1, method=method))
    with_nan = r.copy()
    with_nan[1, 2] = numpy.nan
    _same(cp.quantile(cp.asarray(with_nan), 0.3, axis=1, method=method),
          numpy.quantile(with_nan, 0.3, axis=1, method=method))
    _same(cp.nanquantile(cp.asarray(with_nan), 0.3, axis=1, method=method),
          numpy.nanquantile(with_nan, 0.3, axis=1, method=method))


def test_percentile_overwrite_input_sorts_the_input(cp):
    host = numpy.array([[3.0, 1.0, 2.0], [9.0, 7.0, 8.0]])
    a = cp.asarray(host)
    got = cp.percentile(a, 50, axis=-1, overwrite_input=True)
    assert cp.asnumpy(got).tolist() == [2.0, 8.0]
    assert cp.asnumpy(a).tolist() == numpy.sort(host, axis=-1).tolist()


@pytest.mark.parametrize("dtype", [numpy.float16, numpy.float32, numpy.int32, numpy.uint8])
def test_histogram_edges_and_counts_match_numpy(cp, dtype):
    x = (numpy.random.default_rng(1).random(200) * 90).astype(dtype)
    for kw in ({}, {"bins": 7, "range": (5, 60)}, {"density": True}, {"weights": numpy.ones(200, numpy.float32)}):
        dev = {k: cp.asarray(v) if isinstance(v, numpy.ndarray) else v for k, v in kw.items()}
        got, want = cp.histogram(cp.asarray(x), **dev), numpy.histogram(x, **kw)
        _same(got[1], want[1])  # equal-width edges bit for bit, in the data's float dtype
        _same(got[0], want[0], exact=not kw.get("density"))
    edges = numpy.array([0, 10, 30, 31, 90], dtype)
    got, want = cp.histogram(cp.asarray(x), cp.asarray(edges)), numpy.histogram(x, edges)
    _same(got[0], want[0])
    _same(got[1], want[1])


def test_histogramdd_and_2d_match_numpy(cp):
    s = (numpy.random.default_rng(2).random((100, 3)) * 100).astype(numpy.float32)
    for kw in ({"bins": (4, 5, 6)}, {"bins": 3, "range": ((20, 50), (10, 100), (0, 40)), "density": True}):
        got, want = cp.histogramdd(cp.asarray(s), **kw), numpy.histogramdd(s, **kw)
        _same(got[0], want[0], exact=False)
        for g, w in zip(got[1], want[1]):
            _same(g, w)
    h, ex, _ = cp.histogram2d(cp.asarray(s[:, 0]), cp.asarray(s[:, 1]), bins=cp.arange(0, 100, 10))
    wh, wx, _ = numpy.histogram2d(s[:, 0], s[:, 1], bins=numpy.arange(0, 100, 10))
    _same(h, wh)
    _same(ex, wx)
    with pytest.raises(ValueError, match="array-like bins"):
        cp.histogramdd(cp.asarray(s[:, :2]), bins=[[0, 10, 20]] * 2)
    with pytest.raises(ValueError, match="one entry per dimension"):
        cp.histogramdd(cp.asarray(s), range=((0, 1),) * 2)


def test_histogram_errors(cp):
    with pytest.raises(ValueError):
        cp.histogram(cp.arange(10), range=[1, 9, 15])
    with pytest.raises(TypeError):
        cp.histogram(cp.arange(10), range=10)
    with pytest.raises(ValueError, match="same shape"):
        cp.histogram(cp.arange(10), weights=cp.ones(11))
    with pytest.raises(ValueError, match="monotonically"):
        cp.histogram(cp.arange(10), cp.asarray([1, 3, 2]))
    with pytest.raises(ValueError, match="don't have the same length"):
        cp.bincount(cp.arange(3), weights=cp.ones(4))
    with pytest.raises(TypeError, match="safe"):
        cp.bincount(cp.arange(3.0))


@pytest.mark.parametrize("right", [False, True])
def test_digitize_with_nan_bins_matches_numpy(cp, right):
    x = numpy.arange(1, 15, dtype=numpy.float32)
    x[5] = numpy.nan
    for bins in ([1.0, 3.0, 5.0, 8.0, numpy.nan], [numpy.nan, 8.0, 5.0, 3.0, 1.0], [numpy.nan] * 4,
                 [0.0, 1.0, 1.0, 4.0, 4.0, 10.0][::-1]):
        b = numpy.array(bins, numpy.float32)
        _same(cp.digitize(cp.asarray(x), cp.asarray(b), right=right), numpy.digitize(x, b, right=right))
    with pytest.raises(ValueError, match="monotonically"):
        cp.digitize(cp.asarray(x), cp.asarray([1.0, 3.0, 2.0]))
    with pytest.raises(TypeError, match="complex"):
        cp.digitize(cp.asarray(x).astype(numpy.complex64), cp.asarray([1.0, 2.0]))


def test_correlate_longer_second_operand(cp):
    a, v = numpy.arange(6.0), numpy.arange(20.0) ** 1.5
    for mode in ("valid", "same", "full"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _same(cp.correlate(cp.asarray(a), cp.asarray(v), mode), numpy.correlate(a, v, mode), exact=False)
    with pytest.raises(ValueError):
        cp.correlate(cp.asarray(1.0), cp.asarray([1.0]))


@pytest.mark.parametrize("name", ["add", "subtract", "maximum", "multiply"])
def test_ufunc_at_broadcasts_a_multidimensional_b(cp, name):
    host = numpy.arange(24, dtype=numpy.float64).reshape(4, 6)
    b = numpy.arange(12.0).reshape(2, 6) + 1
    a = cp.asarray(host)
    getattr(cp, name).at(a, [1, 1], cp.asarray(b))  # a repeated row: both updates land, in order
    getattr(numpy, name).at(host, [1, 1], b)
    _same(a, host)
    host = numpy.arange(24, dtype=numpy.int32).reshape(6, 4).T  # a non-contiguous target
    a = cp.asarray(numpy.arange(24, dtype=numpy.int32).reshape(6, 4)).T
    col = numpy.array([[1], [2], [3], [4]], numpy.int32)
    getattr(cp, name).at(a, (slice(None), [0, 2, 0]), cp.asarray(col))
    getattr(numpy, name).at(host, (slice(None), [0, 2, 0]), col)
    _same(a, host)
    with pytest.raises(ValueError):
        getattr(cp, name).at(a, [0, 1], cp.ones((3, 3), dtype=cp.int32))
