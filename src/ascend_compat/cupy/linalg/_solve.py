"""Solvers and inverses: solve, tensorsolve, lstsq, inv, pinv, tensorinv, matrix_power."""

from __future__ import annotations

import math
from typing import Any

import numpy
import torch
from numpy.linalg import LinAlgError

from ascend_compat.cupy import _core, _dtypes
from ascend_compat.cupy._errstate import get_config_linalg
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


def _h(t: torch.Tensor) -> torch.Tensor:
    """Conjugate transpose, materialised: a lazily conjugated view (``.mH``) crashes some backends (simulator)."""
    return torch.conj_physical(t.mT) if t.is_complex() else t.mT


def solve(a: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` (NumPy 2 rule: ``b`` is a vector only when it is 1-D)."""
    a, b = as_array(a), as_array(b)
    assert_stacked_2d(a)
    assert_stacked_square(a)
    compute, res = linalg_common_type(a, b)
    ta, tb = tensor(a, compute), tensor(b, compute)
    if tb.dim() == 0:
        raise ValueError("solve: b must be at least one-dimensional")
    vector = tb.dim() == 1
    if vector:
        tb = tb.unsqueeze(-1)
    if tb.shape[-2] != ta.shape[-1]:
        raise ValueError(f"solve: b has {tb.shape[-2]} rows, a is {ta.shape[-1]}x{ta.shape[-1]}")
    try:
        batch = torch.broadcast_shapes(ta.shape[:-2], tb.shape[:-2])
    except RuntimeError:
        raise ValueError("solve: batch dimensions of a and b do not broadcast") from None
    ta = ta.expand(*batch, *ta.shape[-2:])
    tb = tb.expand(*batch, *tb.shape[-2:])
    with linalg_errors("Singular matrix"):
        if ta.numel() and not tb.numel() and get_config_linalg() == "raise":  # nothing to solve for: a singular
            if bool((torch.linalg.lu_factor_ex(ta).info > 0).any()):  # ``a`` fails only when asked (as in CuPy)
                raise LinAlgError("Singular matrix")
        x = torch.linalg.solve(ta, tb) if ta.numel() and tb.numel() else tb.clone()
    return wrap(x.squeeze(-1) if vector else x, res)


def inv(a: Any) -> Any:
    """Inverse of (stacked) square matrices; LinAlgError when singular."""
    a = square_matrices(a)
    compute, res = linalg_common_type(a)
    with linalg_errors("Singular matrix"):
        return wrap(torch.linalg.inv(tensor(a, compute)), res)


def pinv(a: Any, rcond: Any = 1e-15, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """Moore-Penrose pseudo-inverse (singular values below ``rcond * max(S)`` dropped)."""
    a = as_array(a)
    assert_stacked_2d(a)
    compute, res = linalg_common_type(a)
    t = tensor(a, compute)
    if t.numel() == 0:  # NumPy: empty matrices keep the input's dtype, an empty stack of matrices gets ``res``
        dt = a.dtype if 0 in t.shape[-2:] else res
        return wrap(t.new_zeros(*t.shape[:-2], t.shape[-1], t.shape[-2]), dt)
    r = rtol if rtol is not None else rcond
    r = _core._unwrap(r).to(torch.float64) if isinstance(r, _core.ndarray) else torch.as_tensor(r, dtype=torch.float64)
    u, s, vh = torch.linalg.svd(t, full_matrices=False)
    cutoff = r.to(s.device, s.dtype)[..., None] * s.amax(-1, keepdim=True)
    s_inv = torch.where(s > cutoff, 1 / s, torch.zeros_like(s))
    return wrap(_h(vh) @ (s_inv[..., None].to(u.dtype) * _h(u)), res)


def lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
    """Least squares ``(x, residuals, rank, s)`` of ``a @ x = b`` for a 2-D ``a``."""
    a, b = as_array(a), as_array(b)
    if a.ndim != 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if b.ndim not in (1, 2):
        raise LinAlgError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
    m, n = a.shape
    if b.shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    compute, res = linalg_common_type(a, b)
    ta, tb = tensor(a, compute), tensor(b, compute)
    tb2 = tb.reshape(m, 1) if b.ndim == 1 else tb
    if rcond is None:
        rcond = numpy.finfo(real_dtype(compute)).eps * max(m, n)
    u, s, vh = torch.linalg.svd(ta, full_matrices=False)
    cutoff = rcond * (s.max() if s.numel() else 0)
    keep = s > cutoff
    rank = int(keep.sum())
    s_inv = torch.where(keep, 1 / s, torch.zeros_like(s)).to(u.dtype)
    x = _h(vh) @ (s_inv[:, None] * (_h(u) @ tb2))
    if rank == n and m > n:
        resid = ((tb2 - ta @ x).abs() ** 2).sum(0)
        resid = resid.reshape(()) if b.ndim == 1 else resid
        resid = resid.reshape(1) if b.ndim == 1 else resid
    else:
        resid = torch.empty(0, dtype=s.dtype, device=s.device)
    x = x.reshape(n) if b.ndim == 1 else x.reshape(n, b.shape[1])
    rank_t = torch.tensor(rank, dtype=torch.int32, device=s.device)  # NumPy returns an int32 scalar
    return wrap(x, res), wrap(resid, real_dtype(res)), wrap(rank_t, numpy.dtype(numpy.int32)), \
        wrap(s, real_dtype(res))


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """Solve the tensor equation ``tensordot(a, x, x.ndim) = b``."""
    a, b = as_array(a), as_array(b)
    t = a._t
    if axes is not None:
        axes = [int(i) % a.ndim for i in axes]
        order = [i for i in range(a.ndim) if i not in axes] + axes
        t = t.permute(order)
    shape = tuple(t.shape)
    out_shape = shape[b.ndim:]
    prod = math.prod(out_shape)
    if math.prod(shape[:b.ndim]) != prod:
        raise LinAlgError("Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    a2 = _core._wrap(t.reshape(prod, prod), dtype=a.dtype)
    x = solve(a2, _core._wrap(b._t.reshape(prod), dtype=b.dtype))
    return _core._wrap(x._t.reshape(out_shape), dtype=x.dtype)


def tensorinv(a: Any, ind: int = 2) -> Any:
    """Inverse of an N-d array for ``tensordot`` with ``ind`` leading axes."""
    a = as_array(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    old = tuple(a.shape)
    prod = math.prod(old[:ind])
    inv_shape = old[ind:] + old[:ind]
    if math.prod(old[ind:]) != prod:
        raise LinAlgError("tensorinv: a is not 'square' over its first ind axes")
    x = inv(_core._wrap(a._t.reshape(prod, -1), dtype=a.dtype))
    return _core._wrap(x._t.reshape(inv_shape), dtype=x.dtype)


def matrix_power(M: Any, n: Any) -> Any:  # noqa: N803 - NumPy's name
    """``M`` raised to the integer power ``n`` (integers stay integers for ``n >= 0``)."""
    m = as_array(M)
    assert_stacked_2d(m)
    assert_stacked_square(m)
    try:
        n = int(numpy.asarray(n).item()) if numpy.asarray(n).dtype.kind in "iub" else None
    except (TypeError, ValueError):
        n = None
    if n is None:
        raise TypeError("exponent must be an integer")
    if n < 0:
        m, n = inv(m), -n
    dt = m.dtype
    compute = _dtypes.INT64 if dt == _dtypes.BOOL else dt
    t = _dtypes.cast_tensor(m._t, dt, compute)
    result = torch.eye(t.shape[-1], dtype=t.dtype, device=t.device).expand_as(t).clone()
    base = t
    while n:
        if n & 1:
            result = result @ base
        n >>= 1
        if n:
            base = base @ base
    if dt == _dtypes.BOOL:
        result = result != 0
    return _core._wrap(result.contiguous(), dtype=dt)
