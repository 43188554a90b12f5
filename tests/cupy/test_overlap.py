"""In-place ufuncs whose inputs overlap the output give NumPy's result (as if the inputs were copied first), on the
CPU and on the simulated NPU; inputs that do not overlap are not copied."""

from __future__ import annotations

from typing import Any, Callable

import numpy
import pytest

import ascend_compat.cupy as cp
from ascend_compat.cupy._ufunc_support import unalias
from tests.cupy._xp import dev  # noqa: F401  (fixture)


def _iadd_transpose(xp: Any, a: Any) -> None:
    a += a.T


def _shift_down(xp: Any, a: Any) -> None:
    a[1:] += a[:-1]


def _shift_up(xp: Any, a: Any) -> None:
    a[:-1] -= a[1:]


def _flat_shift(xp: Any, a: Any) -> None:
    b = a.ravel()
    b[1:] *= b[:-1]


def _strided_shift(xp: Any, a: Any) -> None:
    a[1:, ::2] += a[:-1, ::2]  # not dense: torch's own CPU overlap check does not see this one


def _broadcast_row(xp: Any, a: Any) -> None:
    a += a[0]  # row 0 is written first, then read again for rows 1..3


_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "a += a.T": _iadd_transpose,
    "add(a, a.T, out=a)": lambda xp, a: xp.add(a, a.T, out=a),
    "a[1:] += a[:-1]": _shift_down,
    "a[:-1] -= a[1:]": _shift_up,
    "ravel shift": _flat_shift,
    "strided shift": _strided_shift,
    "a += a[0]": _broadcast_row,
    "subtract(a.T, a, out=a)": lambda xp, a: xp.subtract(a.T, a, out=a),
    "maximum(a.T, a, out=a)": lambda xp, a: xp.maximum(a.T, a, out=a),
    "true_divide(a.T, 2, out=a)": lambda xp, a: xp.true_divide(a.T, 2, out=a),
    "cos(a.T, out=a)": lambda xp, a: xp.cos(a.T, out=a),
    "positive(a.T, out=a)": lambda xp, a: xp.positive(a.T, out=a),
    "add where=": lambda xp, a: xp.add(a, a.T, out=a, where=a > 5),
    "a += a (identical)": lambda xp, a: xp.add(a, a, out=a),
}


_FLOAT_ONLY = {"cos(a.T, out=a)", "true_divide(a.T, 2, out=a)"}  # no int64 -> int64 loop


@pytest.mark.parametrize(("case", "dtype"), [(c, d) for c in _CASES for d in ("float32", "int64")
                                             if d == "float32" or c not in _FLOAT_ONLY])
def test_overlapping_inplace_matches_numpy(dev: str, case: str, dtype: str) -> None:  # noqa: F811
    expect = numpy.arange(16, dtype=dtype).reshape(4, 4)
    got = cp.asarray(expect)
    assert got._t.device.type == dev
    _CASES[case](numpy, expect)
    _CASES[case](cp, got)
    numpy.testing.assert_allclose(cp.asnumpy(got), expect, rtol=1e-6)


def test_large_overlap_on_numpy_kernel_path(dev: str) -> None:  # noqa: F811
    """Above the size where CPU float32 exp runs NumPy's kernel on the tensors' memory."""
    expect = numpy.linspace(0, 1, 128 * 128, dtype=numpy.float32).reshape(128, 128)
    got = cp.asarray(expect)
    numpy.exp(expect.T, out=expect)
    cp.exp(got.T, out=got)
    numpy.testing.assert_allclose(cp.asnumpy(got), expect, rtol=1e-6)


def test_unalias_copies_only_overlapping_inputs(dev: str) -> None:  # noqa: F811
    a = cp.arange(16, dtype=cp.float32).reshape(4, 4)
    other = cp.ones((4, 4), dtype=cp.float32)
    ins = (a._t, other._t, 2.0)
    assert unalias(ins, a._t) is ins  # the output itself and a separate array: the same tuple back, no copy
    same = (a._t.view(4, 4), 1)  # another view, element for element the same memory
    assert unalias(same, a._t) is same
    apart = (a[2:]._t,)  # rows 2-3 do not overlap rows 0-1
    assert unalias(apart, a[:2]._t) is apart
    shifted = (other._t, a[1:]._t)
    res = unalias(shifted, a[:-1]._t)
    assert res[0] is other._t
    assert res[1].data_ptr() != a[1:]._t.data_ptr()  # the overlapping view was copied
    numpy.testing.assert_array_equal(res[1].cpu().numpy(), numpy.arange(4, 16, dtype=numpy.float32).reshape(3, 4))
