"""The ``numpy.lib`` polynomial API on device arrays: ``poly1d``, ``poly``, ``polyadd``/``polysub``/``polymul``,
``polyval``, ``polyfit`` and ``roots``.

Result types and values follow NumPy (Horner's rule for ``polyval``, NumPy's scaled least squares for ``polyfit``,
companion-matrix eigenvalues for ``roots``). Where CuPy refuses general (non-Hermitian) companion matrices in
``poly``/``roots``, this module computes them with the general eigenvalue solver, as NumPy does.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy
import torch

from ascend_compat.cupy import _ufuncs
from ascend_compat.cupy._core import _wrap, asarray, ndarray

U: Any = _ufuncs  # its ufuncs are made at import time: typed as Any


def _isscalar(x: Any) -> bool:
    return bool(numpy.isscalar(x))


def _1d(x: Any) -> ndarray:
    a = asarray(x)
    return a.reshape(1) if a.ndim == 0 else a


def _coeffs(x: Any) -> ndarray:
    """The coefficient vector of a poly1d, a scalar or a 1-D array (highest power first)."""
    if isinstance(x, poly1d):
        return x.coeffs
    if isinstance(x, ndarray) or numpy.isscalar(x):
        a = _1d(x)
        if a.ndim != 1:
            raise ValueError("Multidimensional inputs are not supported")
        return a
    if isinstance(x, numpy.poly1d):
        return asarray(x.coeffs)
    raise TypeError(f"Unsupported type {type(x)}: a poly1d, a scalar or an ndarray is expected")


def _trim_leading(c: ndarray) -> ndarray:
    """``c`` without its leading zeros; ``[0]`` (of ``c``'s dtype) when nothing is left."""
    nz = torch.nonzero(c._t != 0)
    if nz.numel() == 0:
        return asarray([0], dtype=c.dtype)
    first = int(nz[0])
    return c[first:] if first else c


def _front_pad(c: ndarray, n: int) -> ndarray:
    if c.size == n:
        return c
    from ascend_compat.cupy._creation import zeros
    from ascend_compat.cupy._manipulation import concatenate

    return concatenate((zeros(n - c.size, c.dtype), c))


def _binary(a1: Any, a2: Any, op: Any) -> Any:
    c1, c2 = _coeffs(a1), _coeffs(a2)
    n = max(c1.size, c2.size)
    val = op(_front_pad(c1, n), _front_pad(c2, n))
    return poly1d(val) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else val


def polyadd(a1: Any, a2: Any) -> Any:
    """The sum of two polynomials (a poly1d when either input is one)."""
    return _binary(a1, a2, U.add)


def polysub(a1: Any, a2: Any) -> Any:
    """The difference of two polynomials (a poly1d when either input is one)."""
    return _binary(a1, a2, U.subtract)


def polymul(a1: Any, a2: Any) -> Any:
    """The product of two polynomials (a poly1d when either input is one)."""
    from ascend_compat.cupy._extra import convolve

    val = convolve(_trim_leading(_coeffs(a1)), _trim_leading(_coeffs(a2)))
    return poly1d(val) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else val


def polyval(p: Any, x: Any) -> Any:
    """``p`` evaluated at ``x`` by Horner's rule (a poly1d ``x`` gives the composed poly1d)."""
    if isinstance(p, poly1d):
        p = p.coeffs
    if not isinstance(p, ndarray) or p.ndim == 0:
        raise TypeError("p must be 1d ndarray or poly1d object")
    if p.ndim > 1:
        raise ValueError("p must be 1d array")
    if isinstance(x, poly1d):
        y: Any = 0  # NumPy's start: 0 * x makes the first partial result (bool coefficients become int64)
        for i in range(p.size):
            y = y * x + p[i]
        return y
    xa = asarray(x)
    from ascend_compat.cupy._creation import zeros_like

    y = zeros_like(xa)
    for i in range(p.size):
        y = U.add(U.multiply(y, xa), p[i])
    return y


def _pow(c: ndarray, n: int) -> ndarray:
    from ascend_compat.cupy._extra import convolve

    res: Any = asarray([1])
    base = c
    while n:  # square-and-multiply: log2(n) convolutions
        if n & 1:
            res = convolve(base, res)
        n >>= 1
        if n:
            base = convolve(base, base)
    return res


class poly1d:  # noqa: N801 (NumPy's name)
    """A one-dimensional polynomial with device coefficients (highest power first)."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, c_or_r: Any, r: bool = False, variable: Any = None) -> None:
        if isinstance(c_or_r, (poly1d, numpy.poly1d)):
            self._raw = asarray(c_or_r.coeffs)
            self._trimmed = True
            self._variable = variable or c_or_r.variable
            return
        if r:
            c_or_r = poly(c_or_r)
        c = _1d(c_or_r)
        if c.ndim > 1:
            raise ValueError("Polynomial must be 1d only.")
        self._raw, self._trimmed, self._variable = c, False, variable or "x"

    @property
    def coeffs(self) -> ndarray:
        if not self._trimmed:  # trimmed on first use, so building a poly1d does not wait for the device
            self._raw, self._trimmed = _trim_leading(self._raw), True
        return self._raw

    @coeffs.setter
    def coeffs(self, value: Any) -> None:
        if value is not self.coeffs:
            raise AttributeError("Cannot set attribute")

    c = coef = coefficients = coeffs
    variable = property(lambda self: self._variable)
    order = property(lambda self: self.coeffs.size - 1)
    o = order
    roots = property(lambda self: roots(self.coeffs))
    r = roots

    def __cupy_get_ndarray__(self) -> ndarray:
        return self.coeffs

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def get(self, stream: Any = None) -> numpy.poly1d:
        """A host ``numpy.poly1d`` copy."""
        c = self.coeffs
        # .view keeps the dtype's spelling (longlong prints as "dtype=int64" in NumPy's repr, int64 does not)
        return numpy.poly1d(c.get().view(c.dtype), variable=self._variable)

    def set(self, polyin: Any, stream: Any = None) -> None:
        """Copy a host ``numpy.poly1d`` into this polynomial."""
        if not isinstance(polyin, numpy.poly1d):
            raise TypeError("Only numpy.poly1d can be set to cupy.poly1d")
        self._raw, self._trimmed, self._variable = asarray(polyin.coeffs), True, polyin.variable

    def __repr__(self) -> str:
        return repr(self.get())

    def __str__(self) -> str:
        return str(self.get())

    def __len__(self) -> int:
        return self.order

    def __iter__(self) -> Any:
        return iter(self.coeffs)

    def __call__(self, val: Any) -> Any:
        return polyval(self.coeffs, val)

    def __neg__(self) -> poly1d:
        return poly1d(U.negative(self.coeffs))

    def __pos__(self) -> poly1d:
        return self

    def __add__(self, other: Any) -> poly1d:
        return polyadd(self, other)

    def __radd__(self, other: Any) -> poly1d:
        return polyadd(other, self)

    def __sub__(self, other: Any) -> poly1d:
        return polysub(self, other)

    def __rsub__(self, other: Any) -> poly1d:
        return polysub(other, self)

    def __mul__(self, other: Any) -> poly1d:
        if _isscalar(other):
            return poly1d(U.multiply(self.coeffs, other))
        return polymul(self, other)

    def __rmul__(self, other: Any) -> poly1d:
        if _isscalar(other):
            return poly1d(U.multiply(other, self.coeffs))
        return polymul(other, self)

    def __truediv__(self, other: Any) -> poly1d:
        if _isscalar(other):
            return poly1d(U.true_divide(self.coeffs, other))
        raise NotImplementedError("division by a polynomial (polydiv) is not supported")

    def __pow__(self, val: Any) -> poly1d:
        if not _isscalar(val) or int(val) != val or val < 0:
            raise ValueError("Power to non-negative integers only.")
        if not isinstance(val, numbers.Integral):
            raise TypeError(f"'{type(val).__name__}' object cannot be interpreted as an integer")
        if val == 0:
            return poly1d(asarray([1]))
        c = self.coeffs
        return poly1d(_pow(c.astype(numpy.result_type(c.dtype, numpy.int64), copy=False), int(val)))

    def __eq__(self, other: object) -> Any:
        if not isinstance(other, poly1d):
            return NotImplemented
        a, b = self.coeffs, other.coeffs
        return a.shape == b.shape and bool(U.equal(a, b).all())

    def __ne__(self, other: object) -> Any:
        if not isinstance(other, poly1d):
            return NotImplemented
        return not self.__eq__(other)

    def __getitem__(self, val: int) -> Any:
        c = self.coeffs
        if val < 0 or val > self.order:
            return c.dtype.type(0)
        return c[self.order - val]

    def __setitem__(self, key: int, val: Any) -> None:
        if key < 0:
            raise ValueError("Does not support negative powers.")
        c = self.coeffs
        if key > self.order:
            c = _front_pad(c, key + 1)
        c[c.size - 1 - key] = val
        self._raw = c

    def integ(self, m: int = 1, k: Any = 0) -> poly1d:
        raise NotImplementedError("poly1d.integ is not supported")

    def deriv(self, m: int = 1) -> poly1d:
        raise NotImplementedError("poly1d.deriv is not supported")


def _eigvals(a: ndarray) -> ndarray:
    """Eigenvalues as NumPy returns them: real for a real matrix whose eigenvalues are all real."""
    from ascend_compat.cupy import linalg

    w = linalg.eigvals(a)
    if a.dtype.kind != "c" and not bool((w.imag != 0).any()):
        return w.real.copy()
    return w


def poly(seq_of_zeros: Any) -> Any:
    """The coefficients of the monic polynomial with the given roots (or a square matrix's eigenvalues)."""
    x = _1d(seq_of_zeros)
    if x.ndim == 2 and x.shape[0] == x.shape[1] and x.shape[0] != 0:
        x = _eigvals(x)
    elif x.ndim == 1:
        x = x.astype(numpy.mintypecode(x.dtype.char), copy=False)
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if x.size == 0:
        return 1.0
    from ascend_compat.cupy._creation import zeros
    from ascend_compat.cupy._manipulation import concatenate

    zero = zeros(1, x.dtype)
    a = asarray([1], dtype=x.dtype)
    for i in range(x.size):  # multiply by (t - x[i]), in NumPy's order of operations
        a = U.subtract(concatenate((a, zero)), U.multiply(x[i], concatenate((zero, a))))
    if a.dtype.kind == "c":
        r = numpy.sort(x.get().astype(complex))
        if numpy.all(r == numpy.sort(r.conjugate())):
            a = a.real.copy()
    return a


def roots(p: Any) -> ndarray:
    """The roots of the polynomial with coefficients ``p`` (eigenvalues of its companion matrix)."""
    if isinstance(p, poly1d):
        p = p.coeffs
    a = asarray(p)
    if a.ndim == 0:
        raise TypeError("0-dimensional input is not allowed")
    if a.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    from ascend_compat.cupy._creation import zeros
    from ascend_compat.cupy._manipulation import concatenate

    nz = torch.nonzero(a._t != 0).reshape(-1)
    if nz.numel() == 0:
        return zeros(0, numpy.float64)
    lo, hi = int(nz[0]), int(nz[-1])
    trailing = a.size - hi - 1
    c = a[lo:hi + 1]
    if c.dtype.kind not in "fc":
        c = c.astype(numpy.float64)
    n = c.size
    if n > 1:
        comp = _wrap(torch.diag(torch.ones(n - 2, dtype=c._t.dtype, device=c._t.device), -1), c.dtype)
        comp[0, :] = U.negative(c[1:]) / c[0]
        r = _eigvals(comp)
    else:
        r = zeros(0, numpy.float64)
    return concatenate((r, zeros(trailing, r.dtype))) if trailing else r


def polyfit(x: Any, y: Any, deg: Any, rcond: Any = None, full: bool = False, w: Any = None,
            cov: Any = False) -> Any:
    """Least-squares polynomial fit of degree ``deg`` (NumPy's algorithm: scaled Vandermonde matrix, ``lstsq``)."""
    from ascend_compat.cupy import linalg
    from ascend_compat.cupy._creation import vander
    from ascend_compat.cupy._linalg_top import matmul
    from ascend_compat.cupy._reduction import sum as _sum

    order = int(deg) + 1
    xa, ya = U.add(asarray(x), 0.0), U.add(asarray(y), 0.0)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if xa.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if xa.size == 0:
        raise TypeError("expected non-empty vector for x")
    if ya.ndim < 1 or ya.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xa.shape[0] != ya.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(xa) * numpy.finfo(xa.dtype).eps
    lhs, rhs = vander(xa, order), ya
    if w is not None:
        wa = U.add(asarray(w), 0.0)
        if wa.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if wa.shape[0] != ya.shape[0]:
            raise TypeError("expected w and y to have the same length")
        U.multiply(lhs, wa[:, None], out=lhs)
        U.multiply(rhs, wa[:, None] if rhs.ndim == 2 else wa, out=rhs)
    scale = U.sqrt(_sum(U.multiply(lhs, lhs), axis=0))
    U.true_divide(lhs, scale, out=lhs)
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if int(rank) != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", numpy.exceptions.RankWarning, stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    vbase = linalg.inv(matmul(lhs.T, lhs))
    vbase = U.true_divide(vbase, U.multiply(scale[:, None], scale[None, :]))
    if cov == "unscaled":
        fac: Any = 1
    else:
        if len(xa) <= order:
            raise ValueError("the number of data points must exceed order to scale the covariance matrix")
        fac = resids / (len(xa) - order)
    return c, (vbase * fac if ya.ndim == 1 else vbase[:, :, None] * fac)


__all__ = ["poly", "poly1d", "polyadd", "polyfit", "polymul", "polysub", "polyval", "roots"]
