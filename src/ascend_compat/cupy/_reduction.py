"""Reductions (sum/prod/min/max/arg*/all/any/mean/var/std, their nan* forms), scans, and ufunc.reduce/accumulate/at.

Result dtypes come from NumPy itself, asked once per (function, dtype, arguments) on a one-element host array.
"""

from __future__ import annotations

import builtins
import warnings
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import numpy
import torch

from ascend_compat.cupy import _alloc, _dtypes
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import cast_tensor, storage_dtype, to_numpy_dtype
from ascend_compat.cupy._manipulation import normalize_axes, normalize_axis

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from ascend_compat.cupy._ufunc import ufunc

#: An array of this module, or what :func:`asarray` takes (NumPy arrays, nested sequences, scalars).
ArrayArg = Union[ndarray, "ArrayLike"]
#: The axes to reduce: one, several, or None (all).
Axes = Union[int, tuple[int, ...], None]
#: A scalar ``initial`` value (a Python number as torch's stubs take; NumPy scalars work as well).
Scalar = complex
#: A ``dtype`` argument (None: NumPy's default for the function).
DType = Optional["DTypeLike"]
#: An ``out`` argument.
Out = Optional[ndarray]
#: A torch reduction called as ``fn(t, dim=..., keepdim=...)``.
TorchReduction = Callable[..., torch.Tensor]

_DT_CACHE: dict[tuple[Callable[..., Any], numpy.dtype, tuple[tuple[str, Any], ...]], numpy.dtype] = {}
_any, _max = builtins.any, builtins.max


def result_dtype(fn: Callable[..., Any], dt: numpy.dtype, **kw: Any) -> numpy.dtype:
    """The dtype NumPy's ``fn`` returns for a ``dt`` input with keyword arguments ``kw`` (cached)."""
    key = (fn, dt, tuple(sorted(kw.items())))
    res = _DT_CACHE.get(key)
    if res is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = numpy.asarray(fn(numpy.ones((1,), dt), **kw)).dtype
        res = _DT_CACHE[key] = to_numpy_dtype(res)
    return res


# sum's result dtype for each input dtype, where torch.sum's own promotion gives the same storage (not bool).
_SUM_DT = {dt: result_dtype(numpy.sum, dt) for dt in _dtypes.ALL_TYPES if dt.kind != "b"}


def _prep(a: ArrayArg, axis: Axes) -> tuple[ndarray, tuple[int, ...]]:
    a = a if isinstance(a, ndarray) else asarray(a)
    return a, normalize_axes(axis, a.ndim)


def _finish(t: torch.Tensor, dt: numpy.dtype, out: Out, src: numpy.dtype) -> ndarray:
    if t.dtype != storage_dtype(dt):
        t = cast_tensor(t, src, dt)
    mask = _dtypes.WRAP_MASK.get(dt)
    if mask is not None:
        t = t & mask
    if out is None:
        return _wrap(t, dt)
    if not isinstance(out, ndarray):
        raise TypeError("out must be an ascend_compat.cupy.ndarray")
    if out.shape != tuple(t.shape):
        raise ValueError(f"output parameter has the wrong shape {out.shape}, expected {tuple(t.shape)}")
    if out._is_flip:  # negative strides: written through to the memory
        from ascend_compat.cupy._core_flip import write_back

        write_back(out, cast_tensor(t, dt, out._dtype))
        return out
    out._t.copy_(cast_tensor(t, dt, out._dtype))
    return out


def _reduce(t: torch.Tensor, fn: Callable[..., torch.Tensor], axes: tuple[int, ...], keepdims: bool,
            ndim: int) -> torch.Tensor:
    if not axes:
        return t.clone()
    if ndim == 0:
        return fn(t.reshape(1), dim=0, keepdim=False)
    if t.numel() * t.element_size() >= _alloc.THRESHOLD and (t.is_floating_point() or t.is_complex()):
        # a large result (huge pages on the CPU); floats only: there every reduction keeps the input's dtype
        shape = [1 if i in axes else s for i, s in enumerate(t.shape) if keepdims or i not in axes]
        big = _alloc.empty_if_large(shape, t.dtype, t.device)
        if big is not None:
            return fn(t, dim=axes, keepdim=keepdims, out=big)
    return fn(t, dim=axes, keepdim=keepdims)


def _apply_where(a: ndarray, where: ArrayArg, fill: float) -> torch.Tensor:
    if where is True:
        return a._t
    mask = asarray(where)._t
    return torch.where(mask, a._t, torch.tensor(fill, dtype=a._t.dtype, device=a._t.device))


def _warn_complex_cast(src: numpy.dtype, dst: numpy.dtype) -> None:
    if src.kind == "c" and dst.kind != "c":  # as NumPy and CuPy: the imaginary part is dropped
        warnings.warn("Casting complex values to real discards the imaginary part", numpy.exceptions.ComplexWarning,
                      stacklevel=3)


_INT_ACCUMULATE = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
_CHUNK_BYTES = 64 << 20


def _int_sum(src: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    """int64 sums of an integer tensor over ``axes``. torch widens its input to int64 before reducing (8x an int8
    array, or far more for a broadcast view, as in CuPy's huge-sum test), so large inputs go in slices along axis 0
    whose int64 copies stay near ``_CHUNK_BYTES``."""
    n0 = src.shape[0]
    rows = _max(1, _CHUNK_BYTES // _max(1, 8 * (src.numel() // _max(n0, 1))))
    if rows >= n0:
        return torch.sum(src, dim=axes, keepdim=keepdims, dtype=torch.int64)
    parts = [torch.sum(src[i:i + rows], dim=axes, keepdim=True, dtype=torch.int64) for i in range(0, n0, rows)]
    r = parts[0]
    if 0 in axes:  # partial sums of the reduced axis 0
        for p in parts[1:]:
            r += p
    else:
        r = torch.cat(parts, dim=0)
    return r if keepdims else r.squeeze(axes)


def sum(a: ArrayArg, axis: Axes = None, dtype: DType = None, out: Out = None, keepdims: bool = False,
        initial: Optional[Scalar] = None, where: ArrayArg = True) -> ndarray:
    if axis is None and dtype is None and out is None and not keepdims and initial is None and where is True \
            and type(a) is ndarray:  # the common call, kept cheap
        dt = _SUM_DT.get(a._dtype)
        if dt is not None:
            r = torch.sum(a._t)
            return _wrap(r if r.dtype == storage_dtype(dt) else r.to(storage_dtype(dt)), dt)
    a, axes = _prep(a, axis)
    dt = result_dtype(numpy.sum, a._dtype, dtype=dtype)
    _warn_complex_cast(a._dtype, dt)
    src = _apply_where(a, where, 0)
    if dt == _dtypes.INT64 and src.dtype in _INT_ACCUMULATE and axes and a.ndim:
        # widen while reducing: casting first would materialize an int64 copy, 8x an int8 input (or far more
        # for a broadcast view, as in CuPy's huge-sum test)
        r = _int_sum(src, axes, keepdims)
        return _finish(r + initial if initial is not None else r, dt, out, dt)
    t = cast_tensor(src, a._dtype, dt)
    if dt.kind == "b":
        r = _reduce(t.to(torch.uint8), torch.amax, axes, keepdims, a.ndim).bool() if t.numel() else \
            _reduce(t, torch.sum, axes, keepdims, a.ndim) != 0
    else:
        r = _reduce(t, torch.sum, axes, keepdims, a.ndim)
    if initial is not None:
        r = r + initial
    return _finish(r, dt, out, dt)


def prod(a: ArrayArg, axis: Axes = None, dtype: DType = None, out: Out = None, keepdims: bool = False,
         initial: Optional[Scalar] = None, where: ArrayArg = True) -> ndarray:
    a, axes = _prep(a, axis)
    dt = result_dtype(numpy.prod, a._dtype, dtype=dtype)
    _warn_complex_cast(a._dtype, dt)
    t = cast_tensor(_apply_where(a, where, 1), a._dtype, dt)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    r = t.clone() if not axes else t
    for ax in sorted(axes, reverse=True):  # torch.prod reduces one dimension at a time
        r = torch.prod(r, dim=ax, keepdim=keepdims)
    if a.ndim == 0:
        r = t.clone()
    if initial is not None:
        r = r * initial
    return _finish(r, dt, out, dt)


def _minmax(a: ArrayArg, axis: Axes, out: Out, keepdims: bool, initial: Optional[Scalar], where: ArrayArg,
            fn: TorchReduction, name: str) -> ndarray:
    a, axes = _prep(a, axis)
    t = a._t
    flip = a._dtype == _dtypes.UINT64
    if flip:  # uint64 held as its int64 bit pattern: ordered as unsigned through its flipped top bit
        t = _dtypes.unsigned_order(t)
        initial = None if initial is None else int(initial) + _dtypes.UINT64_TOP_BIT  # type: ignore[call-overload]
    if where is not True:
        if initial is None:
            raise ValueError(f"reduction operation '{name}' does not have an identity, so to use a where mask one "
                             "has to specify 'initial'")
        t = torch.where(asarray(where)._t, t, torch.tensor(initial, dtype=t.dtype, device=t.device))
    if initial is None and (_any(a.shape[ax] == 0 for ax in axes) or (a.ndim == 0 and a.size == 0)):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    work = t.to(torch.uint8) if t.dtype == torch.bool else t
    if work.is_complex():
        from ascend_compat.cupy._ufuncs import maximum, minimum

        return _fold(maximum if name == "maximum" else minimum, a, axes, keepdims, out, initial)
    if a.size == 0:
        shape = [1 if i in axes else s for i, s in enumerate(a.shape)] if keepdims else [
            s for i, s in enumerate(a.shape) if i not in axes]
        r = torch.full(shape, 0 if initial is None else initial, dtype=work.dtype, device=work.device)
    else:
        r = _reduce(work, fn, axes, keepdims, a.ndim)
        if initial is not None:
            r = (torch.maximum if name == "maximum" else torch.minimum)(r, torch.tensor(initial, dtype=r.dtype,
                                                                                         device=r.device))
    if flip:
        r = _dtypes.unsigned_order(r)
    return _finish(r.to(t.dtype) if t.dtype == torch.bool else r, a._dtype, out, a._dtype)



def amax(a: ArrayArg, axis: Axes = None, out: Out = None, keepdims: bool = False, initial: Optional[Scalar] = None,
         where: ArrayArg = True) -> ndarray:
    return _minmax(a, axis, out, keepdims, initial, where, torch.amax, "maximum")


def amin(a: ArrayArg, axis: Axes = None, out: Out = None, keepdims: bool = False, initial: Optional[Scalar] = None,
         where: ArrayArg = True) -> ndarray:
    return _minmax(a, axis, out, keepdims, initial, where, torch.amin, "minimum")


max = amax
min = amin


def _fold(uf: ufunc, a: ndarray, axes: tuple[int, ...], keepdims: bool, out: Out, initial: Optional[Scalar]) -> ndarray:
    """Reduce with a binary ufunc one slice at a time (dtypes torch has no reduction kernel for)."""
    from ascend_compat.cupy._manipulation import moveaxis

    r = a
    for ax in sorted(axes, reverse=True):
        m = moveaxis(r, ax, 0)
        acc = m[0]
        for i in range(1, m.shape[0]):
            acc = uf(acc, m[i])
        r = acc
        if keepdims:
            r = r.reshape(r.shape[:ax] + (1,) + r.shape[ax:])  # noqa: RUF005
    if initial is not None:
        r = uf(r, initial)
    return _finish(r._t, r._dtype, out, r._dtype)


def _arg(a: ArrayArg, axis: Optional[int], out: Out, keepdims: bool, fn: TorchReduction, name: str) -> ndarray:
    a = asarray(a)
    if a.size == 0 and (axis is None or a.shape[normalize_axis(axis, a.ndim)] == 0):
        raise ValueError(f"attempt to get {name} of an empty sequence")
    if a.size == 0:
        ax = normalize_axis(axis, a.ndim)
        shape = [1 if i == ax else s for i, s in enumerate(a.shape)] if keepdims else [
            s for i, s in enumerate(a.shape) if i != ax]
        return _finish(torch.zeros(shape, dtype=torch.int64, device=a._t.device), _dtypes.INT64, out, _dtypes.INT64)
    t = a._t.to(torch.uint8) if a._t.dtype == torch.bool else a._t
    if a._dtype == _dtypes.UINT64:
        t = cast_tensor(t, a._dtype, _dtypes.FLOAT64)
    if t.is_complex():  # lexicographic order: the first index of a stable sort (negated for the maximum)
        from ascend_compat.cupy._sorting import argsort

        src = _wrap(-t if name == "argmax" else t, a._dtype)
        nan = torch.isnan(t)  # NumPy: the first NaN (in either part) wins, for argmax and argmin alike
        if axis is None:
            r = argsort(src.ravel())._t[0]
            r = torch.where(nan.any(), nan.reshape(-1).to(torch.uint8).argmax(), r)
            return _finish(r.reshape((1,) * a.ndim) if keepdims else r, _dtypes.INT64, out, _dtypes.INT64)
        ax = normalize_axis(axis, a.ndim)
        r = argsort(src, ax)._t.narrow(ax, 0, 1)
        r = torch.where(nan.any(ax, keepdim=True), nan.to(torch.uint8).argmax(ax, keepdim=True), r)
        return _finish(r if keepdims else r.squeeze(ax), _dtypes.INT64, out, _dtypes.INT64)
    if axis is None:
        r = fn(t.reshape(-1))
        if keepdims:
            r = r.reshape((1,) * a.ndim)
    else:
        r = fn(t, dim=normalize_axis(axis, a.ndim), keepdim=keepdims)
    return _finish(r, _dtypes.INT64, out, _dtypes.INT64)


def argmax(a: ArrayArg, axis: Optional[int] = None, dtype: DType = None, out: Out = None, *,
           keepdims: bool = False) -> ndarray:
    r = _arg(a, axis, out, keepdims, torch.argmax, "argmax")
    return r if dtype is None else r.astype(dtype, copy=False)


def argmin(a: ArrayArg, axis: Optional[int] = None, dtype: DType = None, out: Out = None, *,
           keepdims: bool = False) -> ndarray:
    r = _arg(a, axis, out, keepdims, torch.argmin, "argmin")
    return r if dtype is None else r.astype(dtype, copy=False)


def _logical(a: ArrayArg, axis: Axes, out: Out, keepdims: bool, where: ArrayArg, fn: TorchReduction,
             fill: bool) -> ndarray:
    a, axes = _prep(a, axis)
    src = _apply_where(a, where, fill)
    t = src if src.dtype == torch.bool else src != 0  # `!= 0` on bool builds an int64 temporary (8x)
    r = t.clone() if not axes else (fn(t.reshape(1)) if a.ndim == 0 else t)
    if axes and a.ndim:
        for ax in sorted(axes, reverse=True):
            r = fn(r, dim=ax, keepdim=keepdims)
    return _finish(r, _dtypes.BOOL, out, _dtypes.BOOL)


def all(a: ArrayArg, axis: Axes = None, out: Out = None, keepdims: bool = False, *, where: ArrayArg = True) -> ndarray:
    return _logical(a, axis, out, keepdims, where, torch.all, True)


def any(a: ArrayArg, axis: Axes = None, out: Out = None, keepdims: bool = False, *, where: ArrayArg = True) -> ndarray:
    return _logical(a, axis, out, keepdims, where, torch.any, False)


def _float_work(a: ndarray, dt: numpy.dtype) -> torch.Tensor:
    work = dt if dt.kind in "fc" else _dtypes.FLOAT64
    if work == numpy.dtype(numpy.float16):
        work = numpy.dtype(numpy.float32)
    return cast_tensor(a._t, a._dtype, work)


def mean(a: ArrayArg, axis: Axes = None, dtype: DType = None, out: Out = None, keepdims: bool = False, *,
         where: ArrayArg = True) -> ndarray:
    a, axes = _prep(a, axis)
    dt = result_dtype(numpy.mean, a._dtype, dtype=dtype)
    t = _float_work(a, dt)
    if where is not True:
        mask = asarray(where)._t
        mask = mask.expand(t.shape)
        s = _reduce(torch.where(mask, t, torch.zeros_like(t)), torch.sum, axes, keepdims, a.ndim)
        n = _reduce(mask.to(t.dtype.to_real() if t.is_complex() else t.dtype), torch.sum, axes, keepdims, a.ndim)
        return _finish(s / n, dt, out, to_numpy_dtype(t.dtype))
    if a.size == 0 or _any(a.shape[ax] == 0 for ax in axes):
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=2)
    r = _reduce(t, torch.mean, axes, keepdims, a.ndim) if axes else t.clone()
    return _finish(r, dt, out, to_numpy_dtype(t.dtype))


def var(a: ArrayArg, axis: Axes = None, dtype: DType = None, out: Out = None, ddof: float = 0, keepdims: bool = False,
        *, where: ArrayArg = True, mean: Optional[ArrayArg] = None, correction: Optional[float] = None) -> ndarray:
    a, axes = _prep(a, axis)
    if correction is not None:
        ddof = correction
    dt = result_dtype(numpy.var, a._dtype, dtype=dtype)
    t = _float_work(a, numpy.dtype(numpy.complex128) if a._dtype.kind == "c" and dt.itemsize == 8 else
                    (a._dtype if a._dtype.kind == "c" else dt))
    if not axes:
        r = torch.zeros(t.shape, dtype=t.real.dtype, device=t.device)
    else:
        n = 1
        for ax in axes:
            n *= a.shape[ax]
        m = t.mean(dim=axes, keepdim=True) if a.ndim else t
        d = (t - m).abs() ** 2 if t.is_complex() else (t - m) ** 2
        r = _reduce(d, torch.sum, axes, keepdims, a.ndim) / _max(n - ddof, 0)
    return _finish(r, dt, out, to_numpy_dtype(r.dtype))


def std(a: ArrayArg, axis: Axes = None, dtype: DType = None, out: Out = None, ddof: float = 0, keepdims: bool = False,
        *, where: ArrayArg = True, mean: Optional[ArrayArg] = None, correction: Optional[float] = None) -> ndarray:
    v = var(a, axis, dtype, None, ddof, keepdims, correction=correction)
    return _finish(torch.sqrt(v._t), v._dtype, out, v._dtype)


def _scan(a: ArrayArg, axis: Optional[int], dtype: DType, out: Out, np_fn: Callable[..., Any],
          fn: TorchReduction) -> ndarray:
    a = asarray(a)
    dt = result_dtype(np_fn, a._dtype, dtype=dtype)
    t = cast_tensor(a._t, a._dtype, dt)
    if t.dtype == torch.bool:
        t = t.to(torch.int64)
    if axis is None:
        t, ax = t.reshape(-1), 0
    else:
        ax = normalize_axis(axis, a.ndim)
    r = fn(t, dim=ax) if t.dim() else t.clone()
    return _finish(r, dt, out, dt)


def cumsum(a: ArrayArg, axis: Optional[int] = None, dtype: DType = None, out: Out = None) -> ndarray:
    return _scan(a, axis, dtype, out, numpy.cumsum, torch.cumsum)


def cumprod(a: ArrayArg, axis: Optional[int] = None, dtype: DType = None, out: Out = None) -> ndarray:
    return _scan(a, axis, dtype, out, numpy.cumprod, torch.cumprod)


cumproduct = cumprod


__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "cumprod", "cumproduct", "cumsum", "max", "mean", "min",
           "prod", "std", "sum", "var"]
