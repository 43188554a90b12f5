"""Indexing: ``__getitem__``/``__setitem__`` (basic, advanced, boolean; negative steps), take/put/choose/where,
nonzero/compress, ``ix_``, ``r_``/``c_``, index helpers."""

from __future__ import annotations

import math
import operator
import types
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy._core import _root, _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._dtypes import cast_tensor, to_numpy_dtype
from ascend_compat.cupy._manipulation import concatenate, normalize_axis

_BASIC = (int, slice, type(None), type(Ellipsis))


def _index_tensor(x: Any, device: torch.device) -> Any:
    if not isinstance(x, ndarray) and hasattr(x, "__cupy_get_ndarray__"):
        x = x.__cupy_get_ndarray__()
    elif isinstance(x, list) and any(isinstance(v, ndarray) or hasattr(v, "__cupy_get_ndarray__") for v in x):
        x = asarray(x)  # a list of device arrays is one (stacked) index array
    if isinstance(x, ndarray):
        if x._dtype.kind == "b":
            return x._t
        if x._dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        return x._t if x._t.dtype == torch.int64 else x._t.to(torch.int64)
    if isinstance(x, (list, numpy.ndarray)):
        arr = numpy.asarray(x)
        if arr.size == 0 and arr.dtype.kind == "f" and isinstance(x, list):  # [] is an empty integer index
            arr = arr.astype(numpy.int64)
        if arr.dtype.kind not in "iub":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        return torch.from_numpy(arr if arr.dtype.kind == "b" else arr.astype(numpy.int64)).to(device)
    if isinstance(x, numpy.integer):
        return int(x)
    if isinstance(x, (numpy.bool_, bool)):
        return bool(x)
    if isinstance(x, float) or isinstance(x, numpy.floating):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
                         "boolean arrays are valid indices")
    return x


def _prepare(t: torch.Tensor, key: Any) -> tuple[torch.Tensor, Any, bool]:
    """The tensor (negative-step dimensions flipped) and a torch-compatible key; third: whether it is basic."""
    if not isinstance(key, tuple):
        key = (key,)
    basic = all(type(k) in _BASIC for k in key)
    if basic and not any(type(k) is slice and k.step is not None and k.step < 0 for k in key):
        return t, key, True
    dev = t.device
    # device integer arrays wrap out-of-range entries, as CuPy's kernels do (no bounds check on the device)
    wraps = [isinstance(k, ndarray) and k._dtype.kind in "iu" for k in key]
    key = tuple(_index_tensor(k, dev) for k in key)
    if any(isinstance(k, torch.Tensor) and k.dtype == torch.bool and k.numel() == 0 for k in key):
        key = _empty_masks_as_ints(key, tuple(t.shape))
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(0 if isinstance(k, bool) else 1 if not isinstance(k, torch.Tensor) or k.dtype != torch.bool
               else k.dim() for k in key if k is not None and k is not Ellipsis)
    if used > t.dim():
        raise IndexError(f"too many indices for array: array is {t.dim()}-dimensional, but {used} were indexed")
    flips, out, dim = [], [], 0
    for pos, k in enumerate(key):
        if pos < len(wraps) and wraps[pos] and t.dim() > dim and t.shape[dim]:
            k = k % t.shape[dim]
        if k is Ellipsis:
            dim += t.dim() - used
        elif k is None or isinstance(k, bool):
            pass
        elif type(k) is slice and k.step is not None and k.step < 0:
            n = t.shape[dim]
            start, stop, step = k.indices(n)
            flips.append(dim)
            k = slice(n - 1 - start, n - 1 - stop if stop >= -1 else None, -step)
            dim += 1
        elif isinstance(k, torch.Tensor) and k.dtype == torch.bool:
            dim += k.dim()
        else:
            dim += 1
        out.append(k)
    if flips:
        t = t.flip(flips)
    return t, tuple(out), False


def _empty_masks_as_ints(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """NumPy reads an empty boolean index as empty integer indices, one per mask dimension (each mask dimension
    must be 0 or match the array's)."""
    out: list[Any] = []
    dim: Optional[int] = 0
    for k in key:
        is_mask = isinstance(k, torch.Tensor) and k.dtype == torch.bool
        if is_mask and k.numel() == 0:
            if dim is not None and any(n not in (0, shape[dim + i]) for i, n in enumerate(k.shape)
                                       if dim + i < len(shape)):
                raise IndexError(f"boolean index of shape {tuple(k.shape)} did not match the indexed array "
                                 f"of shape {shape} at axis {dim}")
            out.extend(torch.zeros(0, dtype=torch.int64, device=k.device) for _ in range(max(k.dim(), 1)))
        else:
            out.append(k)
        if k is Ellipsis:
            dim = None  # positions after an ellipsis are not checked here (torch checks them)
        elif dim is not None and k is not None and not isinstance(k, bool):
            dim += k.dim() if is_mask else 1
    return tuple(out)


def getitem(a: ndarray, key: Any) -> ndarray:
    t, k, basic = _prepare(a._t, key)
    try:
        r = t[k]
    except IndexError:
        raise
    except RuntimeError as exc:
        raise IndexError(str(exc)) from None
    return _wrap(r, a._dtype, base=_root(a) if basic else None)


def _value_tensor(a: ndarray, value: Any) -> Any:
    if not isinstance(value, ndarray) and hasattr(value, "__cupy_get_ndarray__"):
        value = value.__cupy_get_ndarray__()
    if isinstance(value, ndarray):
        return cast_tensor(value._t, value._dtype, a._dtype) if value._dtype != a._dtype else value._t
    if isinstance(value, (bool, int, float, complex, numpy.generic)) and a._dtype not in _dtypes.WIDENED:
        if a._dtype.kind in "iub" and not isinstance(value, (int, bool, numpy.integer, numpy.bool_)):
            return torch.tensor(numpy.asarray(value).astype(a._dtype).item(), device=a._t.device)
        if a._dtype.kind == "f" and isinstance(value, complex):
            return value.real
        return value.item() if isinstance(value, numpy.generic) else value
    host = numpy.asarray(value)
    if host.dtype.kind in "OSU":
        raise TypeError(f"cannot assign {type(value).__name__} to an array of {a._dtype}")
    v = asarray(host.astype(a._dtype) if host.dtype != a._dtype else host)
    return v._t


def setitem(a: ndarray, key: Any, value: Any) -> None:
    v = _value_tensor(a, value)
    t, k, basic = _prepare(a._t, key)  # noqa: RUF059
    if t is not a._t:  # negative steps: write through the flat positions the key selects
        pos = _wrap(torch.arange(a.size, device=a._t.device).reshape(a.shape))[key]._t
        flat = a._t.view(-1) if a._t.is_contiguous() else None
        target = flat if flat is not None else a._t.reshape(-1).clone()
        vt = v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=a._t.dtype, device=a._t.device)
        target.index_put_((pos.reshape(-1),), vt.to(a._t.dtype).expand(pos.shape).reshape(-1))
        if flat is None:
            a._t.copy_(target.reshape(a.shape))
        return
    try:
        t[k] = v
    except RuntimeError as exc:
        if isinstance(v, torch.Tensor) and v.dim() and v.shape[0] == 1:
            setitem(a, key, _wrap(v.squeeze(0), a._dtype))
            return
        raise ValueError(f"could not broadcast input array: {exc}") from None


def take(a: Any, indices: Any, axis: Optional[int] = None, out: Any = None, mode: str = "raise") -> ndarray:
    a = asarray(a)
    t = a._t.reshape(-1) if axis is None or a.ndim == 0 else a._t
    ax = 0 if axis is None else normalize_axis(axis, max(a.ndim, 1))  # a 0-d array takes as 1-d (NumPy)
    idx = indices._t if isinstance(indices, ndarray) else torch.as_tensor(numpy.asarray(indices), device=t.device)
    n = t.shape[ax]
    idx = idx.to(torch.int64)
    if mode == "clip":
        idx = idx.clamp(0, n - 1)
    elif mode == "wrap" or n:
        idx = idx % n if n else idx
    r = torch.index_select(t, ax, idx.reshape(-1)).reshape(t.shape[:ax] + idx.shape + t.shape[ax + 1:])
    res = _wrap(r, a._dtype)
    if out is not None:
        if not isinstance(out, ndarray):
            raise TypeError("take: out must be an ascend_compat.cupy.ndarray")
        if out.shape != res.shape:
            raise ValueError(f"take: output array of shape {out.shape} does not match the result's {res.shape}")
        if out.dtype != res.dtype:
            raise TypeError(f"take: output array dtype {out.dtype} differs from the result's {res.dtype}")
        out[...] = res
        return out
    return res


def take_along_axis(arr: Any, indices: Any, axis: Optional[int]) -> ndarray:
    a, idx = asarray(arr), asarray(indices)
    if axis is None:
        a, axis = a.ravel(), 0
    if idx.ndim != a.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ax = normalize_axis(axis, a.ndim)
    it = idx._t.to(torch.int64) % max(a.shape[ax], 1)
    shape = list(torch.broadcast_shapes(tuple(a._t.shape[:ax]) + (1,) + tuple(a._t.shape[ax + 1:]),  # noqa: RUF005
                                        tuple(it.shape[:ax]) + (1,) + tuple(it.shape[ax + 1:])))  # noqa: RUF005
    src = a._t.expand(shape[:ax] + [a.shape[ax]] + shape[ax + 1:])  # noqa: RUF005
    it = it.expand(shape[:ax] + [it.shape[ax]] + shape[ax + 1:])  # noqa: RUF005
    return _wrap(torch.gather(src, ax, it), a._dtype)


def put_along_axis(arr: ndarray, indices: Any, values: Any, axis: Optional[int]) -> None:
    idx = asarray(indices)
    target = arr.ravel() if axis is None else arr
    ax = 0 if axis is None else normalize_axis(axis, arr.ndim)
    it = idx._t.to(torch.int64) % max(target.shape[ax], 1)
    v = _value_tensor(arr, values)
    vt = (v if isinstance(v, torch.Tensor) else torch.tensor(v, device=arr._t.device)).to(arr._t.dtype)
    target._t.scatter_(ax, it, vt.expand(it.shape))


def put(a: ndarray, ind: Any, v: Any, mode: str = "wrap") -> None:
    if not isinstance(a, ndarray):
        raise TypeError("put() needs an ascend_compat.cupy.ndarray as its first argument")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    idx = asarray(ind)._t.reshape(-1).to(torch.int64)
    n = a.size
    if mode == "raise" and bool(((idx < -n) | (idx >= n)).any()):
        raise IndexError("index out of range for array")
    idx = idx.clamp(0, n - 1) if mode == "clip" else idx % max(n, 1)
    vt = _value_tensor(a, v)
    vt = (vt if isinstance(vt, torch.Tensor) else torch.tensor(vt, device=a._t.device)).to(a._t.dtype).reshape(-1)
    if idx.numel() == 0 or vt.numel() == 0:
        return
    vals = vt.repeat(-(-idx.numel() // max(vt.numel(), 1)))[: idx.numel()]
    flat = a._t.view(-1) if a._t.is_contiguous() else a._t.reshape(-1).clone()
    flat.index_put_((idx,), vals)
    if not a._t.is_contiguous():
        a._t.copy_(flat.reshape(a.shape))


def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> ndarray:
    from ascend_compat.cupy._manipulation import broadcast_arrays, stack

    idx = asarray(a)
    cs = [asarray(c) for c in choices] if not isinstance(choices, ndarray) else list(choices)
    n = len(cs)
    if mode == "raise" and bool(((idx._t < 0) | (idx._t >= n)).any()):
        raise ValueError("invalid entry in choice array")
    it = idx._t.to(torch.int64)
    it = it.clamp(0, n - 1) if mode == "clip" else it % n
    arrs = broadcast_arrays(_wrap(it), *cs)
    st = stack(arrs[1:])
    r = _wrap(torch.gather(st._t, 0, arrs[0]._t.unsqueeze(0)).squeeze(0), st._dtype)
    if out is not None:
        out[...] = r
        return out
    return r


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    from ascend_compat.cupy._ufunc import _key, _operand

    c = asarray(condition)._t != 0
    keys = [_key(v) for v in (x, y)]
    dt = numpy.result_type(*[k if isinstance(k, numpy.dtype) else v for k, v in zip(keys, (x, y))])
    dt = to_numpy_dtype(dt)
    tx, ty = (_operand(v, dt, False) for v in (x, y))
    return _wrap(torch.where(c, tx, ty), dt)


def mask_indices(n: int, mask_func: Any, k: int = 0) -> tuple[ndarray, ...]:
    """The indices of the non-zero entries of ``mask_func(ones((n, n)), k)``."""
    from ascend_compat.cupy._creation import ones

    return nonzero(mask_func(ones((n, n), dtype=int), k) != 0)


def nonzero(a: Any) -> tuple[ndarray, ...]:
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    return tuple(_wrap(i) for i in torch.nonzero(a._t, as_tuple=True))


def flatnonzero(a: Any) -> ndarray:
    return _wrap(torch.nonzero(asarray(a)._t.reshape(-1), as_tuple=True)[0])


def argwhere(a: Any) -> ndarray:
    a = asarray(a)
    t = a._t.reshape(1) if a.ndim == 0 else a._t
    r = torch.nonzero(t)
    return _wrap(r[:, :0] if a.ndim == 0 else r)


def compress(condition: Any, a: Any, axis: Optional[int] = None, out: Any = None) -> ndarray:
    a = asarray(a)
    c = asarray(condition)._t.reshape(-1) != 0
    t = a._t.reshape(-1) if axis is None else a._t
    ax = 0 if axis is None else normalize_axis(axis, a.ndim)
    if c.numel() > t.shape[ax]:
        raise IndexError(f"index {c.numel() - 1} is out of bounds for axis {ax} with size {t.shape[ax]}")
    sel = torch.nonzero(c, as_tuple=True)[0]
    return _wrap(torch.index_select(t, ax, sel), a._dtype)


def extract(condition: Any, arr: Any) -> ndarray:
    return asarray(arr).ravel()[asarray(condition).ravel() != 0]


def place(arr: ndarray, mask: Any, vals: Any) -> None:
    m = asarray(mask)._t.reshape(-1) != 0
    n = int(m.sum())
    if n == 0:
        return
    v = asarray(vals)
    if v.size == 0:
        raise ValueError("Cannot insert from an empty array!")
    vt = cast_tensor(v._t.reshape(-1), v._dtype, arr._dtype)
    flat = arr._t.view(-1)
    flat[m] = vt.repeat(-(-n // vt.numel()))[:n]


def putmask(a: ndarray, mask: Any, values: Any) -> None:
    m = asarray(mask)._t != 0
    v = asarray(values)
    vt = cast_tensor(v._t, v._dtype, a._dtype)
    if vt.shape != a._t.shape:
        vt = vt.reshape(-1).repeat(-(-a.size // max(vt.numel(), 1)))[: a.size].reshape(a.shape)
    a._t.copy_(torch.where(m, vt, a._t))


def select(condlist: Any, choicelist: Any, default: Any = 0) -> ndarray:
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    res = where(condlist[-1], choicelist[-1], default)
    for c, v in zip(condlist[-2::-1], choicelist[-2::-1]):
        res = where(c, v, res)
    return res


def ix_(*args: Any) -> tuple[ndarray, ...]:
    out = []
    nd = len(args)
    for i, x in enumerate(args):
        a = asarray(x)
        if a.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if a._dtype.kind == "b":
            a = nonzero(a)[0]
        out.append(a.reshape((1,) * i + (-1,) + (1,) * (nd - i - 1)))
    return tuple(out)


def indices(dimensions: Any, dtype: Any = int, sparse: bool = False) -> Any:
    dims = tuple(dimensions)
    dt = to_numpy_dtype(dtype)
    dev = current_torch_device()
    grids = [torch.arange(n, device=dev).reshape((1,) * i + (n,) + (1,) * (len(dims) - i - 1))
             for i, n in enumerate(dims)]
    if sparse:
        return tuple(_wrap(cast_tensor(g, _dtypes.INT64, dt), dt) for g in grids)
    full = torch.stack([g.expand(dims) for g in grids]) if dims else torch.zeros((0,), dtype=torch.int64, device=dev)
    return _wrap(cast_tensor(full, _dtypes.INT64, dt), dt)


def _index_order(order: Any) -> str:
    order = "C" if order is None else str(order).upper()
    if order not in ("C", "F"):
        raise ValueError(f"only 'C' or 'F' order is permitted, got {order!r}")
    return order


def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple[ndarray, ...]:
    """The coordinate arrays of flat ``indices`` into an array of ``shape``."""
    order = _index_order(order)
    idx = asarray(indices)
    if idx._dtype.kind not in "iub":
        raise TypeError(f"only int indices permitted, got {idx._dtype}")
    t = idx._t.to(torch.int64)
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(shape)
    size = int(numpy.prod(shape))
    if bool(((t < 0) | (t >= size)).any()):
        raise ValueError("invalid entry in index array")
    dims = list(shape) if order == "C" else list(shape)[::-1]
    out = []
    for n in reversed(dims):
        out.append(t % n)
        t = t // n
    out = out[::-1] if order == "C" else out
    return tuple(_wrap(o) for o in out)


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> ndarray:
    """Flat indices of the coordinate arrays ``multi_index`` into an array of shape ``dims``."""
    order = _index_order(order)
    if any(not isinstance(d, (int, numpy.integer)) for d in dims):
        raise TypeError("dims must be integers")
    dims = tuple(int(d) for d in dims)
    arrs = [asarray(m) for m in multi_index]
    if len(arrs) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    if any(m._dtype.kind not in "iub" for m in arrs):
        raise TypeError("only int indices permitted")
    if math.prod(dims) > 2**63 - 1:
        raise ValueError("invalid dims: array size defined by dims is larger than the maximum possible size")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if any(m not in ("raise", "wrap", "clip") for m in modes):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    idx = [m._t.to(torch.int64) for m in arrs]
    res = torch.zeros(torch.broadcast_shapes(*[i.shape for i in idx]), dtype=torch.int64, device=idx[0].device)
    order_dims = range(len(dims)) if order == "C" else range(len(dims) - 1, -1, -1)
    for d in order_dims:
        i, n, m = idx[d], dims[d], modes[d]
        if m == "raise" and bool(((i < 0) | (i >= n)).any()):
            raise ValueError("invalid entry in coordinates array")
        i = i.clamp(0, n - 1) if m == "clip" else i % n
        res = res * n + i
    return _wrap(res)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> ndarray:
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    t = torch.diagonal(a._t, offset, normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim))
    return _wrap(t, a._dtype, base=_root(a))


def diag_indices(n: int, ndim: int = 2) -> tuple[ndarray, ...]:
    idx = _wrap(torch.arange(max(int(n), 0), device=current_torch_device()))
    return (idx,) * ndim


def diag_indices_from(arr: Any) -> tuple[ndarray, ...]:
    a = asarray(arr)
    if a.ndim < 2 or len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(a.shape[0], a.ndim)


def _tri_indices(n: int, k: int, m: Optional[int], upper: bool) -> tuple[ndarray, ndarray]:
    m = n if m is None else m
    dev = current_torch_device()
    r = torch.triu_indices(n, m, k, device=dev) if upper else torch.tril_indices(n, m, k, device=dev)
    return _wrap(r[0]), _wrap(r[1])


def tril_indices(n: int, k: int = 0, m: Optional[int] = None) -> tuple[ndarray, ndarray]:
    return _tri_indices(n, k, m, upper=False)


def triu_indices(n: int, k: int = 0, m: Optional[int] = None) -> tuple[ndarray, ndarray]:
    return _tri_indices(n, k, m, upper=True)


def tril_indices_from(arr: Any, k: int = 0) -> tuple[ndarray, ndarray]:
    a = arr  # an object without .ndim raises AttributeError, as in NumPy
    if a.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(a.shape[-2], k, a.shape[-1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple[ndarray, ndarray]:
    a = arr  # an object without .ndim raises AttributeError, as in NumPy
    if a.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(a.shape[-2], k, a.shape[-1])


def fill_diagonal(a: ndarray, val: Any, wrap: bool = False) -> None:
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    step = 1 + sum(int(numpy.prod(a.shape[i + 1:])) for i in range(a.ndim - 1))
    end = a.size if wrap or a.ndim > 2 else a.shape[1] * a.shape[1]
    flat = a.ravel()
    sel = _wrap(torch.arange(0, min(end, a.size), step, device=a._t.device))
    v = asarray(val).ravel()
    put(flat, sel, v)
    if flat._t.data_ptr() != a._t.data_ptr():
        a[...] = flat.reshape(a.shape)


class _AxisConcatenator:
    def __init__(self, axis: int, matrix_cols: bool) -> None:
        self.axis, self.cols = axis, matrix_cols

    def __getitem__(self, key: Any) -> ndarray:
        items = key if isinstance(key, tuple) else (key,)
        parts = []
        for it in items:
            if isinstance(it, slice):
                step = it.step
                if isinstance(step, complex):
                    from ascend_compat.cupy._creation import linspace

                    parts.append(linspace(it.start or 0, it.stop, int(abs(step))))
                else:
                    from ascend_compat.cupy._creation import arange

                    parts.append(arange(it.start or 0, it.stop, step or 1))
            elif isinstance(it, str):
                raise NotImplementedError("string directives in r_/c_ are not supported")
            else:
                a = asarray(it)
                parts.append(a.reshape(1) if a.ndim == 0 else a)
        if self.cols:
            parts = [p.reshape(-1, 1) if p.ndim == 1 else p for p in parts]
        return concatenate(parts, axis=self.axis)

    def __len__(self) -> int:
        return 0


r_ = _AxisConcatenator(0, False)
c_ = _AxisConcatenator(-1, True)
# CuPy's module path for the class (``cupy._indexing.generate.AxisConcatenator``).
generate = types.SimpleNamespace(AxisConcatenator=_AxisConcatenator)

__all__ = [
    "argwhere",
    "c_",
    "choose",
    "compress",
    "diag_indices",
    "diag_indices_from",
    "diagonal",
    "extract",
    "fill_diagonal",
    "flatnonzero",
    "indices",
    "ix_",
    "mask_indices",
    "nonzero",
    "place",
    "put",
    "put_along_axis",
    "putmask",
    "r_",
    "ravel_multi_index",
    "select",
    "take",
    "take_along_axis",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "unravel_index",
    "where",
]
