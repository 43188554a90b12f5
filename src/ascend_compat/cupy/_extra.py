"""Everything else users reach for: clip/round, complex parts, closeness tests, products (matmul/dot/einsum),
differences, type queries that accept device arrays, and cheap polynomials."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy import _reduction as R  # noqa: N812
from ascend_compat.cupy import _ufuncs as U  # noqa: N812
from ascend_compat.cupy._broadcast_errors import failure
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import cast_tensor, to_numpy_dtype
from ascend_compat.cupy._manipulation import concatenate, normalize_axis

if TYPE_CHECKING:
    from ascend_compat.cupy._more import Casting


def _dt(x: Any) -> Any:
    return x._dtype if isinstance(x, ndarray) else x


def result_type(*arrays_and_dtypes: Any) -> numpy.dtype:
    return numpy.result_type(*[_dt(x) for x in arrays_and_dtypes])


def can_cast(from_: Any, to: Any, casting: Casting = "safe") -> bool:
    return numpy.can_cast(_dt(from_), to, casting)


def min_scalar_type(a: Any) -> numpy.dtype:
    return numpy.min_scalar_type(a.get() if isinstance(a, ndarray) else a)


def common_type(*arrays: Any) -> Any:
    return numpy.common_type(*[numpy.empty(0, _dt(a)) for a in arrays])


def ndim(a: Any) -> int:
    return a.ndim if isinstance(a, ndarray) else numpy.ndim(a)


def shape(a: Any) -> tuple[int, ...]:
    return a.shape if isinstance(a, ndarray) else numpy.shape(a)


def size(a: Any, axis: Optional[int] = None) -> int:
    a = asarray(a)
    return a.size if axis is None else a.shape[normalize_axis(axis, a.ndim)]


def isfortran(a: Any) -> bool:
    """True when ``a`` is Fortran-contiguous and not C-contiguous."""
    a = asarray(a)
    return bool(a.flags.f_contiguous and not a.flags.c_contiguous)


def isscalar(element: Any) -> bool:
    return numpy.isscalar(element)


def clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *, min: Any = None,
         max: Any = None, **kwargs: Any) -> ndarray:
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    res = asarray(a) if not isinstance(a, ndarray) else a
    try:
        return _clip(res, lo, hi, out, kwargs)
    except ValueError:  # NumPy's error names all three operands (one ternary ufunc there)
        err = failure([x for x in (res, lo, hi) if x is not None], (out,))
        if err is not None:
            raise err from None
        raise


def _clip(res: ndarray, lo: Any, hi: Any, out: Any, kwargs: dict[str, Any]) -> ndarray:
    if lo is not None:
        res = U.maximum(res, lo, **kwargs) if hi is not None or out is None else U.maximum(res, lo, out=out, **kwargs)
    if hi is not None:
        res = U.minimum(res, hi, out=out, **kwargs) if out is not None else U.minimum(res, hi, **kwargs)
    if lo is None and hi is None:
        res = res.copy() if out is None else U.positive(res, out=out)
    return res


def round(a: Any, decimals: int = 0, out: Any = None) -> ndarray:
    a = asarray(a)
    if a._dtype.kind == "b":
        a = a.astype(numpy.float16)
    if a._dtype.kind in "iub":
        if decimals >= 0:
            r = a._t.clone()
        else:
            f = 10 ** (-decimals)
            r = torch.round(a._t.to(torch.float64) / f) * f
            r = cast_tensor(r, _dtypes.FLOAT64, a._dtype)
    elif a._dtype.kind == "c":
        r = torch.complex(torch.round(a._t.real, decimals=decimals), torch.round(a._t.imag, decimals=decimals))
    else:
        r = torch.round(a._t, decimals=decimals)
    return R._finish(r, a._dtype, out, a._dtype)


around = round
round_ = round


def fix(x: Any, out: Any = None) -> ndarray:
    return U.trunc(asarray(x), out=out)


def real(val: Any) -> ndarray:
    return asarray(val).real


def imag(val: Any) -> ndarray:
    return asarray(val).imag


def angle(z: Any, deg: bool = False) -> ndarray:
    a = asarray(z)
    dt = R.result_dtype(numpy.angle, a._dtype)
    t = a._t if a._dtype.kind == "c" else cast_tensor(a._t, a._dtype, dt)
    r = torch.angle(t) if t.is_complex() else torch.atan2(torch.zeros_like(t), t)
    return _wrap(torch.rad2deg(r) if deg else r, dt)


def iscomplex(x: Any) -> ndarray:
    a = asarray(x)
    return _wrap(a._t.imag != 0) if a._dtype.kind == "c" else _wrap(torch.zeros(a.shape, dtype=torch.bool,
                                                                                 device=a._t.device))


def isreal(x: Any) -> ndarray:
    return U.logical_not(iscomplex(x))


def iscomplexobj(x: Any) -> bool:
    return (x._dtype if isinstance(x, ndarray) else numpy.asarray(x).dtype).kind == "c"


def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)


def isneginf(x: Any, out: Any = None) -> ndarray:
    return U.logical_and(U.isinf(x), U.signbit(x), out=out)


def isposinf(x: Any, out: Any = None) -> ndarray:
    return U.logical_and(U.isinf(x), U.logical_not(U.signbit(x)), out=out)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> ndarray:
    x, y = asarray(a), asarray(b)
    dt = numpy.result_type(x._dtype, y._dtype, 1.0)
    xt, yt = cast_tensor(x._t, x._dtype, dt), cast_tensor(y._t, y._dtype, dt)
    try:
        return _wrap(torch.isclose(xt, yt, rtol=rtol, atol=atol, equal_nan=equal_nan))
    except RuntimeError:
        err = failure((x, y))  # NumPy's error where they do not broadcast
        if err is not None:
            raise err from None
        raise


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> ndarray:
    return R.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> ndarray:
    x, y = asarray(a1), asarray(a2)
    if x.shape != y.shape:
        return _wrap(torch.tensor(False, device=x._t.device))
    eq = U.equal(x, y)
    if equal_nan and x._dtype.kind in "fc":
        eq = U.logical_or(eq, U.logical_and(U.isnan(x), U.isnan(y)))
    return R.all(eq)


def array_equiv(a1: Any, a2: Any) -> ndarray:
    x, y = asarray(a1), asarray(a2)
    try:
        torch.broadcast_shapes(x._t.shape, y._t.shape)
    except RuntimeError:
        return _wrap(torch.tensor(False, device=x._t.device))
    return R.all(U.equal(x, y))


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Optional[float] = None,
               neginf: Optional[float] = None) -> ndarray:
    a = asarray(x)
    if a._dtype.kind not in "fc":
        return a.copy() if copy else a
    t = a._t
    if any(isinstance(v, ndarray) for v in (nan, posinf, neginf)):
        return _nan_to_num_arrays(a, copy, nan, posinf, neginf)
    fix_ = (lambda v: torch.nan_to_num(v, nan=nan, posinf=posinf, neginf=neginf))  # noqa: E731
    r = torch.complex(fix_(t.real), fix_(t.imag)) if t.is_complex() else fix_(t)
    if not copy:
        if a._is_flip:  # negative strides: written through to the memory
            a[...] = _wrap(r, a._dtype)
            return a
        a._t.copy_(r)
        return a
    return _wrap(r, a._dtype)


def _nan_to_num_arrays(a: ndarray, copy: bool, nan: Any, posinf: Any, neginf: Any) -> ndarray:
    from ascend_compat.cupy._indexing import where

    info = numpy.finfo(a._dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    r = where(U.isnan(a), nan, a)
    r = where(U.logical_and(U.isinf(r), U.greater(r, 0)), big, r)
    r = where(U.logical_and(U.isinf(r), U.less(r, 0)), small, r).astype(a._dtype)
    if not copy:
        a[...] = r
        return a
    return r


def sinc(x: Any) -> ndarray:
    a = asarray(x)
    dt = numpy.result_type(a._dtype, 1.0)
    return _wrap(torch.sinc(cast_tensor(a._t, a._dtype, dt)), dt)


def i0(x: Any) -> ndarray:
    a = asarray(x)
    dt = numpy.result_type(a._dtype, 1.0)
    return _wrap(torch.special.i0(cast_tensor(a._t, a._dtype, dt)), dt)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> ndarray:
    x = asarray(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = normalize_axis(axis, x.ndim)
    parts = []
    for extra in (prepend, None, append):
        if extra is None:
            continue
        e = asarray(extra)
        if e.ndim == 0:
            shp = list(x.shape)
            shp[ax] = 1
            e = _wrap(e._t.expand(shp), e._dtype)
        parts.append(e)
    if prepend is not None or append is not None:
        seq = ([parts[0]] if prepend is not None else []) + [x] + ([parts[-1]] if append is not None else [])
        x = concatenate(seq, ax)
    for _ in range(n):
        hi = x[(slice(None),) * ax + (slice(1, None),)]
        lo = x[(slice(None),) * ax + (slice(None, -1),)]
        x = U.not_equal(hi, lo) if x._dtype.kind == "b" else U.subtract(hi, lo)
    return x


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> ndarray:
    a = asarray(ary).ravel()
    d = U.subtract(a[1:], a[:-1])
    parts = ([asarray(to_begin).ravel().astype(d._dtype)] if to_begin is not None else []) + [d] + (
        [asarray(to_end).ravel().astype(d._dtype)] if to_end is not None else [])
    return concatenate(parts) if len(parts) > 1 else d


def convolve(a: Any, v: Any, mode: str = "full") -> ndarray:
    if isinstance(a, numpy.ndarray) or isinstance(v, numpy.ndarray):
        raise TypeError("Unsupported type <class 'numpy.ndarray'>")
    x, y = asarray(a), asarray(v)
    x, y = (x.reshape(1) if x.ndim == 0 else x), (y.reshape(1) if y.ndim == 0 else y)
    dt = numpy.result_type(x._dtype, y._dtype)
    xt, yt = x._t, y._t
    if x.size == 0 or y.size == 0:
        raise ValueError("a cannot be empty" if x.size == 0 else "v cannot be empty")
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError("object too deep for desired array")
    work = torch.complex128 if dt.kind == "c" else torch.float64
    xt, yt = xt.to(work), yt.to(work)
    if xt.numel() < yt.numel():
        xt, yt = yt, xt
    n, m = xt.numel(), yt.numel()
    full = torch.zeros(n + m - 1, dtype=work, device=xt.device)
    for j in range(m):  # m shifted axpys: exact for integers, the short kernel is the loop
        full[j:j + n] += xt * yt[j]
    if mode == "same":
        start = (m - 1) // 2
        full = full[start:start + n]
    elif mode == "valid":
        full = full[m - 1:n]
    elif mode != "full":
        raise ValueError(f"mode must be one of 'full', 'same', 'valid' (got {mode!r})")
    if dt.kind in "iub":
        full = torch.round(full)
    return _wrap(cast_tensor(full, to_numpy_dtype(work), dt), dt)


def correlate(a: Any, v: Any, mode: str = "valid") -> ndarray:
    x, y = asarray(a), asarray(v)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if y.ndim == 1 and x.ndim == 1 and y.size > x.size:  # NumPy swaps the operands: its "same" window follows
        r = correlate(y, x, mode)[::-1].copy()  # (a new C-ordered array, as NumPy's)
        return U.conjugate(r) if r._dtype.kind == "c" else r
    return convolve(x, U.conjugate(y)[::-1] if y._dtype.kind == "c" else y[::-1], mode)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> ndarray:
    xa, xpa, fpa = asarray(x), asarray(xp), asarray(fp)
    if xpa.ndim != 1 or fpa.ndim != 1:
        raise ValueError("object too deep for desired array")
    if xpa.size != fpa.size:
        raise ValueError("fp and xp are not of the same length")
    if xpa.size == 0:
        raise ValueError("array of sample points is empty")
    dt = numpy.dtype(numpy.complex128 if fpa._dtype.kind == "c" else numpy.float64)
    if period is not None:
        return _interp_periodic(xa, xpa, fpa, float(period))
    xt, xpt = (cast_tensor(v._t, v._dtype, _dtypes.FLOAT64) for v in (xa, xpa))
    fpt = cast_tensor(fpa._t, fpa._dtype, dt)
    idx = torch.searchsorted(xpt, xt, right=True).clamp(1, max(xpt.numel() - 1, 1))
    x0, x1 = xpt[idx - 1], xpt[idx] if xpt.numel() > 1 else xpt[idx - 1]
    f0, f1 = fpt[idx - 1], fpt[idx] if fpt.numel() > 1 else fpt[idx - 1]
    w = torch.where(x1 == x0, torch.zeros_like(xt), (xt - x0) / (x1 - x0))
    r = f0 + (f1 - f0) * w.to(f0.dtype)
    r = torch.where(xt == xpt[-1], fpt[-1], r)
    r = torch.where(xt < xpt[0], fpt[0] if left is None else torch.tensor(left, dtype=r.dtype), r)
    r = torch.where(xt > xpt[-1], fpt[-1] if right is None else torch.tensor(right, dtype=r.dtype), r)
    return _wrap(r, dt)


def _interp_periodic(x: ndarray, xp: ndarray, fp: ndarray, period: float) -> ndarray:
    if period == 0:
        raise ValueError("period must be a non-zero value")
    from ascend_compat.cupy._sorting import argsort

    period = abs(period)
    xr = U.remainder(x.astype(numpy.float64), period)
    xpr = U.remainder(xp.astype(numpy.float64), period)
    order = argsort(xpr)
    xpr, fps = xpr[order], fp[order]
    xpr = concatenate([xpr[-1:] - period, xpr, xpr[:1] + period])
    fps = concatenate([fps[-1:], fps, fps[:1]])
    return interp(xr, xpr, fps)


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> ndarray:
    ya = asarray(y)
    d: ndarray | float = dx
    if x is not None:
        xdim = asarray(x).ndim
        if xdim == 1:  # sample points along ``axis``, broadcast over the other axes
            shp = [1] * ya.ndim
            shp[axis] = -1
            d = diff(x).reshape(shp)
        else:
            d = diff(x, axis=axis) if xdim > 1 else diff(x)
    ax = normalize_axis(axis, ya.ndim)
    hi = ya[(slice(None),) * ax + (slice(1, None),)]
    lo = ya[(slice(None),) * ax + (slice(None, -1),)]
    return R.sum(U.multiply(d, U.add(hi, lo)) / 2.0, axis=ax)


__all__ = ["allclose", "angle", "around", "array_equal", "array_equiv", "can_cast", "clip", "common_type",
           "convolve", "correlate", "diff", "ediff1d", "fix", "i0", "imag", "interp", "isclose", "iscomplex",
           "iscomplexobj", "isfortran", "isneginf", "isposinf", "isreal", "isrealobj", "isscalar",
           "min_scalar_type", "nan_to_num", "ndim", "real", "result_type", "round", "round_", "shape",
           "sinc", "size", "trapezoid"]
