"""Sorting, searching, counting and set operations."""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import cast_tensor
from ascend_compat.cupy._manipulation import concatenate, normalize_axes, normalize_axis


def _sort_key(a: ndarray) -> torch.Tensor:
    """A tensor that torch orders as NumPy orders ``a`` (unsigned 64-bit and bool handled)."""
    t = a._t
    if a._dtype == _dtypes.UINT64:
        return _dtypes.unsigned_order(t)
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    return t


def _argsort_t(a: ndarray, axis: int) -> torch.Tensor:
    if a._dtype.kind == "c":
        t = a._t
        idx = torch.sort(t.imag, dim=axis, stable=True).indices
        re = torch.gather(t.real, axis, idx)
        return torch.gather(idx, axis, torch.sort(re, dim=axis, stable=True).indices)
    return torch.sort(_sort_key(a), dim=axis, stable=True).indices


def _axis_arr(a: Any, axis: Optional[int]) -> tuple[ndarray, int]:
    a = asarray(a)
    if axis is None:
        return a.ravel(), 0
    if a.ndim == 0:
        raise numpy.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
    return a, normalize_axis(axis, a.ndim)


def sort(a: Any, axis: Optional[int] = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> ndarray:
    a, ax = _axis_arr(a, axis)
    if a._dtype.kind == "c" or a._dtype == _dtypes.UINT64:
        return _wrap(torch.gather(a._t, ax, _argsort_t(a, ax)), a._dtype)
    t = a._t.to(torch.uint8) if a._t.dtype == torch.bool else a._t
    r = torch.sort(t, dim=ax, stable=True).values
    return _wrap(r.bool() if a._t.dtype == torch.bool else r, a._dtype)


def argsort(a: Any, axis: Optional[int] = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> ndarray:
    a = asarray(a)
    if a.ndim == 0 and axis in (-1, 0, None):
        return _wrap(torch.zeros((1,), dtype=torch.int64, device=a._t.device))
    a, ax = _axis_arr(a, axis)
    return _wrap(_argsort_t(a, ax))


def msort(a: Any) -> ndarray:
    return sort(a, 0)


def sort_complex(a: Any) -> ndarray:
    a = asarray(a)
    if a._dtype.kind == "c":
        return sort(a)
    dt = numpy.dtype(numpy.complex64 if a._dtype.char in "bhBH" else numpy.complex128)
    return sort(a.astype(dt))


def lexsort(keys: Any) -> ndarray:
    ks = [asarray(k) for k in keys] if not isinstance(keys, ndarray) else [keys[i] for i in range(keys.shape[0])]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if ks[0].ndim == 0:  # 0-d keys (a 1-d ``keys`` array): one element, index 0
        return _wrap(torch.zeros((), dtype=torch.int64, device=ks[0]._t.device))
    idx = torch.arange(ks[0].shape[-1], device=ks[0]._t.device).expand(ks[0].shape)
    parts: list[ndarray] = []
    for k in ks:  # complex keys sort by imaginary, then real part
        parts += [_wrap(k._t.imag), _wrap(k._t.real)] if k._dtype.kind == "c" else [k]
    for k in parts:  # last key is primary: sort by it last, stably
        kk = torch.gather(_sort_key(k), -1, idx)
        idx = torch.gather(idx, -1, torch.sort(kk, dim=-1, stable=True).indices)
    return _wrap(idx.contiguous())


def partition(a: Any, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None) -> ndarray:
    a = asarray(a)
    _check_kth(a, kth, axis)
    return sort(a, axis)


def argpartition(a: Any, kth: Any, axis: Optional[int] = -1, kind: str = "introselect", order: Any = None) -> ndarray:
    a = asarray(a)
    if axis is not None:
        _check_kth(a, kth, axis)
    return argsort(a, axis)


def _check_kth(a: ndarray, kth: Any, axis: Optional[int]) -> None:
    if a.ndim == 0:
        raise numpy.exceptions.AxisError("Cannot partition a 0-d array")
    n = a.shape[normalize_axis(axis, a.ndim)] if axis is not None else a.size
    for k in numpy.atleast_1d(numpy.asarray(kth)).tolist():
        if not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> ndarray:
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    vv = asarray(v)
    dt = numpy.result_type(a._dtype, vv._dtype)
    at, vt = cast_tensor(a._t, a._dtype, dt), cast_tensor(vv._t, vv._dtype, dt)
    if sorter is not None:
        sorter = asarray(sorter)
        if sorter._dtype.kind not in "iu":
            raise TypeError("sorter must only contain integers")
        if sorter.shape != a.shape:
            raise ValueError("sorter.size must equal a.size")
        at, sorter = at[sorter._t.to(torch.int64)], None
    if dt.kind == "c":  # lexicographic: count the entries ordered before each value
        ge = _lex_le(vt.reshape(-1, 1), at.reshape(1, -1)) if side == "left" else None
        cnt = (~ge).sum(-1) if ge is not None else _lex_le(at.reshape(1, -1), vt.reshape(-1, 1)).sum(-1)
        return _wrap(cnt.reshape(vt.shape))
    if dt.kind == "f":  # NaNs sort last: search the non-NaN prefix, NaN values go past it (or to the end)
        k = int((~torch.isnan(at)).sum())
        r = torch.searchsorted(at[:k].contiguous(), vt.reshape(-1).contiguous(), right=side == "right")
        r = torch.where(torch.isnan(vt.reshape(-1)), at.numel() if side == "right" else k, r)
        return _wrap(r.reshape(vt.shape))
    if at.dtype == torch.bool:
        at, vt = at.to(torch.uint8), vt.to(torch.uint8)
    if dt == _dtypes.UINT64:  # int64 bit patterns: ordered as unsigned through the flipped top bit
        at, vt = _dtypes.unsigned_order(at), _dtypes.unsigned_order(vt)
    srt = None if sorter is None else asarray(sorter)._t.to(torch.int64)
    r = torch.searchsorted(at.contiguous(), vt.reshape(1) if vt.dim() == 0 else vt, right=side == "right",
                           sorter=srt)
    return _wrap(r.reshape(()) if vt.dim() == 0 else r)


def _lex_le(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.real < b.real) | ((a.real == b.real) & (a.imag <= b.imag))


def _run_starts(s: torch.Tensor, equal_nan: bool) -> torch.Tensor:
    first = torch.ones_like(s, dtype=torch.bool)
    if s.numel() > 1:
        diff = s[1:] != s[:-1]
        if equal_nan and (s.is_floating_point() or s.is_complex()):
            nan = torch.isnan(s) if not s.is_complex() else torch.isnan(s.real) | torch.isnan(s.imag)
            diff = diff & ~(nan[1:] & nan[:-1])
        first[1:] = diff
    return first


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Optional[int] = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:
    """The sorted unique elements (or sub-arrays along ``axis``), as NumPy 2 returns them.

    ``sorted=False`` is accepted and still returns them sorted (NumPy allows any order then). Along an axis,
    ``equal_nan`` has no effect, as in NumPy: rows holding NaN are never merged.
    """
    a = asarray(ar)
    if axis is not None:
        return _unique_axis(a, normalize_axis(axis, a.ndim), return_index, return_inverse, return_counts)
    flat = a.ravel()
    perm = _argsort_t(flat, 0)
    s = flat._t[perm]
    first = _run_starts(s, equal_nan)
    res = [_wrap(s[first], a._dtype)]
    if return_index:
        res.append(_wrap(perm[first]))
    if return_inverse:
        inv = torch.empty_like(perm)
        inv[perm] = torch.cumsum(first.to(torch.int64), 0) - 1
        res.append(_wrap(inv.reshape(a.shape)))
    if return_counts:
        res.append(_wrap(_run_lengths(first)))
    return res[0] if len(res) == 1 else tuple(res)


def _run_lengths(first: torch.Tensor) -> torch.Tensor:
    starts = torch.nonzero(first, as_tuple=True)[0]
    return torch.diff(starts, append=torch.tensor([first.numel()], device=first.device))


def _column_ranks(rows: ndarray) -> torch.Tensor:
    """Per column, the rank of each entry in NumPy's sort order; equal values (and all NaNs) share a rank."""
    idx = _argsort_t(rows, 0)
    sv = torch.gather(rows._t, 0, idx)
    same = sv[1:] == sv[:-1]
    if sv.is_complex():  # NumPy's comparison ties NaN with NaN part by part
        re, im = sv.real, sv.imag
        same = ((re[1:] == re[:-1]) | (re[1:].isnan() & re[:-1].isnan())) & \
               ((im[1:] == im[:-1]) | (im[1:].isnan() & im[:-1].isnan()))
    elif sv.is_floating_point():
        same = same | (sv[1:].isnan() & sv[:-1].isnan())
    new = torch.ones_like(sv, dtype=torch.int64)
    new[1:] = (~same).to(torch.int64)
    return torch.empty_like(idx).scatter_(0, idx, torch.cumsum(new, 0) - 1)


def _unique_axis(a: ndarray, ax: int, return_index: bool, return_inverse: bool, return_counts: bool) -> Any:
    t = torch.movedim(a._t, ax, 0)
    n, rest = t.shape[0], tuple(t.shape[1:])
    rows = t.reshape(n, math.prod(rest))
    dev = rows.device
    if n and rows.shape[1]:
        # rows sort lexicographically as NumPy sorts them (as structured scalars): rank each column, then order the
        # rows of integer ranks (torch orders those lexicographically); ties keep their order (NumPy's mergesort)
        groups = torch.unique(_column_ranks(_wrap(rows, a._dtype)), dim=0, return_inverse=True)[1]
        perm = torch.sort(groups, stable=True).indices
    else:
        perm = torch.arange(n, device=dev)
    s = rows[perm]
    first = torch.ones(n, dtype=torch.bool, device=dev)
    if n > 1:
        first[1:] = (s[1:] != s[:-1]).any(1)  # NaN != NaN: rows with NaN stay apart, as in NumPy
    vals = s[first].reshape((int(first.sum()), *rest))
    res = [_wrap(torch.movedim(vals, 0, ax).contiguous(), a._dtype)]
    if return_index:
        res.append(_wrap(perm[first]))
    if return_inverse:
        inv = torch.empty_like(perm)
        inv[perm] = torch.cumsum(first.to(torch.int64), 0) - 1
        res.append(_wrap(inv))
    if return_counts:
        res.append(_wrap(_run_lengths(first)))
    return res[0] if len(res) == 1 else tuple(res)


class UniqueAllResult(NamedTuple):
    values: ndarray
    indices: ndarray
    inverse_indices: ndarray
    counts: ndarray


class UniqueCountsResult(NamedTuple):
    values: ndarray
    counts: ndarray


class UniqueInverseResult(NamedTuple):
    values: ndarray
    inverse_indices: ndarray


def unique_all(x: Any) -> UniqueAllResult:
    """Array API ``unique_all``: values, first indices, inverse (shaped like ``x``) and counts; NaNs kept apart."""
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False))


def unique_inverse(x: Any) -> UniqueInverseResult:
    """Array API ``unique_inverse``."""
    return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False))


def unique_counts(x: Any) -> UniqueCountsResult:
    """Array API ``unique_counts``."""
    return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False))


def unique_values(x: Any) -> ndarray:
    """Array API ``unique_values`` (sorted here; NumPy leaves the order unspecified)."""
    return unique(x, equal_nan=False)  # type: ignore[no-any-return]


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> ndarray:
    """Trim leading (``'f'``) and/or trailing (``'b'``) zeros along ``axis`` (all axes by default), as NumPy 2.2.

    An all-zero array trims to an empty one; a 0-d array (or ``axis=()``) is returned unchanged.
    """
    a = asarray(filt)
    mode = trim.lower() if isinstance(trim, str) else trim
    if mode not in ("fb", "bf", "f", "b"):
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = tuple(range(a.ndim)) if axis is None else normalize_axes(axis, a.ndim)
    if not axes:
        return a
    nz = torch.nonzero(a._t != 0)
    if nz.shape[0] == 0:
        start: list[Optional[int]] = [0] * a.ndim
        stop: list[Optional[int]] = [0] * a.ndim
    else:
        start = nz.min(0).values.tolist() if "f" in mode else [None] * a.ndim
        stop = (nz.max(0).values + 1).tolist() if "b" in mode else [None] * a.ndim
    return a[tuple(slice(start[d], stop[d]) if d in axes else slice(None) for d in range(a.ndim))]


def _common_pair(a: ndarray, b: ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    dt = numpy.result_type(a._dtype, b._dtype)
    return cast_tensor(a._t, a._dtype, dt), cast_tensor(b._t, b._dtype, dt)


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
         kind: Any = None) -> ndarray:
    e, t = asarray(element), asarray(test_elements)
    et, tt = _common_pair(e, t)
    if et.is_complex():
        r = (et.reshape(-1, 1) == tt.reshape(1, -1)).any(1).reshape(et.shape)
    else:
        if et.dtype == torch.bool:
            et, tt = et.to(torch.uint8), tt.to(torch.uint8)
        r = torch.isin(et, tt.reshape(-1))
    return _wrap(~r if invert else r)


def in1d(ar1: Any, ar2: Any, assume_unique: bool = False, invert: bool = False) -> ndarray:
    return isin(asarray(ar1).ravel(), ar2, assume_unique, invert)


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False) -> Any:
    a, b = asarray(ar1).ravel(), asarray(ar2).ravel()
    if return_indices:
        ua, ia = unique(a, return_index=True)
        ub, ib = unique(b, return_index=True)
        keep = isin(ua, ub)
        common = ua[keep]
        pos_b = searchsorted(ub, common)
        return common, ia[keep], ib[pos_b]
    ua = unique(a) if not assume_unique else a
    return ua[isin(ua, b)] if assume_unique else unique(ua[isin(ua, b)])


def union1d(ar1: Any, ar2: Any) -> ndarray:
    return unique(concatenate([asarray(ar1).ravel(), asarray(ar2).ravel()]))


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> ndarray:
    a = asarray(ar1).ravel() if assume_unique else unique(ar1)
    return a[isin(a, ar2, invert=True)]


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> ndarray:
    a = asarray(ar1).ravel() if assume_unique else unique(ar1)
    b = asarray(ar2).ravel() if assume_unique else unique(ar2)
    return sort(concatenate([a[isin(a, b, invert=True)], b[isin(b, a, invert=True)]]))


__all__ = [
    "argpartition",
    "argsort",
    "in1d",
    "intersect1d",
    "isin",
    "lexsort",
    "msort",
    "partition",
    "searchsorted",
    "setdiff1d",
    "setxor1d",
    "sort",
    "sort_complex",
    "trim_zeros",
    "union1d",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]
