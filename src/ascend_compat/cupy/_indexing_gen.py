"""Index generation: ``indices``, ``ix_``, ``unravel_index``/``ravel_multi_index``, ``diag_indices*``,
``tril/triu_indices*``, ``fill_diagonal``, ``mask_indices`` and the ``r_``/``c_`` concatenators. Re-exported by
``_indexing``."""

from __future__ import annotations

import math
import operator
import types
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._dtypes import cast_tensor, to_numpy_dtype
from ascend_compat.cupy._manipulation import concatenate


def mask_indices(n: int, mask_func: Any, k: int = 0) -> tuple[ndarray, ...]:
    """The indices of the non-zero entries of ``mask_func(ones((n, n)), k)``."""
    from ascend_compat.cupy._creation import ones
    from ascend_compat.cupy._indexing import nonzero

    return nonzero(mask_func(ones((n, n), dtype=int), k) != 0)


def ix_(*args: Any) -> tuple[ndarray, ...]:
    out = []
    nd = len(args)
    for i, x in enumerate(args):
        a = asarray(x)
        if a.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if a._dtype.kind == "b":
            a = _wrap(torch.nonzero(a._t, as_tuple=True)[0])
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
    from ascend_compat.cupy._indexing import put

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


__all__ = ["c_", "diag_indices", "diag_indices_from", "fill_diagonal", "generate", "indices", "ix_", "mask_indices",
           "r_", "ravel_multi_index", "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from",
           "unravel_index"]
