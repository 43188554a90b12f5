"""What ufunc calls share besides the loop: operand type keys and conversion, broadcasting, out-of-range integer
comparisons, and the ``at``/``reduceat`` methods."""

from __future__ import annotations

from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy._broadcast_errors import broadcast, operand_shape, operands_error
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._dtypes import WRAP_MASK, cast_tensor, storage_dtype

_SCALARS = (int, float, complex)
_BOOL = _dtypes.BOOL
_I64_MIN, _U64_LIMIT = -(2**63), 2**64


def _key(x: Any) -> Any:
    """The type key of an operand: its dtype, or the Python scalar type (weak under NEP 50)."""
    if isinstance(x, ndarray):
        return x._dtype
    tp = type(x)
    if tp is bool:
        return _BOOL
    if tp in _SCALARS:
        return tp
    if isinstance(x, numpy.generic):
        return _dtypes.to_numpy_dtype(x.dtype)
    if isinstance(x, numpy.ndarray):
        raise TypeError("Unsupported type <class 'numpy.ndarray'>: a host NumPy array cannot be mixed into a "
                        "device ufunc; use ascend_compat.cupy.asarray(x) first")
    if isinstance(x, (list, tuple)):
        raise TypeError(f"Unsupported type {tp}: convert sequences with ascend_compat.cupy.asarray first")
    raise TypeError(f"Unsupported type {tp}")


def _operand(x: Any, dt: numpy.dtype, scalar_ok: bool) -> Any:
    """``x`` as a torch tensor in the storage type of loop dtype ``dt`` (a Python scalar where ``scalar_ok``)."""
    if isinstance(x, ndarray):
        return cast_tensor(x._t, x._dtype, dt)
    if isinstance(x, numpy.generic):
        x = x.item()
    if dt.kind in "iu" and isinstance(x, int) and not isinstance(x, bool):
        _check_int_range(x, dt)
        if dt == _dtypes.UINT64 and x >= 2**63:
            x -= _U64_LIMIT
    elif dt.kind == "b":
        x = bool(x)
    elif dt.kind == "f" and isinstance(x, complex):
        x = x.real
    if dt == _F16 and isinstance(x, (int, float)) and not isinstance(x, bool):
        with numpy.errstate(over="ignore"):  # NumPy rounds the scalar to float16 first (65535 -> inf)
            x = float(numpy.float16(x))
    if scalar_ok and not isinstance(x, bool):
        return x
    return torch.tensor(x, dtype=storage_dtype(dt), device=current_torch_device())


_F16 = numpy.dtype(numpy.float16)
_RANGES: dict[numpy.dtype, tuple[int, int]] = {}


def _check_int_range(x: int, dt: numpy.dtype) -> None:
    lim = _RANGES.get(dt)
    if lim is None:
        info = numpy.iinfo(dt)
        lim = _RANGES[dt] = (int(info.min), int(info.max))
    if not lim[0] <= x <= lim[1]:
        raise OverflowError(f"Python integer {x} out of bounds for {dt}")


# For a Python int beyond the array's integer range, NumPy 2 compares by value: the answer is constant.
# Kernels for ufuncs whose uint64 loop differs from the int64 one that its bit pattern would get (filled by _ufuncs).
UINT64_KERNELS: dict[str, Any] = {}
_CMP_OOB = {"less": (True, False), "less_equal": (True, False), "greater": (False, True),
            "greater_equal": (False, True), "equal": (False, False), "not_equal": (True, True)}
_SWAP = {"less": "greater", "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal",
         "equal": "equal", "not_equal": "not_equal"}


def _compare_out_of_range(name: str, args: Any) -> Optional[torch.Tensor]:
    """``array OP int`` as a constant bool tensor when the int lies outside the array's integer range."""
    arr, val = args
    if not isinstance(arr, ndarray):
        arr, val, name = val, arr, _SWAP[name]
    if not isinstance(arr, ndarray) or type(val) is not int or arr._dtype.kind not in "iu":
        return None
    info = numpy.iinfo(arr._dtype)
    if info.min <= val <= info.max:
        return None
    above = val > info.max
    const = _CMP_OOB[name][0] if above else _CMP_OOB[name][1]
    return torch.full(arr._t.shape, const, dtype=torch.bool, device=arr._t.device)


def _broadcast_error(args: Any, exc: Exception) -> Exception:
    """NumPy's error for operands that do not broadcast together (scalars as ``()``), else ``exc``."""
    shapes = [operand_shape(a) for a in args]
    return operands_error(shapes) if broadcast(shapes) is None else exc


def reduceat(uf: Any, array: Any, indices: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
    """Reductions over ``array[indices[k]:indices[k+1]]`` along ``axis`` (``array[indices[k]]`` when the
    slice is empty), in the input's dtype unless ``dtype`` is given (NumPy's rules)."""
    from ascend_compat.cupy._manipulation import concatenate, normalize_axis

    if uf.nin != 2:
        raise ValueError("reduceat only supported for binary functions")
    a = asarray(array)
    ax = normalize_axis(axis, a.ndim)
    idx = [int(i) for i in (indices.get() if isinstance(indices, ndarray) else numpy.asarray(indices)).ravel()]
    n = a.shape[ax]
    if any(i < 0 or i >= n for i in idx):
        raise IndexError(f"index out of bounds for axis {ax} with size {n}")
    head = (slice(None),) * ax
    # the dtype reduce gives (int8 -> int64 for add, as NumPy), unless ``dtype`` is given
    dt = uf.reduce(a[(*head, slice(0, 1))], axis=ax).dtype if dtype is None else _dtypes.to_numpy_dtype(dtype)
    parts = []
    for k, i in enumerate(idx):
        j = idx[k + 1] if k + 1 < len(idx) else n
        if i < j:
            parts.append(uf.reduce(a[(*head, slice(i, j))], axis=ax, dtype=dt, keepdims=True).astype(dt))
        else:
            parts.append(a[(*head, slice(i, i + 1))].astype(dt))
    res = concatenate(parts, axis=ax) if parts else a[(*head, slice(0, 0))].astype(dt)
    if out is not None:
        out[...] = res
        return out
    return res


_SCATTER_REDUCE = {"add": "sum", "subtract": "sum", "maximum": "amax", "minimum": "amin"}


def _scatter_at(name: str, a: ndarray, indices: Any, b: Any) -> None:
    """``add/subtract/maximum/minimum.at`` as one torch scatter-reduce over the flat positions ``indices`` pick."""
    t = a._t
    flat_idx = _wrap(torch.arange(a.size, device=t.device).reshape(a.shape))[indices]._t
    vals = asarray(b) if not isinstance(b, ndarray) else b
    bt = cast_tensor(vals._t, vals._dtype, a._dtype).to(t.device)
    try:
        bt = bt.broadcast_to(flat_idx.shape).reshape(-1)
    except RuntimeError:
        raise ValueError(f"array is not broadcastable to correct shape: {vals.shape} into {tuple(flat_idx.shape)}") \
            from None
    if name == "subtract":
        bt = -bt
    flat = t.contiguous().view(-1)
    flip = a._dtype == _dtypes.UINT64 and name != "add" and name != "subtract"
    if flip:  # uint64 held as its int64 bit pattern: flipping the top bit makes signed order the unsigned one
        flat, bt = flat ^ _INT64_MIN, bt ^ _INT64_MIN
    flat.scatter_reduce_(0, flat_idx.reshape(-1), bt, _SCATTER_REDUCE[name], include_self=True)
    if flip:
        flat ^= _INT64_MIN
    if a._dtype in WRAP_MASK:  # uint16/uint32 held widened: wrap sums back into range
        flat &= WRAP_MASK[a._dtype]
    if flat.data_ptr() != t.data_ptr() or flip:
        t.copy_(flat.view(t.shape))


_INT64_MIN = -(2**63)


def _as_dev(x: Any) -> Any:
    if isinstance(x, numpy.ndarray):
        raise TypeError("Unsupported type <class 'numpy.ndarray'>")
    return x if isinstance(x, (ndarray, *_SCALARS, bool, numpy.generic)) else asarray(x)


def device_of(args: Any) -> torch.device:
    """The device a ufunc on ``args`` computes on: its first array's, else the current one."""
    for a in args:
        if isinstance(a, ndarray):
            return a._t.device
    return current_torch_device()


def _span(t: torch.Tensor) -> int:
    """Bytes from ``t``'s first element to the end of its last (torch strides are never negative)."""
    last = 0
    for n, s in zip(t.shape, t.stride()):
        last += (n - 1) * s
    return (last + 1) * t.element_size()


def unalias(ins: Any, out: torch.Tensor) -> Any:
    """``ins`` with every tensor that shares memory with ``out`` (other than element for element) copied.

    A kernel writing into ``out`` while reading such an input would read elements it already overwrote
    (``a += a.T``); NumPy and CuPy give the result of copying the input first. Only overlapping byte ranges
    count (distinct allocations never overlap), so the common case costs a few pointer comparisons.
    """
    lo = out.data_ptr()
    hi = -1
    res = None
    i = -1
    for t in ins:
        i += 1
        if t is out or (type(t) is not _Tensor and not isinstance(t, _Tensor)):
            continue
        p = t.data_ptr()
        # disjoint byte ranges (the common case): only the range of the one starting first needs measuring
        if p >= lo:
            if hi < 0:
                hi = lo + (out.nbytes if out.is_contiguous() else _span(out))
            if p >= hi:
                continue
        elif p + (t.nbytes if t.is_contiguous() else _span(t)) <= lo:
            continue
        if t.numel() == 0 or (p == lo and t.stride() == out.stride() and t.shape == out.shape and
                              t.dtype == out.dtype):
            continue  # element i is read before element i is written: no copy needed
        if res is None:
            res = list(ins)
        res[i] = t.clone()
    return ins if res is None else res


_Tensor = torch.Tensor
