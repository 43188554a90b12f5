"""``cupy.polynomial.polynomial``: ``polyvander`` and ``polycompanion`` (coefficients lowest power first)."""

from __future__ import annotations

import operator
from typing import Any

from ascend_compat.cupy import _ufuncs
from ascend_compat.cupy._core import asarray, ndarray
from ascend_compat.cupy.polynomial.polyutils import as_series

U: Any = _ufuncs  # its ufuncs are made at import time: typed as Any


def polyvander(x: Any, deg: Any) -> ndarray:
    """The Vandermonde matrix ``V[..., i] = x**i`` for ``i <= deg`` (shape ``x.shape + (deg + 1,)``)."""
    try:
        ideg = operator.index(deg)
    except TypeError:
        raise TypeError(f"deg must be an integer, got {deg!r}") from None
    if ideg < 0:
        raise ValueError("deg must be non-negative")
    from ascend_compat.cupy._manipulation import moveaxis, stack

    xa = asarray(x)
    xa = U.add(xa.reshape(1) if xa.ndim == 0 else xa, 0.0)
    cols = [U.add(U.multiply(xa, 0), 1)]
    if ideg > 0:
        cols.append(xa)
        for _ in range(2, ideg + 1):  # successive products, as NumPy computes them
            cols.append(U.multiply(cols[-1], xa))
    return moveaxis(stack(cols), 0, -1)  # NumPy's layout: powers outermost in memory


def polycompanion(c: Any) -> ndarray:
    """The companion matrix of the power series ``c`` (its eigenvalues are the series' roots)."""
    [a] = as_series([c])
    if a.size < 2:
        raise ValueError("Series must have maximum degree of at least 1.")
    if a.size == 2:
        return U.negative(a[0] / a[1]).reshape(1, 1)
    from ascend_compat.cupy._creation import zeros

    n = a.size - 1
    mat = zeros((n, n), dtype=a.dtype)
    mat.reshape(-1)[n::n + 1] = 1
    mat[:, -1] -= a[:-1] / a[-1]
    return mat


__all__ = ["polycompanion", "polyvander"]
