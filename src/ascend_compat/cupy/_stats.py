"""NaN-aware reductions, order statistics, averages, and the ufunc ``reduce``/``accumulate``/``at`` methods."""

from __future__ import annotations

import warnings
from typing import Any, Literal, cast

import numpy
import torch

from ascend_compat.cupy import _reduction as R  # noqa: N812
from ascend_compat.cupy import _ufuncs
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._correlation import corrcoef, cov
from ascend_compat.cupy._dtypes import UINT64, cast_tensor, storage_dtype, to_numpy_dtype, unsigned_order
from ascend_compat.cupy._histogram import bincount, digitize, histogram, histogram2d, histogramdd
from ascend_compat.cupy._manipulation import moveaxis, normalize_axes, normalize_axis

_QuantileMethod = Literal["linear", "lower", "higher", "midpoint", "nearest"]


def _nan_filled(a: Any, fill: float) -> ndarray:
    a = asarray(a)
    if a._dtype.kind not in "fc":
        return a
    t = a._t
    nan = torch.isnan(t) if not t.is_complex() else (torch.isnan(t.real) | torch.isnan(t.imag))
    return _wrap(torch.where(nan, torch.tensor(fill, dtype=t.dtype, device=t.device), t), a._dtype)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
           initial: Any = None, where: Any = True) -> ndarray:
    return R.sum(_nan_filled(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
            initial: Any = None, where: Any = True) -> ndarray:
    return R.prod(_nan_filled(a, 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(a: Any, axis: Any, out: Any, keepdims: bool, big: float, fn: Any) -> ndarray:
    a = asarray(a)
    if a._dtype.kind not in "fc":
        return fn(a, axis, out, keepdims)
    r = fn(_nan_filled(a, big), axis, None, keepdims)
    allnan = R.all(isnan_(a), axis, None, keepdims)
    if bool(allnan._t.any()):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        r._t = torch.where(allnan._t, torch.tensor(float("nan"), dtype=r._t.dtype, device=r._t.device), r._t)
    return R._finish(r._t, r._dtype, out, r._dtype)


def isnan_(a: ndarray) -> ndarray:
    t = a._t
    return _wrap(torch.isnan(t) if not t.is_complex() else torch.isnan(t.real) | torch.isnan(t.imag))


def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> ndarray:
    return _nan_extreme(a, axis, out, keepdims, float("-inf"), R.amax)


def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> ndarray:
    return _nan_extreme(a, axis, out, keepdims, float("inf"), R.amin)


def nanargmax(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> ndarray:
    a = asarray(a)
    if a._dtype.kind in "fc" and bool(R.all(isnan_(a), axis)._t.any()):
        raise ValueError("All-NaN slice encountered")
    return R.argmax(_nan_filled(a, float("-inf")), axis, None, out, keepdims=keepdims)


def nanargmin(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> ndarray:
    a = asarray(a)
    if a._dtype.kind in "fc" and bool(R.all(isnan_(a), axis)._t.any()):
        raise ValueError("All-NaN slice encountered")
    return R.argmin(_nan_filled(a, float("inf")), axis, None, out, keepdims=keepdims)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> ndarray:
    a = asarray(a)
    if a._dtype.kind not in "fc":
        return R.mean(a, axis, dtype, out, keepdims)
    s = R.sum(_nan_filled(a, 0), axis, dtype, None, keepdims)
    n = R.sum(_wrap(~isnan_(a)._t), axis, None, None, keepdims)
    r = s._t / n._t
    return R._finish(r.to(s._t.dtype), s._dtype, out, s._dtype)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: bool = False) -> ndarray:
    a = asarray(a)
    if a._dtype.kind not in "fc":
        return R.var(a, axis, dtype, out, ddof, keepdims)
    axes = normalize_axes(axis, a.ndim)
    valid = ~isnan_(a)._t
    t = torch.where(valid, a._t, torch.zeros_like(a._t))
    n = valid.sum(dim=axes, keepdim=True) if axes else valid.to(torch.int64)
    m = t.sum(dim=axes, keepdim=True) / n if axes else t
    d = torch.where(valid, (t - m).abs() ** 2, torch.zeros((), dtype=t.real.dtype, device=t.device))
    r = (d.sum(dim=axes, keepdim=keepdims) if axes else d) / (
        (n if keepdims or not axes else n.reshape(d.sum(dim=axes).shape)) - ddof).clamp(min=0)
    dt = R.result_dtype(numpy.nanvar, a._dtype, dtype=dtype)
    return R._finish(r, dt, out, to_numpy_dtype(r.dtype))


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: bool = False) -> ndarray:
    v = nanvar(a, axis, dtype, None, ddof, keepdims)
    return R._finish(torch.sqrt(v._t), v._dtype, out, v._dtype)


def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> ndarray:
    return R.cumsum(_nan_filled(a, 0), axis, dtype, out)


def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> ndarray:
    return R.cumprod(_nan_filled(a, 1), axis, dtype, out)


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> ndarray:
    return _ufuncs.subtract(R.amax(a, axis, None, keepdims), R.amin(a, axis, None, keepdims), out=out)


def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> ndarray:
    a = asarray(a)
    return R.sum(_wrap(a._t != 0), axis, numpy.int64, None, keepdims)


def _to_last(a: ndarray, axis: Any) -> tuple[torch.Tensor, tuple[int, ...]]:
    """The values with the reduced axes flattened into the last dimension, and the kept shape."""
    axes = normalize_axes(axis, a.ndim)
    keep = [i for i in range(a.ndim) if i not in axes]
    t = a._t.permute(*keep, *axes) if a.ndim else a._t.reshape(1)
    kept = tuple(a.shape[i] for i in keep)
    return t.reshape(*kept, -1), kept


def _keepdims_shape(a: ndarray, axis: Any) -> tuple[int, ...]:
    axes = normalize_axes(axis, a.ndim)
    return tuple(1 if i in axes else s for i, s in enumerate(a.shape))


def _gather(s: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.gather(s.unsqueeze(0).expand(idx.shape[0], *s.shape), -1, idx).squeeze(-1)


def _quantile_sorted(s: torch.Tensor, q: torch.Tensor, n: torch.Tensor, method: str, vdt: torch.dtype,
                     exact: bool) -> torch.Tensor:
    """Quantiles ``q`` (1-D) of the rows of ``s`` (sorted, NaN last; ``n`` valid values per row), shape
    ``(len(q), *rows)``. Positions ``(n - 1) * q`` are computed in q's precision, as NumPy's (rounding decides
    lower/higher); linear interpolation is NumPy's two-sided lerp, the difference taken in the input's precision."""
    vi = (n - 1) * q.reshape(-1, *[1] * s.dim())
    last = (n - 1).clamp(min=0)
    vi = torch.minimum(vi.clamp(min=0), last.to(vi.dtype))
    floor = vi.floor()
    if method in ("lower", "higher", "nearest"):
        pick = floor if method == "lower" else vi.ceil() if method == "higher" else torch.round(vi)
        return _gather(s, pick.long())
    lo_i = floor.long()
    lo, hi = _gather(s, lo_i), _gather(s, torch.minimum(lo_i + 1, last.long()))
    g = (vi - floor) if method == "linear" else torch.where(vi != floor, 0.5, 0.0).to(vi.dtype)
    g = g.squeeze(-1).to(vdt)
    diff = (hi - lo).to(vdt) if exact else hi.to(vdt) - lo.to(vdt)
    lo, hi = lo.to(vdt), hi.to(vdt)
    return torch.where(g >= 0.5, hi - diff * (1 - g), lo + diff * g)


def quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, interpolation: Any = None,
             _nan: bool = False) -> ndarray:
    """q-th quantiles along ``axis`` (methods linear, lower, higher, midpoint, nearest), NumPy's result dtype."""
    a = asarray(a)
    method = interpolation or method
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"'{method}' is not a valid method")
    qa = asarray(q)
    if bool(((qa._t < 0) | (qa._t > 1)).any()):
        raise ValueError("Quantiles must be in the range [0, 1]")
    probe: Any = q if isinstance(q, (int, float)) else numpy.full(qa.shape, 0.5, qa._dtype)
    checked = cast(_QuantileMethod, method)  # one of the names just checked
    dt = numpy.asarray(numpy.quantile(numpy.ones(2, a._dtype), probe, method=checked)).dtype  # NumPy's errors too
    if qa.ndim > 1:
        raise ValueError("q must be a scalar or 1d")
    q_dt = _dtypes_f64() if isinstance(q, (int, float)) or qa._dtype.kind != "f" else qa._dtype
    if overwrite_input:
        _sort_in_place(a, axis)
    t, kept = _to_last(a, axis)  # noqa: RUF059
    if t.shape[-1] == 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    st = torch.sort(t.to(torch.uint8) if t.dtype == torch.bool else t, dim=-1).values  # NaN sorts last
    floating = a._dtype.kind == "f"
    nan = torch.isnan(st) if floating else torch.zeros_like(st, dtype=torch.bool)
    qt = cast_tensor(qa._t, qa._dtype, q_dt).reshape(-1)
    n = ((~nan).sum(-1, keepdim=True) if _nan else torch.full_like(st[..., :1], st.shape[-1], dtype=torch.int64))
    vdt = storage_dtype(dt) if dt.kind == "f" else torch.float64
    r = _quantile_sorted(st, qt, n.to(qt.dtype), method, vdt, floating)
    if floating:  # a NaN in a slice (or an all-NaN slice for the nan* variants) gives NaN
        bad = (n.squeeze(-1) == 0) if _nan else nan[..., -1]
        if _nan and bool(bad.any()):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        r = torch.where(bad, torch.tensor(float("nan"), dtype=r.dtype, device=r.device), r)
    r = r.reshape(tuple(qa.shape) + tuple(t.shape[:-1]))
    if keepdims:
        r = r.reshape(tuple(qa.shape) + _keepdims_shape(a, axis))
    return R._finish(r.contiguous(), dt, out, to_numpy_dtype(r.dtype))


def _sort_in_place(a: ndarray, axis: Any) -> None:
    """``overwrite_input=True``: the input is left sorted along the reduced axis, as CuPy leaves it."""
    if not a.flags.c_contiguous or a.ndim == 0 or (axis is not None and len(normalize_axes(axis, a.ndim)) != 1):
        return
    if axis is None:
        a._t.view(-1).copy_(torch.sort(a._t.reshape(-1)).values)
    else:
        a._t.copy_(torch.sort(a._t, dim=normalize_axes(axis, a.ndim)[0]).values)


def percentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, interpolation: Any = None) -> ndarray:
    qq = q / 100 if isinstance(q, (int, float)) else _ufuncs.true_divide(asarray(q), 100)  # q's float dtype, as NumPy
    return quantile(a, qq, axis, out, overwrite_input, method, keepdims, interpolation=interpolation)


def nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, interpolation: Any = None) -> ndarray:
    return quantile(a, q, axis, out, overwrite_input, method, keepdims, interpolation=interpolation, _nan=True)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, interpolation: Any = None) -> ndarray:
    qa = asarray(q)
    return nanquantile(a, _wrap(cast_tensor(qa._t, qa._dtype, numpy.dtype(numpy.float64)) / 100), axis, out,
                       overwrite_input, method, keepdims, interpolation=interpolation)


def _median(a: ndarray, axis: Any, out: Any, keepdims: bool, skip_nan: bool) -> ndarray:
    from ascend_compat.cupy._sorting import sort

    dt = R.result_dtype(numpy.nanmedian if skip_nan else numpy.median, a._dtype)
    t, kept = _to_last(a, axis)  # noqa: RUF059
    n = t.shape[-1]
    if n == 0:
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
        r = torch.full(t.shape[:-1], float("nan"), dtype=torch.float64, device=t.device)
        return R._finish(r, _dtypes_f64(), out, _dtypes_f64())
    s = sort(_wrap(t.contiguous(), a._dtype), -1)
    st = cast_tensor(s._t, a._dtype, dt)
    nan = isnan_(_wrap(st, dt))._t if dt.kind in "fc" else torch.zeros_like(st, dtype=torch.bool)
    valid = (~nan).sum(-1, keepdim=True) if skip_nan else torch.full(st.shape[:-1] + (1,), n, device=st.device)  # noqa: RUF005
    lo = ((valid - 1).clamp(min=0) // 2)
    hi = (valid // 2).clamp(max=n - 1)
    r = (torch.gather(st, -1, lo) + torch.gather(st, -1, hi)).squeeze(-1) / 2
    if dt.kind in "fc":
        bad = (valid.squeeze(-1) == 0) if skip_nan else nan.any(-1)
        if skip_nan and bool(bad.any()):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        r = torch.where(bad, torch.full_like(r, float("nan")), r)
    if keepdims:
        r = r.reshape(_keepdims_shape(a, axis))
    return R._finish(r.contiguous(), dt, out, to_numpy_dtype(r.dtype))


def _dtypes_f64() -> numpy.dtype:
    return numpy.dtype(numpy.float64)


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> ndarray:
    return _median(asarray(a), axis, out, keepdims, skip_nan=False)


def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
              keepdims: bool = False) -> ndarray:
    return _median(asarray(a), axis, out, keepdims, skip_nan=True)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    a = asarray(a)
    if weights is None:
        avg = R.mean(a, axis, keepdims=keepdims)
        scl = _wrap(torch.full(avg._t.shape, a.size / max(avg.size, 1), dtype=avg._t.dtype, device=avg._t.device))
    else:
        w = asarray(weights)
        if w.shape != a.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.ndim != 1 or w.shape[0] != a.shape[normalize_axis(axis, a.ndim)]:
                raise ValueError("Length of weights not compatible with specified axis.")
            shape = [1] * a.ndim
            shape[normalize_axis(axis, a.ndim)] = -1
            w = w.reshape(shape)
        dt = numpy.result_type(a._dtype, w._dtype, 1.0)
        scl = R.sum(w.astype(dt) * _wrap(torch.ones(a.shape, dtype=torch.bool, device=a._t.device)), axis,
                    keepdims=keepdims)
        if bool((scl._t == 0).any()):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = _ufuncs.true_divide(R.sum(_ufuncs.multiply(a.astype(dt), w), axis, keepdims=keepdims), scl)
    if returned:
        return avg, scl
    return avg


def ufunc_reduce(uf: Any, array: Any, axis: Any, dtype: Any, out: Any, keepdims: bool, initial: Any,
                 where: Any) -> ndarray:
    a = asarray(array)
    name = uf.name
    if name == "add":
        return R.sum(a, axis, dtype or R.result_dtype(numpy.add.reduce, a._dtype), out, keepdims, initial, where)
    if name == "multiply":
        return R.prod(a, axis, dtype or R.result_dtype(numpy.multiply.reduce, a._dtype), out, keepdims, initial,
                      where)
    if name in ("maximum", "minimum"):
        return (R.amax if name == "maximum" else R.amin)(a, axis, out, keepdims, initial, where)
    if name in ("logical_and", "logical_or") and dtype is None:
        return (R.all if name == "logical_and" else R.any)(a, axis, out, keepdims, where=where)
    axes = normalize_axes(axis, a.ndim)
    if any(a.shape[ax] == 0 for ax in axes) and initial is None:
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    return R._fold(uf, a if dtype is None else a.astype(dtype), axes, keepdims, out, initial)


def ufunc_accumulate(uf: Any, array: Any, axis: int, dtype: Any, out: Any) -> ndarray:
    a = asarray(array)
    if a.ndim == 0:
        raise ValueError("cannot accumulate on a scalar")
    ax = normalize_axis(axis, a.ndim)
    dt = R.result_dtype(uf._np.accumulate, a._dtype, dtype=dtype)
    t = cast_tensor(a._t, a._dtype, dt)
    fns = {"add": torch.cumsum, "multiply": torch.cumprod, "maximum": lambda x, dim: torch.cummax(x, dim)[0],
           "minimum": lambda x, dim: torch.cummin(x, dim)[0]}
    fn = fns.get(uf.name)
    if fn is not None and not t.is_complex() and t.dtype != torch.bool:
        if dt == UINT64 and uf.name in ("maximum", "minimum"):
            # int64 bit patterns: ordered as unsigned through the flipped top bit (cummax would order them signed)
            return R._finish(unsigned_order(fn(unsigned_order(t), dim=ax)), dt, out, dt)
        return R._finish(fn(t, dim=ax), dt, out, dt)
    m = moveaxis(_wrap(t, dt), ax, 0)
    parts = [m[0]]
    for i in range(1, m.shape[0]):
        parts.append(uf(parts[-1], m[i], dtype=dt))
    from ascend_compat.cupy._manipulation import stack

    return R._finish(moveaxis(stack(parts), 0, ax)._t, dt, out, dt)


def ufunc_at(uf: Any, a: ndarray, indices: Any, b: Any) -> None:
    """``uf.at(a, indices, b)``: ``a[indices] = uf(a[indices], b)`` unbuffered (repeated indices compound);
    ``b`` broadcasts to the shape of ``a[indices]``."""
    if not isinstance(a, ndarray):
        raise TypeError("first operand of ufunc.at must be an ascend_compat.cupy.ndarray")
    sel = _wrap(torch.arange(a.size, device=a._t.device).reshape(a.shape))[indices]
    flat_idx = sel._t.reshape(-1)
    t = a._t if a._t.is_contiguous() else a._t.contiguous()  # flat indexing needs one memory order
    flat = _wrap(t.view(-1), a._dtype)
    if uf.nin == 1:
        flat._t.index_copy_(0, flat_idx, uf(flat[_wrap(flat_idx)])._t)
    else:
        bb = b if isinstance(b, (bool, int, float, complex)) else asarray(b)
        if isinstance(bb, ndarray):
            try:
                bb = _wrap(torch.broadcast_to(bb._t, sel.shape).reshape(-1), bb._dtype)
            except RuntimeError:
                raise ValueError(f"operands could not be broadcast together: b {bb.shape} and a[indices] "
                                 f"{sel.shape}") from None
        if uf.name in ("add", "subtract") and a._dtype.kind != "b":
            bt = asarray(bb)._t
            bt = -bt if uf.name == "subtract" else bt
            bt = cast_tensor(bt, asarray(bb)._dtype, a._dtype) if bt.dtype != t.dtype else bt
            flat._t.index_put_((flat_idx,), bt.expand(flat_idx.shape), accumulate=True)
        else:
            for i, idx in enumerate(flat_idx.tolist()):  # sequential, so repeated indices compound as NumPy's do
                flat[idx] = uf(flat[idx], bb[i] if isinstance(bb, ndarray) else bb)
    if t is not a._t:
        a._t.copy_(t)


# histograms, bincount and digitize are NumPy's statistics: exported here, after (and over) older versions
__all__ = ["average", "bincount", "corrcoef", "count_nonzero", "cov", "digitize", "histogram", "histogram2d",
           "histogramdd", "median", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax",
           "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar",
           "percentile", "ptp", "quantile"]
