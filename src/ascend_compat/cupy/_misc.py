"""Window functions, ``unwrap``, ``real_if_close`` and the cheap polynomial API (``poly1d``, ``polyadd``, ...)."""

from __future__ import annotations

import math
from typing import Any

import numpy
import torch

from ascend_compat.cupy import _ufuncs as U  # noqa: N812
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._manipulation import normalize_axis


def _window(m: int, fn: Any) -> ndarray:
    m = int(m)
    dev = current_torch_device()
    if m < 1:
        return _wrap(torch.zeros(0, dtype=torch.float64, device=dev))
    if m == 1:
        return _wrap(torch.ones(1, dtype=torch.float64, device=dev))
    n = torch.arange(m, dtype=torch.float64, device=dev)
    return _wrap(fn(n, m))


def hanning(M: int) -> ndarray:  # noqa: N803 (NumPy's name)
    return _window(M, lambda n, m: 0.5 - 0.5 * torch.cos(2 * math.pi * n / (m - 1)))


def hamming(M: int) -> ndarray:  # noqa: N803
    return _window(M, lambda n, m: 0.54 - 0.46 * torch.cos(2 * math.pi * n / (m - 1)))


def blackman(M: int) -> ndarray:  # noqa: N803
    return _window(M, lambda n, m: 0.42 - 0.5 * torch.cos(2 * math.pi * n / (m - 1))
                   + 0.08 * torch.cos(4 * math.pi * n / (m - 1)))


def bartlett(M: int) -> ndarray:  # noqa: N803
    return _window(M, lambda n, m: torch.where(n <= (m - 1) / 2, 2 * n / (m - 1), 2 - 2 * n / (m - 1)))


def kaiser(M: int, beta: float) -> ndarray:  # noqa: N803
    def fn(n: torch.Tensor, m: int) -> torch.Tensor:
        alpha = (m - 1) / 2.0
        arg = beta * torch.sqrt(1 - ((n - alpha) / alpha) ** 2)
        return torch.special.i0(arg) / torch.special.i0(torch.tensor(float(beta), dtype=torch.float64))
    return _window(M, fn)


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * math.pi) -> ndarray:
    from ascend_compat.cupy._extra import diff
    from ascend_compat.cupy._indexing import where
    from ascend_compat.cupy._reduction import cumsum

    a = asarray(p)
    ax = normalize_axis(axis, a.ndim)
    if discont is None:
        discont = period / 2
    dd = diff(a, axis=ax)
    half = period / 2
    ddmod = U.subtract(U.remainder(U.add(dd, half), period), half)
    ddmod = where(U.logical_and(U.equal(ddmod, -half), U.greater(dd, 0)), half, ddmod)
    correct = U.subtract(ddmod, dd)
    correct = where(U.less(U.absolute(dd), discont), 0, correct)
    out = a.astype(numpy.result_type(a._dtype, 1.0), copy=True)
    sl = (slice(None),) * ax + (slice(1, None),)
    out[sl] = U.add(a[sl], cumsum(correct, axis=ax))
    return out


def real_if_close(a: Any, tol: float = 100) -> ndarray:
    x = asarray(a)
    if x._dtype.kind != "c":
        return x
    eps = numpy.finfo(x._dtype).eps
    limit = tol * eps if tol > 1 else tol
    if bool((x._t.imag.abs() < limit).all()):
        return x.real
    return x


class poly1d:  # noqa: N801 (NumPy's name)
    """A one-dimensional polynomial with device coefficients (highest power first)."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, c_or_r: Any, r: bool = False, variable: Any = None) -> None:
        if isinstance(c_or_r, poly1d):
            self._coeffs, self._variable = c_or_r._coeffs, c_or_r._variable
            return
        if r:
            raise NotImplementedError("poly1d(roots, r=True) is not supported by ascend_compat.cupy")
        c = asarray(c_or_r)
        if c.ndim > 1:
            raise ValueError("Polynomial must be 1d only.")
        c = c.reshape(1) if c.ndim == 0 else c
        nz = torch.nonzero(c._t != 0)
        c = c[int(nz[0]):] if nz.numel() else asarray([0], dtype=c._dtype)
        self._coeffs, self._variable = c, variable or "x"

    coeffs = property(lambda self: self._coeffs)
    c = coef = coefficients = coeffs
    variable = property(lambda self: self._variable)
    order = property(lambda self: self._coeffs.size - 1)
    o = order

    def __call__(self, val: Any) -> Any:
        if isinstance(val, poly1d):
            raise NotImplementedError("composition of poly1d objects is not supported")
        from ascend_compat.cupy._extra import polyval

        return polyval(self._coeffs, val)

    def __len__(self) -> int:
        return self.order

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.coeffs.get()`.")

    def __getitem__(self, k: int) -> Any:
        if k > self.order or k < 0:
            return 0
        return self._coeffs[self.order - k]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, poly1d):
            return NotImplemented
        return self._coeffs.shape == other._coeffs.shape and bool((self._coeffs == other._coeffs).all())

    def __neg__(self) -> poly1d:
        return poly1d(-self._coeffs)

    def __pos__(self) -> poly1d:
        return self

    def __add__(self, other: Any) -> poly1d:
        return polyadd(self, other)

    __radd__ = __add__

    def __sub__(self, other: Any) -> poly1d:
        return polysub(self, other)

    def __rsub__(self, other: Any) -> poly1d:
        return polysub(other, self)

    def __mul__(self, other: Any) -> poly1d:
        return polymul(self, other)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"poly1d({self._coeffs.get()!r})"

    def __str__(self) -> str:
        return str(numpy.poly1d(self._coeffs.get(), variable=self._variable))


def _coeffs(p: Any) -> ndarray:
    return p.coeffs if isinstance(p, poly1d) else asarray(p).reshape(-1) if asarray(p).ndim == 0 else asarray(p)


def polyadd(a1: Any, a2: Any) -> Any:
    x, y = _coeffs(a1), _coeffs(a2)
    from ascend_compat.cupy._creation import zeros

    n = max(x.size, y.size)
    dt = numpy.result_type(x._dtype, y._dtype)
    res = zeros(n, dt)
    res[n - x.size:] = x
    res[n - y.size:] = U.add(res[n - y.size:], y)
    return poly1d(res) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else res


def polysub(a1: Any, a2: Any) -> Any:
    y = _coeffs(a2)
    neg = U.negative(y) if y._dtype.kind != "b" else y
    res = polyadd(_coeffs(a1), neg)
    return poly1d(res) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else res


def polymul(a1: Any, a2: Any) -> Any:
    from ascend_compat.cupy._extra import convolve

    res = convolve(_coeffs(a1), _coeffs(a2))
    return poly1d(res) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else res


__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser", "poly1d", "polyadd", "polymul", "polysub",
           "real_if_close", "unwrap"]
