"""Indexing: ``__getitem__``/``__setitem__`` (basic, advanced, boolean; negative steps), take/put/choose/where,
nonzero/compress, ``ix_``, ``r_``/``c_``, index helpers."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _core_flip, _dtypes
from ascend_compat.cupy._broadcast_errors import failure, input_into_error, operand_shape, shape_text
from ascend_compat.cupy._core import _root, _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import cast_tensor, to_numpy_dtype
from ascend_compat.cupy._indexing_keys import _advanced_block, _move_block, _prepare
from ascend_compat.cupy._manipulation import broadcast_shapes, normalize_axis
from ascend_compat.cupy._memory import read_first


def getitem(a: ndarray, key: Any) -> ndarray:
    t, k, basic = _prepare(a._t, key)
    if basic is None:  # negative steps: a view with negative strides
        return _core_flip.getitem(a, k)
    try:
        r = t[k]
    except IndexError:
        raise
    except RuntimeError as exc:
        raise IndexError(str(exc)) from None
    if not basic:
        block = _advanced_block(t.dim(), k)
        if block is not None:
            r = _move_block(r, *block).contiguous()
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
    if isinstance(v, torch.Tensor):
        v = read_first(v, a._t)
    t, k, basic = _prepare(a._t, key)
    if basic is None:  # negative steps: write into the view they select
        _core_flip.getitem(a, k)[...] = value
        return
    if t is not a._t:  # negative steps and advanced indices: write through the flat positions the key selects
        pos = _wrap(torch.arange(a.size, device=a._t.device).reshape(a.shape))[key]._t
        flat = a._t.view(-1) if a._t.is_contiguous() else None
        target = flat if flat is not None else a._t.reshape(-1).clone()
        vt = v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=a._t.dtype, device=a._t.device)
        target.index_put_((pos.reshape(-1),), vt.to(a._t.dtype).expand(pos.shape).reshape(-1))
        if flat is None:
            a._t.copy_(target.reshape(a.shape))
        return
    block = None if basic or not isinstance(v, torch.Tensor) or v.dim() == 0 else _advanced_block(t.dim(), k)
    if block is not None:  # ``v`` is laid out in NumPy's order of the result's dimensions: give it torch's
        shape = list(torch.zeros((), dtype=torch.uint8, device=t.device).expand(t.shape)[k].shape)
        src, dst, n = block
        shape[dst:dst] = [shape.pop(src) for _ in range(n)]
        v = _move_block(v.expand(shape), dst, src, n)
    try:
        t[k] = v
    except RuntimeError:
        if isinstance(v, torch.Tensor) and v.dim() and v.shape[0] == 1:
            setitem(a, key, _wrap(v.squeeze(0), a._dtype))
            return
        raise _assign_error(t, k, basic, v) from None


def _assign_error(t: torch.Tensor, k: Any, basic: bool, v: Any) -> Exception:
    """NumPy's error for ``t[k] = v`` where ``v`` does not broadcast to what ``k`` selects."""
    vs = tuple(getattr(v, "shape", ()))
    try:
        target = tuple(torch.zeros((), dtype=torch.uint8, device=t.device).expand(t.shape)[k].shape)
    except (IndexError, RuntimeError) as exc:
        return IndexError(str(exc))
    if basic:
        return input_into_error(vs, target)
    keys = k if isinstance(k, tuple) else (k,)
    if len(keys) == 1 and isinstance(keys[0], torch.Tensor) and keys[0].dtype == torch.bool \
            and keys[0].dim() == t.dim():
        return ValueError(f"boolean array indexing assignment cannot assign {math.prod(vs)} input values to the "
                          f"{target[0]} output values where the mask is true")
    return ValueError(f"shape mismatch: value array of shape {shape_text(vs)} could not be broadcast to indexing "
                      f"result of shape {shape_text(target)}")


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
    """``arr[..., indices, ...] = values`` along ``axis`` (flat with ``axis=None``), in place, as NumPy."""
    if not isinstance(arr, ndarray):
        raise TypeError("put_along_axis() needs an ascend_compat.cupy.ndarray as its first argument")
    if arr._is_flip:  # negative strides: into a scratch copy, written back
        _core_flip.rmw(arr, put_along_axis, indices, values, axis)
        return
    idx = asarray(indices)
    if idx._dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension")
        put(arr, idx, values)
        return
    if idx.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ax = normalize_axis(axis, arr.ndim)
    it = idx._t.to(torch.int64) % max(arr.shape[ax], 1)
    outer = [arr.shape[d] if d != ax else it.shape[d] for d in range(arr.ndim)]
    it = it.expand(list(torch.broadcast_shapes(tuple(it.shape), tuple(outer))))  # NumPy broadcasts indices to arr
    v = _value_tensor(arr, values)
    vt = (v if isinstance(v, torch.Tensor) else torch.tensor(v, device=arr._t.device)).to(arr._t.dtype)
    arr._t.scatter_(ax, it, vt.expand(it.shape))


def put(a: ndarray, ind: Any, v: Any, mode: str = "wrap") -> None:
    if not isinstance(a, ndarray):
        raise TypeError("put() needs an ascend_compat.cupy.ndarray as its first argument")
    if a._is_flip:  # negative strides: into a scratch copy, written back
        _core_flip.rmw(a, put, ind, v, mode)
        return
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
    try:
        return _wrap(torch.where(c, tx, ty), dt)
    except RuntimeError:
        err = failure((condition, x, y))  # NumPy's error where they do not broadcast
        if err is not None:
            raise err from None
        raise


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
    res = _wrap(torch.index_select(t, ax, sel), a._dtype)
    if out is None:
        return res
    if not isinstance(out, ndarray):
        raise TypeError("compress: out must be an ascend_compat.cupy.ndarray")
    if out.shape != res.shape:  # (its dtype is kept: the result is cast into it, as NumPy's)
        raise ValueError(f"compress: output array of shape {out.shape} does not match the result's {res.shape}")
    out[...] = res
    return out


def extract(condition: Any, arr: Any) -> ndarray:
    return asarray(arr).ravel()[asarray(condition).ravel() != 0]


def place(arr: ndarray, mask: Any, vals: Any) -> None:
    if getattr(arr, "_is_flip", False):  # negative strides: into a scratch copy, written back
        _core_flip.rmw(arr, place, mask, vals)
        return
    m = asarray(mask)._t.reshape(-1) != 0
    if m.numel() != arr.size:
        raise ValueError("place: mask and data must be the same size")
    n = int(m.sum())
    if n == 0:
        return
    v = asarray(vals)
    if v.size == 0:
        raise ValueError("Cannot insert from an empty array!")
    vt = cast_tensor(v._t.reshape(-1), v._dtype, arr._dtype)
    arr._t[m.reshape(arr._t.shape)] = vt.repeat(-(-n // vt.numel()))[:n]  # (C order, also for strided arrays)


def putmask(a: ndarray, mask: Any, values: Any) -> None:
    if getattr(a, "_is_flip", False):  # negative strides: into a scratch copy, written back
        _core_flip.rmw(a, putmask, mask, values)
        return
    m = asarray(mask)._t != 0
    if m.numel() != a.size:
        raise ValueError("putmask: mask and data must be the same size")
    m = m.reshape(a._t.shape)  # (NumPy's rule: the same size)
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
    if not numpy.isscalar(default):  # (CuPy's check, before the shapes')
        raise TypeError("default only accepts scalar values")
    broadcast_shapes(*(operand_shape(x) for x in (*condlist, *choicelist)))  # (NumPy's error when they clash)
    res = where(condlist[-1], choicelist[-1], default)
    for c, v in zip(condlist[-2::-1], choicelist[-2::-1]):
        res = where(c, v, res)
    return res


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> ndarray:
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    t = torch.diagonal(a._t, offset, normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim))
    return _core_flip.view_of(t, a)


# Index-generation routines live in _indexing_gen; their names stay importable from here.
from ascend_compat.cupy._indexing_gen import (  # noqa: E402
    c_,
    diag_indices,
    diag_indices_from,
    fill_diagonal,
    generate,  # noqa: F401 (CuPy path cupy._indexing.generate.AxisConcatenator)
    indices,
    ix_,
    mask_indices,
    r_,
    ravel_multi_index,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
    unravel_index,
)

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
