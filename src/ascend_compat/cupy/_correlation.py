"""Covariance and correlation coefficients (``cov``, ``corrcoef``) with NumPy's dtype rules, checks and warnings,
written on the package's own array functions so casting and errors are the ufuncs'."""

from __future__ import annotations

import warnings
from typing import Any

import numpy

from ascend_compat.cupy._core import asarray, ndarray

__all__ = ["corrcoef", "cov"]


def _as_2d(x: Any, dtype: numpy.dtype) -> Any:
    x = x.astype(dtype, copy=True)
    return x.reshape(1, -1) if x.ndim < 2 else x


def _weights(w: Any, n: int, name: str, integral: bool) -> Any:
    if w is None:
        return None
    if isinstance(w, numpy.ndarray):
        raise TypeError(f"Unsupported type {type(w)} for {name}: use cupy.asarray first")
    wa: Any = asarray(w)
    wa = wa.astype(numpy.float64)
    if integral and not bool((wa._t == wa._t.round()).all()):
        raise TypeError(f"{name} must be integer")
    if wa.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if wa.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if bool((wa._t < 0).any()):
        raise ValueError(f"{name} cannot be negative")
    return wa


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None, fweights: Any = None,
        aweights: Any = None, *, dtype: Any = None) -> ndarray:
    """Covariance matrix of the variables in the rows (``rowvar=True``) or columns of ``m`` (and ``y``)."""
    import ascend_compat.cupy as cp

    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = asarray(m)
    w: Any
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    ya = None if y is None else asarray(y)
    if ya is not None and ya.ndim > 2:
        raise ValueError("y has more than 2 dimensions")
    dt = numpy.dtype(dtype) if dtype is not None else numpy.result_type(
        *([m.dtype] if ya is None else [m.dtype, ya.dtype]), numpy.float64)
    x = _as_2d(m, dt)
    if not rowvar and m.ndim != 1:
        x = x.T
    if x.shape[0] == 0:
        return asarray(numpy.empty((0, 0)))
    if ya is not None:
        y2 = _as_2d(ya, dt)
        x = cp.concatenate((x, y2.T if not rowvar and y2.shape[0] != 1 else y2), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = _weights(fweights, x.shape[1], "fweights", True)
    aw = _weights(aweights, x.shape[1], "aweights", False)
    if aw is not None:
        w = aw if w is None else w * aw
    avg, w_sum = cp.average(x, axis=1, weights=w, returned=True)
    total = float(w_sum[0]._t.real)
    if w is None:
        fact = x.shape[1] - ddof
    elif ddof == 0:
        fact = total
    elif aw is None:
        fact = total - ddof
    else:
        fact = total - ddof * float((w * aw).sum()._t) / total
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    x -= avg[:, None]
    x_t = x.T if w is None else (x * w).T
    c = cp.dot(x, x_t.conj())
    with numpy.errstate(divide="ignore"):
        c *= numpy.true_divide(1, fact)
    return c.squeeze()


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> ndarray:
    """Pearson correlation coefficients (``cov`` normalised by the standard deviations, clipped to [-1, 1])."""
    import ascend_compat.cupy

    cp: Any = ascend_compat.cupy
    c: Any = cov(x, y, rowvar, dtype=dtype)  # Any: ndarray's operators are attached at import (see _methods)
    if c.ndim == 0:  # a single variable: nan for a degenerate variance, 1 otherwise
        return c / c
    stddev = cp.sqrt(c.diagonal().real)
    c /= stddev[:, None]
    c /= stddev[None, :]
    if c.dtype.kind == "c":  # real and imaginary parts clipped separately, as NumPy does
        c.real = cp.clip(c.real, -1, 1)
        c.imag = cp.clip(c.imag, -1, 1)
        return c
    return cp.clip(c, -1, 1)
