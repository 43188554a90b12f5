"""Signed zeros, infinities and NaNs of complex arithmetic match NumPy's, part by part, for every array length
(torch's complex kernels compute ``-x`` as ``0 - x`` and ``a - b`` as ``a + (-1) * b`` in their vectorised loops, from
4-8 elements on, and with a scalar operand, which loses ``-0.0`` and turns ``inf`` into ``nan``), on the CPU and the
simulated NPU."""

from __future__ import annotations

from typing import Any, Callable

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)

_PARTS = [0.0, -0.0, 1.5, -2.0, numpy.inf, -numpy.inf, numpy.nan]
_VALUES = [complex(r, i) for r in _PARTS for i in _PARTS]  # every pair of parts, 49 values


def _host(dtype: str, n: int, shift: int = 0) -> numpy.ndarray:
    vals = (_VALUES[shift:] + _VALUES[:shift]) * (n // len(_VALUES) + 1)
    out = numpy.empty(n, dtype=dtype)
    out.real = [v.real for v in vals[:n]]  # (complex() would turn -0.0 parts into +0.0 on the way)
    out.imag = [v.imag for v in vals[:n]]
    return out


def _same_bits(got: numpy.ndarray, want: numpy.ndarray, ulp: int = 0) -> None:
    """The same values part by part, -0.0 and +0.0 told apart (a NaN's sign is not compared: NumPy's differs
    between its own loops)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for part in ("real", "imag") if want.dtype.kind == "c" else ("real",):
        g, w = getattr(got, part), getattr(want, part)
        nan = numpy.isnan(w)
        numpy.testing.assert_array_equal(numpy.isnan(g), nan, err_msg=f"NaNs of the {part} parts")
        if ulp:  # (abs: torch's hypot is within an ULP of NumPy's)
            numpy.testing.assert_array_max_ulp(g[~nan], w[~nan], maxulp=ulp)
        else:
            numpy.testing.assert_array_equal(g, w, err_msg=f"{part} parts")
        numpy.testing.assert_array_equal(numpy.signbit(g[~nan]), numpy.signbit(w[~nan]),
                                         err_msg=f"signs of the {part} parts")


def _neg_out(xp: Any, x: Any) -> Any:
    return xp.negative(x, out=xp.empty_like(x))


def _neg_inplace(xp: Any, x: Any) -> Any:
    x = x.copy()
    xp.negative(x, out=x)
    return x


def _sub_inplace(xp: Any, x: Any, y: Any) -> Any:
    x = x.copy()
    x -= y
    return x


UNARY: dict[str, Callable[[Any, Any], Any]] = {
    "-a": lambda xp, x: -x, "negative": lambda xp, x: xp.negative(x), "negative(out=)": _neg_out,
    "negative(out=a)": _neg_inplace, "+a": lambda xp, x: +x, "positive": lambda xp, x: xp.positive(x),
    "conj": lambda xp, x: xp.conj(x), "a.conj()": lambda xp, x: x.conj(), "abs": lambda xp, x: abs(x),
    "a * -1": lambda xp, x: x * -1, "-1.0 * a": lambda xp, x: -1.0 * x, "0 - a": lambda xp, x: 0 - x,
    "a - 0": lambda xp, x: x - 0, "a + 0.0": lambda xp, x: x + 0.0, "a - 1j": lambda xp, x: x - 1j,
}
BINARY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "a - b": lambda xp, x, y: x - y, "a + b": lambda xp, x, y: x + y,
    "subtract(out=)": lambda xp, x, y: xp.subtract(x, y, out=xp.empty_like(x)), "a -= b": _sub_inplace,
    "a - b[0]": lambda xp, x, y: x - y[:1], "a * b": lambda xp, x, y: x * y,
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [3, 8, 49])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_complex_signed_zeros_match_numpy(dev: str, dtype: str, n: int, name: str) -> None:  # noqa: F811
    h = _host(dtype, n)
    with numpy.errstate(all="ignore"):
        want = UNARY[name](numpy, h)
    _same_bits(UNARY[name](cp, cp.asarray(h)).get(), want, ulp=1 if name == "abs" else 0)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [8, 49 * 7])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_complex_signed_zeros_match_numpy(dev: str, dtype: str, n: int, name: str) -> None:  # noqa: F811
    h = _host(dtype, n)
    g = numpy.repeat(_host(dtype, 49), n // 49 + 1)[:n]  # every value against every other one when n = 343
    with numpy.errstate(all="ignore"):
        want = BINARY[name](numpy, h, g)
    _same_bits(BINARY[name](cp, cp.asarray(h), cp.asarray(g)).get(), want)


def test_large_complex_negation_is_exact(dev: str) -> None:  # noqa: F811
    # Large results are written by a different path (huge pages, out= kernels): the same signs there.
    h = _host("complex64", 600_000)
    _same_bits((-cp.asarray(h)).get(), -h)
    with numpy.errstate(invalid="ignore"):  # (inf - inf)
        want = h - h[::-1]
    _same_bits((cp.asarray(h) - cp.asarray(h[::-1].copy())).get(), want)
