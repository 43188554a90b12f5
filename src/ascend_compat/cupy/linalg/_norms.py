"""Norms and determinants: norm, cond, det, slogdet, matrix_rank (torch.linalg underneath)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy
import torch
from numpy.lib.array_utils import normalize_axis_index
from numpy.linalg import LinAlgError

from ascend_compat.cupy.linalg._util import (
    as_array,
    assert_stacked_2d,
    assert_stacked_square,
    linalg_common_type,
    linalg_errors,
    real_dtype,
    square_matrices,
    tensor,
    wrap,
)

_MATRIX_ORDS = (None, "fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def _axes(axis: Any, ndim: int) -> Optional[tuple[int, ...]]:
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, numpy.integer)) else tuple(axis)
    norm_axes = tuple(normalize_axis_index(int(i), ndim) for i in axes)
    if len(set(norm_axes)) != len(norm_axes):
        raise ValueError("Duplicate axes given.")
    return norm_axes


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm, as ``numpy.linalg.norm`` (integers in float64, float16 kept)."""
    x = as_array(x)
    res = x.dtype if x.dtype.kind in "fc" else numpy.dtype(numpy.float64)
    out_dtype = real_dtype(res)
    compute = numpy.dtype(numpy.float32) if res == numpy.float16 else res
    t = tensor(x, compute)
    axes = _axes(axis, x.ndim)
    if axes is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2):
            r = torch.linalg.vector_norm(t, dim=None, keepdim=keepdims) if not keepdims else \
                torch.linalg.vector_norm(t.reshape(-1), 2).reshape([1] * x.ndim)
            return wrap(r, out_dtype)
        if x.ndim not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axes = tuple(range(x.ndim))
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        p = 2 if ord is None else float(ord)
        return wrap(torch.linalg.vector_norm(t, p, dim=axes, keepdim=keepdims), out_dtype)
    if len(axes) == 2:
        if ord not in _MATRIX_ORDS:
            raise ValueError("Invalid norm order for matrices.")
        with linalg_errors("norm"):
            r = torch.linalg.matrix_norm(t, "fro" if ord is None else ord, dim=axes, keepdim=keepdims)
        return wrap(r, out_dtype)
    raise ValueError("Improper number of dimensions to norm.")


def cond(x: Any, p: Any = None) -> Any:
    """Condition number."""
    x = as_array(x)
    assert_stacked_2d(x)
    if x.size == 0:
        raise LinAlgError("cond is not defined on empty arrays")
    compute, res = linalg_common_type(x)
    if p not in (None, 2, -2):
        assert_stacked_square(x)
    t = tensor(x, compute)
    with linalg_errors("cond"):
        r = torch.linalg.cond(t, p)
    # NumPy: a NaN from a singular matrix (0/0) is infinite unless the input itself holds NaNs
    r = torch.where(r.isnan() & ~t.isnan().any(-1).any(-1), torch.full_like(r, math.inf), r)
    return wrap(r, real_dtype(res))


def det(a: Any) -> Any:
    """Determinant of (stacked) square matrices."""
    a = square_matrices(a)
    compute, res = linalg_common_type(a)
    return wrap(torch.linalg.det(tensor(a, compute)), res)


def slogdet(a: Any) -> Any:
    """(sign, log|det|) of (stacked) square matrices."""
    a = square_matrices(a)
    compute, res = linalg_common_type(a)
    sign, logabs = torch.linalg.slogdet(tensor(a, compute))
    return wrap(sign, res), wrap(logabs, real_dtype(res))


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:  # noqa: N803
    """Rank by SVD: singular values above ``tol`` (default ``S.max() * max(M, N) * eps``)."""
    a = as_array(A)
    if a.ndim < 2:
        return wrap((a._t != 0).any().to(torch.int64), numpy.dtype(numpy.int64))
    compute, _ = linalg_common_type(a)
    t = tensor(a, compute)
    s = torch.linalg.svdvals(t)
    if tol is None:
        eps = numpy.finfo(real_dtype(compute)).eps
        if rtol is not None:
            eps = rtol
        tol_t = s.amax(-1, keepdim=True) * (max(a.shape[-2:]) * eps if rtol is None else eps) \
            if s.shape[-1] else s.new_zeros(*s.shape[:-1], 1)
    else:
        tol_t = torch.as_tensor(tol.get() if hasattr(tol, "get") else tol, dtype=s.dtype, device=s.device)
        tol_t = tol_t[..., None] if tol_t.dim() else tol_t
    return wrap((s > tol_t).sum(-1), numpy.dtype(numpy.int64))
