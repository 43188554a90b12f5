"""``unique`` (every NumPy 2 argument, along an axis too), ``trim_zeros`` (with ``axis``), ``put_along_axis``,
``lexsort``/``searchsorted`` argument checks and the pickle round trip of F-ordered arrays, on the CPU and the
simulated NPU, against NumPy."""

from __future__ import annotations

import pickle
from typing import Any

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)

NAN = numpy.nan
ALL = {"return_index": True, "return_inverse": True, "return_counts": True}


def _same(got: Any, want: Any) -> None:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, cp.ndarray)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        numpy.testing.assert_array_equal(g.get(), w)


@pytest.mark.parametrize("dtype", ["b", "B", "i", "Q", "f", "d", "F", "?"])
@pytest.mark.parametrize(("shape", "axis"), [((20, 3), 0), ((4, 20), 1), ((5, 4, 3), 1), ((3, 0, 2), 2),
                                             ((0, 3), 0), ((6,), 0), ((6, 2), None)])
def test_unique_all_outputs_match_numpy(dev: str, dtype: str, shape: tuple[int, ...],  # noqa: F811
                                        axis: Any) -> None:
    host = numpy.random.default_rng(0).integers(0, 2, shape).astype(dtype)
    _same(cp.unique(cp.asarray(host), axis=axis, **ALL), numpy.unique(host, axis=axis, **ALL))


def test_unique_axis_nan_and_complex_rows_and_uint64(dev: str) -> None:  # noqa: F811
    rows = numpy.array([[2, NAN, 2], [NAN, 1, NAN], [NAN, 1, NAN], [NAN, 0, 1], [NAN, 0, 0]])
    for equal_nan in (True, False):  # along an axis NaN rows never merge, whatever equal_nan says (as NumPy)
        _same(cp.unique(cp.asarray(rows), axis=0, equal_nan=equal_nan, return_index=True),
              numpy.unique(rows, axis=0, equal_nan=equal_nan, return_index=True))
    c = numpy.array([[complex(NAN, 3), 2, complex(7, NAN)], [NAN, complex(NAN, NAN), 2], [NAN, 1, complex(NAN, -1)]])
    for axis in (0, 1):
        _same(cp.unique(cp.asarray(c), axis=axis, **ALL), numpy.unique(c, axis=axis, **ALL))
    big = numpy.array([[2**64 - 1, 0], [1, 0], [2**63, 5], [1, 0]], dtype=numpy.uint64)
    _same(cp.unique(cp.asarray(big), axis=0, **ALL), numpy.unique(big, axis=0, **ALL))


def test_unique_flat_nan_sorted_and_bad_axis(dev: str) -> None:  # noqa: F811
    host = numpy.array([[2, NAN, 1], [NAN, 2, 3]])
    for equal_nan in (True, False):
        _same(cp.unique(cp.asarray(host), equal_nan=equal_nan, **ALL), numpy.unique(host, equal_nan=equal_nan, **ALL))
    _same(cp.unique(cp.asarray([3, 1, 2, 1]), sorted=False), numpy.array([1, 2, 3]))  # any order allowed: sorted
    with pytest.raises(numpy.exceptions.AxisError):
        cp.unique(cp.zeros((2, 2)), axis=2)


def test_unique_array_api_functions_are_named_tuples(dev: str) -> None:  # noqa: F811
    host = numpy.array([[1, NAN, 2], [NAN, 2, 1]])
    a = cp.asarray(host)
    for name in ("unique_all", "unique_counts", "unique_inverse"):
        got, want = getattr(cp, name)(a), getattr(numpy, name)(host)
        assert type(got).__name__ == type(want).__name__ and got._fields == want._fields
        _same(tuple(got), tuple(want))
    assert cp.unique_all(a).inverse_indices.shape == (2, 3)
    _same(cp.unique_values(a), numpy.sort(numpy.unique_values(host)))


@pytest.mark.parametrize("trim", ["fb", "f", "b", "BF"])
def test_trim_zeros_axes_match_numpy(dev: str, trim: str) -> None:  # noqa: F811
    arrays = [numpy.array([[0, 0, 2, 3, 0, 0], [0, 1, 0, 3, 0, 0], [0, 0, 0, 0, 0, 0]]), numpy.zeros((2, 3)),
              numpy.array([[0, 0, 1j]])]
    for host in arrays:
        for axis in (None, 0, 1, -1, (0, 1), ()):
            _same(cp.trim_zeros(cp.asarray(host), trim, axis=axis), numpy.trim_zeros(host, trim, axis=axis))
    _same(cp.trim_zeros(cp.asarray([0, 0, 1, 0, 2, 0]), trim), numpy.trim_zeros(numpy.array([0, 0, 1, 0, 2, 0]), trim))
    zero_d = cp.asarray(0.0)
    assert cp.trim_zeros(zero_d, trim) is zero_d  # nothing to trim: the input itself, as NumPy


def test_trim_zeros_is_a_view_and_rejects_bad_arguments(dev: str) -> None:  # noqa: F811
    a = cp.asarray([[0, 0, 0], [0, 5, 0]])
    view = cp.trim_zeros(a)
    view[0, 0] = 7
    assert int(a[1, 1]) == 7
    with pytest.raises(ValueError, match="unexpected character"):
        cp.trim_zeros(a, "x")
    with pytest.raises(numpy.exceptions.AxisError):
        cp.trim_zeros(a, axis=2)


def test_put_along_axis_broadcasts_and_checks_dimensions(dev: str) -> None:  # noqa: F811
    for xp in (numpy, cp):
        a = xp.arange(12).reshape(3, 4)
        xp.put_along_axis(a, xp.asarray([[1, 2, 0, 1]]), -5, axis=0)  # indices broadcast against arr
        b = xp.arange(12).reshape(3, 4)
        xp.put_along_axis(b, xp.asarray([[1], [2], [0]]), xp.asarray([[-1], [-2], [-3]]), axis=1)
        c = xp.arange(9).reshape(3, 3)
        xp.put_along_axis(c, xp.asarray([1, 5]), 99, axis=None)
        if xp is numpy:
            want = (a, b, c)
        else:
            for g, w in zip((a, b, c), want):
                numpy.testing.assert_array_equal(g.get(), w)
    t = cp.arange(12).reshape(4, 3).T  # not contiguous: the flat put still lands in the array
    cp.put_along_axis(t, cp.asarray([1, 5]), 99, axis=None)
    numpy.testing.assert_array_equal(t.get().ravel(), [0, 99, 6, 9, 1, 99, 7, 10, 2, 5, 8, 11])
    a3 = cp.arange(27).reshape(3, 3, 3)
    with pytest.raises(ValueError, match="same number of dimensions"):
        cp.put_along_axis(a3, cp.argmax(a3, axis=0), -99, axis=1)
    with pytest.raises(ValueError, match="single dimension"):
        cp.put_along_axis(a3, cp.zeros((1, 1, 1), dtype=int), -99, axis=None)
    with pytest.raises(IndexError):
        cp.put_along_axis(a3, cp.zeros((1, 1, 1)), -99, axis=0)


def test_lexsort_0d_keys_and_searchsorted_sorter_checks(dev: str) -> None:  # noqa: F811
    host = numpy.array([0.3, 0.1])
    got = cp.lexsort(cp.asarray(host))
    assert got.shape == () and int(got) == int(numpy.lexsort(host))
    bins = cp.asarray([10, 4, 2, 1, 8])
    x = cp.arange(12.0)
    numpy.testing.assert_array_equal(
        cp.searchsorted(bins, x, sorter=cp.asarray([3, 2, 1, 4, 0])).get(),
        numpy.searchsorted(bins.get(), x.get(), sorter=numpy.array([3, 2, 1, 4, 0])))
    with pytest.raises(ValueError):
        cp.searchsorted(bins, x, sorter=cp.asarray([0]))
    with pytest.raises(TypeError):
        cp.searchsorted(bins, x, sorter=cp.asarray([], dtype=numpy.float64))


@pytest.mark.parametrize("order", ["C", "F"])
def test_pickle_keeps_the_memory_order(dev: str, order: str) -> None:  # noqa: F811
    a = cp.asarray(numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4), order=order)
    b = pickle.loads(pickle.dumps(a))
    numpy.testing.assert_array_equal(b.get(), a.get())
    assert (b.flags.c_contiguous, b.flags.f_contiguous) == (order == "C", order == "F")
    assert b.strides == a.strides and b.device == a.device
