"""Result dtypes of ascend_compat.cupy agree with NumPy 2 (NEP 50) for every pair of the 13 numeric dtypes (plus
bool) and Python scalars: arithmetic, comparison, reductions; values agree too."""

from __future__ import annotations

import itertools
import warnings

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)

DTYPES = [numpy.bool_, numpy.int8, numpy.int16, numpy.int32, numpy.int64, numpy.uint8, numpy.uint16, numpy.uint32,
          numpy.uint64, numpy.float16, numpy.float32, numpy.float64, numpy.complex64, numpy.complex128]
SCALARS = [True, 3, 2.5, 1 + 2j]


def _complex(x: object) -> bool:
    return isinstance(x, complex) or (isinstance(x, numpy.ndarray) and x.dtype.kind == "c")
BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power", "maximum", "minimum",
          "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and", "left_shift",
          "arctan2", "logical_and"]
REDUCTIONS = ["sum", "prod", "mean", "max", "min", "cumsum", "var", "all", "any", "argmax"]


def _values(dt: type) -> numpy.ndarray:
    return numpy.array([True, False, True]) if dt is numpy.bool_ else numpy.array([1, 2, 3]).astype(dt)


def _outcome(fn, *args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args), None
    except (TypeError, ValueError, OverflowError) as exc:
        return None, type(exc)


def _compare(op: str, n_res, c_res, n_err, c_err) -> str:
    if (n_err is None) != (c_err is None):
        return f"numpy raised {n_err}, cupy raised {c_err}"
    if n_err is not None:
        return "" if issubclass(c_err, n_err) or issubclass(n_err, c_err) else f"{n_err} vs {c_err}"
    got = c_res.get()
    if got.dtype != n_res.dtype:
        return f"dtype {got.dtype} != {n_res.dtype}"
    rtol = 2e-3 if n_res.dtype in (numpy.float16,) else 1e-6
    if not numpy.allclose(got, n_res, rtol=rtol, equal_nan=True):
        return f"values {got} != {n_res}"
    return ""


@pytest.mark.parametrize("op", BINARY)
def test_binary_result_types_match_numpy(dev: str, op: str) -> None:  # noqa: F811
    operands = [_values(d) for d in DTYPES] + SCALARS
    bad = []
    for x, y in itertools.product(operands, repeat=2):
        if not isinstance(x, numpy.ndarray) and not isinstance(y, numpy.ndarray):
            continue
        n_res, n_err = _outcome(getattr(numpy, op), x, y)
        cx = cp.asarray(x) if isinstance(x, numpy.ndarray) else x
        cy = cp.asarray(y) if isinstance(y, numpy.ndarray) else y
        c_res, c_err = _outcome(getattr(cp, op), cx, cy)
        why = _compare(op, n_res, c_res, n_err, c_err)
        if why:
            bad.append((getattr(x, "dtype", type(x)), getattr(y, "dtype", type(y)), why))
    assert not bad, bad[:10]


@pytest.mark.parametrize("dt", DTYPES)
def test_reduction_result_types_match_numpy(dev: str, dt: type) -> None:  # noqa: F811
    host = _values(dt).reshape(3, 1) * numpy.ones((1, 2), dtype=dt) if dt is not numpy.bool_ else \
        numpy.array([[True, False], [True, True], [False, True]])
    dev_arr = cp.asarray(host)
    for name in REDUCTIONS:
        for axis in (None, 0):
            n_res, n_err = _outcome(getattr(numpy, name), host, axis)
            c_res, c_err = _outcome(getattr(cp, name), dev_arr, axis)
            n_res = None if n_res is None else numpy.asarray(n_res)
            why = _compare(name, n_res, c_res, n_err, c_err)
            assert not why, (name, axis, why)


def test_python_int_out_of_range_raises_overflow(dev: str) -> None:  # noqa: F811
    a = cp.asarray(numpy.array([1, 2], dtype=numpy.int8))
    with pytest.raises(OverflowError):
        a + 300
    assert (a + 100).dtype == numpy.int8


def test_uint_wraparound_matches_numpy(dev: str) -> None:  # noqa: F811
    for dt in (numpy.uint16, numpy.uint32, numpy.uint64):
        host = numpy.array([0, 1, numpy.iinfo(dt).max], dtype=dt)
        a = cp.asarray(host)
        numpy.testing.assert_array_equal((a + 1).get(), host + dt(1))
        numpy.testing.assert_array_equal((a - 2).get(), host - dt(2))
        numpy.testing.assert_array_equal((-a).get(), -host)
        assert (a * a).dtype == numpy.dtype(dt)
    big = cp.asarray(numpy.array([2**63 + 5, 3], dtype=numpy.uint64))
    numpy.testing.assert_array_equal(cp.sort(big).get(), [3, 2**63 + 5])
    assert big.astype(numpy.float64).get()[0] == float(2**63 + 5)
