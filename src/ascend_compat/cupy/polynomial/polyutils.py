"""``cupy.polynomial.polyutils``: ``as_series``, ``trimseq`` and ``trimcoef`` (coefficients lowest power first)."""

from __future__ import annotations

from typing import Any

import numpy
import torch

from ascend_compat.cupy import _ufuncs
from ascend_compat.cupy._core import asarray, ndarray

U: Any = _ufuncs  # its ufuncs are made at import time: typed as Any


def trimseq(seq: ndarray) -> ndarray:
    """``seq`` without trailing zeros (a view; its first element when all are zero)."""
    if seq.ndim == 0:
        raise TypeError("len() of unsized object")
    if seq.ndim > 1:
        raise ValueError("The truth value of an array with more than one element is ambiguous.")
    if seq.size <= 1:
        return seq
    nz = torch.nonzero(seq._t != 0).reshape(-1)
    last = int(nz[-1]) if nz.numel() else 0
    return seq if last == seq.size - 1 else seq[:last + 1]


def _common_type(arrays: list[ndarray]) -> numpy.dtype:
    try:  # NumPy's rule (integers -> float64, float16 kept), asked of empty host arrays of the same dtypes
        return numpy.dtype(numpy.common_type(*[numpy.empty(0, a.dtype) for a in arrays]))
    except TypeError as exc:
        raise ValueError("Coefficient arrays have no common type") from exc


def as_series(alist: Any, trim: bool = True) -> list[ndarray]:
    """A list of 1-D coefficient arrays of one common inexact type (a 1-D array gives one series per element,
    a 2-D array one per row)."""
    if isinstance(alist, ndarray):
        if alist.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        arrays = [alist[i:i + 1] if alist.ndim == 1 else alist[i] for i in range(alist.shape[0])]
    else:
        arrays = [asarray(a) for a in alist]
        arrays = [a.reshape(1) if a.ndim == 0 else a for a in arrays]
    for a in arrays:
        if a.size == 0:
            raise ValueError("Coefficient array is empty")
        if a.ndim != 1:
            raise ValueError("Coefficient array is not 1-d")
    if trim:
        arrays = [trimseq(a) for a in arrays]
    dtype = _common_type(arrays)
    return [a.astype(dtype, copy=True) for a in arrays]


def trimcoef(c: Any, tol: Any = 0) -> ndarray:
    """``c`` without trailing coefficients of absolute value ``<= tol`` (``[0]`` when none is left)."""
    if tol < 0:
        raise ValueError("tol must be non-negative")
    [a] = as_series([c])
    keep = torch.nonzero(U.greater(U.absolute(a), tol)._t).reshape(-1)
    if keep.numel() == 0:
        return a[:1] * 0
    return a[:int(keep[-1]) + 1].copy()


__all__ = ["as_series", "trimcoef", "trimseq"]
