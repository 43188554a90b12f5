"""Array creation: empty/zeros/ones/full (and ``*_like``), ranges, identity and triangular matrices, meshgrid."""

from __future__ import annotations

import math
import operator
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _alloc as _alloc_mod
from ascend_compat.cupy import _dtypes, _float64
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._core_flip import view_of
from ascend_compat.cupy._dtypes import cast_tensor, storage_dtype, to_numpy_dtype

_F64 = numpy.dtype(numpy.float64)
_WIDE_FLOATS = (_F64, numpy.dtype(numpy.complex128))


def _shape(shape: Any) -> tuple[int, ...]:
    if shape is None:
        raise TypeError("Passing None as a shape is not supported (as in NumPy >= 2.3). Use () for a 0-d array.")
    if isinstance(shape, (int, numpy.integer)) or (isinstance(shape, ndarray) and shape.ndim == 0):
        shape = (operator.index(shape),)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"expected a sequence of integers or a single integer, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ValueError("negative dimensions are not allowed")
    return out


def _alloc(shape: Any, dt: numpy.dtype, order: str, fill: Any = None) -> torch.Tensor:
    """A new tensor for an array of ``shape`` and ``dt`` in ``order``, filled with ``fill`` unless None (large CPU
    arrays get huge pages, as NumPy's do); the device running out of memory raises CuPy's ``OutOfMemoryError``."""
    shp = _shape(shape)
    dev = current_torch_device()
    order = order.upper() if isinstance(order, str) else order
    if order not in ("C", "F", "K", "A", None):
        raise ValueError(f"order not understood: {order!r}")
    tdt = storage_dtype(dt)
    rev = shp[::-1] if order == "F" and len(shp) > 1 else None
    size = shp if rev is None else rev
    try:
        big = math.prod(size) * dt.itemsize >= _alloc_mod.THRESHOLD
        t = _alloc_mod.empty_if_large(size, tdt, dev) if big else None
        if t is None:
            t = torch.empty(size, dtype=tdt, device=dev) if fill is None else torch.full(size, fill, dtype=tdt,
                                                                                        device=dev)
        elif fill is not None:
            t.fill_(fill)
    except torch.OutOfMemoryError as exc:
        _alloc_mod.raise_cupy_oom(exc, math.prod(shp) * dt.itemsize)
    return t if rev is None else t.permute(*range(len(shp) - 1, -1, -1))


def _policy(dtype: Any) -> numpy.dtype:
    """``dtype`` as a NumPy dtype, under the float64 policy of the current device (``ASCEND_COMPAT_CUPY_FLOAT64``)."""
    dt = to_numpy_dtype(dtype)
    return _float64.check_dtype(dt, current_torch_device()) if dt.char in "dD" else dt


def _fill_value(value: Any, dt: numpy.dtype) -> Any:
    """``value`` converted as NumPy would store it in ``dt`` (wrapping out-of-range unsigned values)."""
    host = numpy.array(value).astype(dt)
    if dt in _dtypes.WIDENED:
        return int(_dtypes.numpy_view_for_torch(host.reshape(1))[0])
    return host.item()


def empty(shape: Any, dtype: Any = float, order: str = "C") -> ndarray:
    dt = _policy(dtype)
    return _wrap(_alloc(shape, dt, order), dt)


def zeros(shape: Any, dtype: Any = float, order: str = "C") -> ndarray:
    dt = _policy(dtype)
    return _wrap(_alloc(shape, dt, order, 0), dt)


def ones(shape: Any, dtype: Any = float, order: str = "C") -> ndarray:
    dt = _policy(dtype)
    return _wrap(_alloc(shape, dt, order, 1), dt)


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> ndarray:
    if isinstance(fill_value, ndarray):
        dt = fill_value._dtype if dtype is None else to_numpy_dtype(dtype)
        out = empty(shape, dt, order)  # (empty applies the float64 policy)
        out[...] = fill_value
        return out
    dt = _policy(numpy.array(fill_value).dtype if dtype is None else dtype)
    return _wrap(_alloc(shape, dt, order, _fill_value(fill_value, dt)), dt)


def empty_like(a: Any, dtype: Any = None, order: str = "K", subok: Any = None, shape: Any = None) -> ndarray:
    """A new uninitialised array like ``a``; ``order="K"`` keeps ``a``'s memory layout (NumPy's rules)."""
    if subok:
        raise TypeError("subok is not supported")
    src = a if isinstance(a, ndarray) else asarray(a)
    dt = _policy(src._dtype if dtype is None else dtype)
    shp = src.shape if shape is None else _shape(shape)
    order = order.upper() if isinstance(order, str) else "K"
    f_only = src.flags.f_contiguous and not src.flags.c_contiguous
    if order == "K" and len(shp) != src.ndim:
        order = "C"
    if order == "A" or (order == "K" and (f_only or src.flags.c_contiguous)):
        order = "F" if f_only else "C"
    if order == "K":  # the source's axis order by decreasing stride, applied to the new shape
        strides = (src._pv if src._is_flip else src._t).stride()  # (negative strides: by their size, as NumPy)
        perm = sorted(range(len(shp)), key=lambda d: -strides[d])
        t = _alloc(tuple(shp[p] for p in perm), dt, "C")
        return _wrap(t.permute(*numpy.argsort(perm).tolist()), dt)
    return empty(shp, dt, order)


def zeros_like(a: Any, dtype: Any = None, order: str = "K", subok: Any = None, shape: Any = None) -> ndarray:
    out = empty_like(a, dtype, order, subok, shape)
    out._t.fill_(0)
    return out


def ones_like(a: Any, dtype: Any = None, order: str = "K", subok: Any = None, shape: Any = None) -> ndarray:
    out = empty_like(a, dtype, order, subok, shape)
    out._t.fill_(1)
    return out


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: Any = None,
              shape: Any = None) -> ndarray:
    out = empty_like(a, dtype, order, subok, shape)
    out.fill(fill_value)
    return out


def copy(a: Any, order: str = "K") -> ndarray:
    return asarray(a).copy(order=order)


@_alloc_mod.maps_oom
def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> ndarray:
    """Evenly spaced values in ``[start, stop)`` (NumPy's length and dtype rules)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise ZeroDivisionError("step must not be zero")
    dt = _policy(numpy.result_type(start, stop, step) if dtype is None else dtype)
    if isinstance(start, bool) and isinstance(stop, bool) and dtype is None:
        dt = numpy.dtype(numpy.int64)
    n = max(int(math.ceil((stop - start) / step)), 0) if not isinstance(start, complex) else 0  # noqa: RUF046
    dev = current_torch_device()
    if dt.kind in "iu" and all(isinstance(v, (int, numpy.integer)) for v in (start, step)):
        t = torch.arange(n, dtype=torch.int64, device=dev) * int(step) + int(start)
        return _wrap(cast_tensor(t, numpy.dtype(numpy.int64), dt), dt)
    if dt.kind == "b" and n > 2:
        raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
    work = _work_dtype(_F64, dev)
    t = torch.arange(n, dtype=storage_dtype(work), device=dev) * float(step) + float(start)
    return _wrap(cast_tensor(t, work, dt), dt)


def _work_dtype(dt: numpy.dtype, dev: torch.device) -> numpy.dtype:
    """``dt`` for intermediate work, in single precision where the float64 policy is not ``native``."""
    if dt in _WIDE_FLOATS and _float64.policy(dev) != "native":
        return numpy.dtype(numpy.complex64 if dt.kind == "c" else numpy.float32)
    return dt


@_alloc_mod.maps_oom
def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0) -> Any:
    """``num`` evenly spaced samples over ``[start, stop]``."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    if isinstance(start, (list, tuple)):
        start = asarray(start)
    if isinstance(stop, (list, tuple)):
        stop = asarray(stop)
    res_dt = numpy.result_type(_dt_of(start), _dt_of(stop), 1.0)
    dt = _policy(res_dt if dtype is None else dtype)
    res_dt = _work_dtype(res_dt, current_torch_device())
    calc = storage_dtype(res_dt)  # NumPy computes in the result type (float32 stays float32)
    st, sp = _as_float_tensor(start, calc), _as_float_tensor(stop, calc)
    st, sp = torch.broadcast_tensors(st.to(calc), sp.to(calc))
    delta = sp - st
    idx = torch.arange(num, device=st.device).to(calc).reshape((-1,) + (1,) * st.dim())
    step = delta / div if div > 0 else torch.full_like(delta, float("nan"))
    if div > 0 and bool((step == 0).any()):  # the step underflows: scale before multiplying (NumPy's order)
        y = idx / div * delta + st
    else:
        y = idx * step + st if div > 0 else idx * delta + st
    if endpoint and num > 1:
        y[-1] = sp
    if dt.kind in "iu":
        y = torch.floor(y.real if y.is_complex() else y)
    out = _wrap(cast_tensor(y.to(storage_dtype(res_dt)), res_dt, dt), dt)
    if axis != 0 and out.ndim > 1:
        from ascend_compat.cupy._manipulation import moveaxis

        out = moveaxis(out, 0, axis)
    if retstep:
        s = _wrap(step.to(storage_dtype(res_dt)), res_dt) if div > 0 else float("nan")
        return out, (s if st.dim() else (s.item() if isinstance(s, ndarray) else s))
    return out


def _dt_of(v: Any) -> Any:
    return v._dtype if isinstance(v, ndarray) else v


def _as_float_tensor(v: Any, calc: torch.dtype) -> torch.Tensor:
    if isinstance(v, ndarray):
        return v._t if v._dtype.kind in "fc" else cast_tensor(v._t, v._dtype, to_numpy_dtype(calc))
    return torch.tensor(v, dtype=calc, device=current_torch_device())


@_alloc_mod.maps_oom
def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype: Any = None, axis: int = 0) -> ndarray:
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    t = torch.pow(torch.tensor(float(base), dtype=y._t.dtype, device=y._t.device), y._t)
    dt = y._dtype if dtype is None else _policy(dtype)
    if dt.kind in "iu":
        t = torch.floor(t)
    return _wrap(cast_tensor(t, y._dtype, dt), dt)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> ndarray:
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    y = logspace(math.log10(start), math.log10(stop), num, endpoint, 10.0, None, axis)
    if num > 0:
        y[0] = start
        if endpoint and num > 1:
            y[-1] = stop
    return y if dtype is None else y.astype(dtype)


def eye(N: int, M: Optional[int] = None, k: int = 0, dtype: Any = float, order: str = "C") -> ndarray:  # noqa: N803
    out = zeros((N, N if M is None else M), dtype, order)
    if -out.shape[0] < k < out.shape[1]:  # a diagonal outside the matrix (any k, even 2**63) leaves it zero
        out._t.diagonal(k).fill_(1)
    return out


def identity(n: int, dtype: Any = float) -> ndarray:
    return eye(n, dtype=dtype)


@_alloc_mod.maps_oom
def tri(N: int, M: Optional[int] = None, k: int = 0, dtype: Any = float) -> ndarray:  # noqa: N803
    dt = _policy(dtype)
    t = torch.ones((N, N if M is None else M), dtype=torch.bool, device=current_torch_device()).tril(k)
    return _wrap(cast_tensor(t, _dtypes.BOOL, dt), dt)


@_alloc_mod.maps_oom
def _tri_apply(m: Any, k: int, fn: Any) -> ndarray:
    a = asarray(m)
    t = a._t
    if t.dim() == 0:
        raise ValueError("input array must be at least 1-d")
    if t.dim() == 1:
        t = t.expand(t.shape[0], t.shape[0])
    if t.dtype == torch.bool:
        return _wrap(fn(t.to(torch.uint8), k).bool(), a._dtype)
    return _wrap(fn(t, k), a._dtype)


def tril(m: Any, k: int = 0) -> ndarray:
    return _tri_apply(m, k, torch.tril)


def triu(m: Any, k: int = 0) -> ndarray:
    return _tri_apply(m, k, torch.triu)


@_alloc_mod.maps_oom
def diag(v: Any, k: int = 0) -> ndarray:
    a = asarray(v)
    if a.ndim == 1:
        n = a.shape[0] + abs(k)
        out = zeros((n, n), a._dtype)
        out._t.diagonal(k).copy_(a._t)
        return out
    if a.ndim == 2:
        return view_of(a._t.diagonal(k), a)
    raise ValueError("Input must be 1- or 2-d.")


def diagflat(v: Any, k: int = 0) -> ndarray:
    return diag(asarray(v).ravel(), k)


@_alloc_mod.maps_oom
def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple[ndarray, ...]:
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    outs = []
    for i, x in enumerate(xi):
        shape = [1] * ndim
        shape[i] = -1
        if indexing == "xy" and ndim > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        outs.append(asarray(x).reshape(shape))
    if not sparse:
        from ascend_compat.cupy._manipulation import broadcast_arrays

        outs = list(broadcast_arrays(*outs))
    if copy:
        outs = [o.copy() for o in outs]
    return tuple(outs)


def fromfunction(function: Any, shape: Any, dtype: Any = float, **kwargs: Any) -> Any:
    from ascend_compat.cupy._indexing import indices

    return function(*indices(shape, dtype=dtype), **kwargs)


def frombuffer(*args: Any, **kwargs: Any) -> ndarray:
    return asarray(numpy.frombuffer(*args, **kwargs))


def fromfile(*args: Any, **kwargs: Any) -> ndarray:
    return asarray(numpy.fromfile(*args, **kwargs))


def fromstring(*args: Any, **kwargs: Any) -> ndarray:
    return asarray(numpy.fromstring(*args, **kwargs))


def fromiter(*args: Any, **kwargs: Any) -> ndarray:
    return asarray(numpy.fromiter(*args, **kwargs))


def loadtxt(*args: Any, **kwargs: Any) -> ndarray:
    return asarray(numpy.loadtxt(*args, **kwargs))


def genfromtxt(*args: Any, **kwargs: Any) -> ndarray:
    return asarray(numpy.genfromtxt(*args, **kwargs))


@_alloc_mod.maps_oom
def vander(x: Any, N: Optional[int] = None, increasing: bool = False) -> ndarray:  # noqa: N803
    a = asarray(x)
    if a.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = a.shape[0] if N is None else N
    powers = torch.arange(n, device=a._t.device)
    if not increasing:
        powers = powers.flip(0)
    from ascend_compat.cupy._ufuncs import UFUNCS

    return UFUNCS["power"](a.reshape(-1, 1), _wrap(powers))


__all__ = ["arange", "copy", "diag", "diagflat", "empty", "empty_like", "eye", "frombuffer", "fromfile",
           "fromfunction",
           "fromiter", "fromstring", "full", "full_like", "genfromtxt", "geomspace", "identity", "linspace", "loadtxt",
           "logspace", "meshgrid", "ones", "ones_like", "tri", "tril", "triu", "vander", "zeros", "zeros_like"]


class _Grid:
    """``mgrid``/``ogrid``: index grids (built with NumPy's rules on the host, then moved to the device)."""

    def __init__(self, sparse: bool) -> None:
        self.sparse = sparse

    def __getitem__(self, key: Any) -> Any:
        keys = key if isinstance(key, tuple) else (key,)
        keys = tuple(slice(*(v.get() if isinstance(v, ndarray) else v for v in (k.start, k.stop, k.step)))
                     if isinstance(k, slice) else k for k in keys)
        res = (numpy.ogrid if self.sparse else numpy.mgrid)[keys if isinstance(key, tuple) else keys[0]]
        if isinstance(res, (list, tuple)):
            return [asarray(r) for r in res]
        return asarray(res)


mgrid = _Grid(False)
ogrid = _Grid(True)
__all__ += ["mgrid", "ogrid"]
