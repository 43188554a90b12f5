"""``copyto``, ``delete``, ``a.flat``, multi-dimensional histograms, ``byteswap`` and CuPy's ``scatter_*`` methods."""

from __future__ import annotations

from typing import Any

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import cast_tensor
from ascend_compat.cupy._manipulation import broadcast_shapes, normalize_axis


def copyto(dst: ndarray, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """Copy ``src`` into ``dst`` (broadcasting), under NumPy's casting rule, where ``where`` is True."""
    if not isinstance(dst, ndarray):
        raise TypeError(f"copyto() argument 1 must be ascend_compat.cupy.ndarray, not {type(dst).__name__}")
    if isinstance(src, ndarray):
        probe: Any = numpy.empty(1, src._dtype)
    elif isinstance(src, numpy.ndarray) and src.ndim == 0:
        src = src[()]
        probe = src
    elif isinstance(src, numpy.ndarray):  # host data: NumPy's casting check, then a transfer
        probe = numpy.empty(1, src.dtype)
        src = asarray(src)
    else:
        probe = src
    numpy.copyto(numpy.empty(1, dst._dtype), probe, casting=casting)  # NumPy's own casting errors
    s = src if isinstance(src, ndarray) else asarray(numpy.asarray(src).astype(dst._dtype)
                                                    if not isinstance(src, (bool, int, float, complex)) else
                                                    numpy.array(src, dtype=dst._dtype))
    if broadcast_shapes(s.shape, dst.shape) != dst.shape:
        raise ValueError(f"could not broadcast input array from shape {s.shape} into shape {dst.shape}")
    st = cast_tensor(s._t, s._dtype, dst._dtype).expand(dst._t.shape)
    if isinstance(where, (bool, int, float, complex, numpy.generic)):  # a scalar mask: all or nothing
        if bool(where):
            dst._t.copy_(st)
        return
    w = asarray(where)
    if w._dtype.kind != "b":
        raise TypeError("where= must be a boolean array")
    if broadcast_shapes(w.shape, dst.shape) != dst.shape:
        raise ValueError(f"could not broadcast where mask from shape {w.shape} into shape {dst.shape}")
    dst._t.copy_(torch.where(w._t, st, dst._t))


def delete(arr: Any, obj: Any, axis: Any = None) -> ndarray:
    """A copy of ``arr`` without the entries ``obj`` selects along ``axis`` (NumPy's index rules)."""
    a = asarray(arr)
    if axis is None:
        a, ax = a.ravel(), 0
    else:
        ax = normalize_axis(axis, a.ndim)
    n = a.shape[ax]
    host_obj = obj.get() if isinstance(obj, ndarray) else obj
    keep = numpy.delete(numpy.arange(n), host_obj)
    idx = torch.as_tensor(keep, dtype=torch.int64, device=a._t.device)
    return _wrap(torch.index_select(a._t, ax, idx), a._dtype)


class flatiter:  # noqa: N801 (NumPy's name)
    """``a.flat``: the array as a flat sequence, readable and writable."""

    def __init__(self, base: ndarray) -> None:
        self.base = base
        self._pos = 0

    def _flat(self) -> ndarray:
        return self.base.ravel()

    @staticmethod
    def _check(key: Any) -> None:
        if isinstance(key, (bool, numpy.bool_)) or not isinstance(key, (int, numpy.integer, slice)):
            raise IndexError(f"unsupported iterator index: {key!r} (CuPy's flatiter takes integers and slices)")

    def __getitem__(self, key: Any) -> Any:
        self._check(key)
        return self._flat()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._check(key)
        flat = self.base.ravel()
        if isinstance(value, ndarray) and not isinstance(key, (int, numpy.integer)):
            n = flat[key].size
            value = value.ravel()
            if value.size and value.size != n:
                value = _wrap(value._t.repeat(-(-n // value.size))[:n], value._dtype)
        flat[key] = value
        if flat._t.data_ptr() != self.base._t.data_ptr():
            self.base[...] = flat.reshape(self.base.shape)

    def __iter__(self) -> flatiter:
        return self

    def __next__(self) -> ndarray:
        if self._pos >= self.base.size:
            raise StopIteration
        self._pos += 1
        return self._flat()[self._pos - 1]

    def __len__(self) -> int:
        return self.base.size

    def copy(self) -> ndarray:
        return self.base.flatten()


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool = False) -> tuple[ndarray, list[ndarray]]:
    from ascend_compat.cupy._creation import linspace

    if isinstance(sample, (list, tuple)):
        cols = [asarray(s).ravel() for s in sample]
    else:
        s = asarray(sample)
        cols = [s[:, i] for i in builtins_range(s.shape[1])] if s.ndim == 2 else [s.ravel()]
    d = len(cols)
    bins = [bins] * d if isinstance(bins, (int, numpy.integer)) else list(bins)
    if len(bins) != d:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    ranges = [None] * d if range is None else list(range)
    edges, index, nbins = [], None, []
    for i, (col, b, rg) in enumerate(zip(cols, bins, ranges)):
        x = cast_tensor(col._t, col._dtype, _dtypes.FLOAT64)
        if isinstance(b, (int, numpy.integer)):
            if b < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            lo, hi = (float(rg[0]), float(rg[1])) if rg is not None else (
                (float(x.min()), float(x.max())) if x.numel() else (0.0, 1.0))
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edge_dt = numpy.result_type(col._dtype, 1.0) if rg is None else numpy.dtype(numpy.float64)
            e = linspace(lo, hi, int(b) + 1).astype(edge_dt)  # NumPy: linspace of the sample's min/max
        else:
            e = asarray(b)
            if bool((e._t[1:] < e._t[:-1]).any()):
                raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
        et = cast_tensor(e._t, e._dtype, _dtypes.FLOAT64)
        k = torch.searchsorted(et, x.contiguous(), right=True) - 1
        k = torch.where(x == et[-1], et.numel() - 2, k)
        ok = (k >= 0) & (k < et.numel() - 1)
        nb = et.numel() - 1
        index = torch.where(ok, k, -1) if index is None else torch.where(ok & (index >= 0), index * nb + k, -1)
        edges.append(e)
        nbins.append(nb)
    total = int(numpy.prod(nbins))
    valid = index >= 0
    w = None if weights is None else asarray(weights)._t.reshape(-1).to(torch.float64)[valid]
    hist = torch.bincount(index[valid], w, total).to(torch.float64).reshape(nbins)
    if density:
        widths = [cast_tensor(ed._t, ed._dtype, _dtypes.FLOAT64).diff() for ed in edges]
        vol = widths[0]
        for wd in widths[1:]:
            vol = vol.unsqueeze(-1) * wd
        hist = hist / (hist.sum() * vol)
    return _wrap(hist), edges


builtins_range = range


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool = False) -> tuple[ndarray, ndarray, ndarray]:
    if (isinstance(bins, (list, tuple)) and len(bins) != 2) or isinstance(bins, ndarray):
        bins = [bins, bins]
    h, e = histogramdd([x, y], bins, range, weights, density)
    return h, e[0], e[1]


def byteswap(self: ndarray, inplace: bool = False) -> ndarray:
    swapped = asarray(self.get().byteswap())
    if inplace:
        self._t.copy_(swapped._t)
        return self
    return swapped


def _scatter(name: str) -> Any:
    def method(self: ndarray, slices: Any, value: Any) -> None:
        from ascend_compat.cupy import _ufuncs as U  # noqa: N812

        getattr(U, name).at(self, slices, value)
    method.__name__ = f"scatter_{name}"
    return method


def _install() -> None:
    ndarray.flat = property(flatiter)
    ndarray.byteswap = byteswap
    ndarray.scatter_add = _scatter("add")
    ndarray.scatter_max = _scatter("maximum")
    ndarray.scatter_min = _scatter("minimum")


def byte_bounds(a: ndarray) -> tuple[int, int]:
    """(low, high): the device addresses of the first byte and one past the last byte ``a`` can reach."""
    if not isinstance(a, ndarray):
        raise TypeError("byte_bounds() needs an ascend_compat.cupy.ndarray")
    low = a._t.data_ptr()
    if a.size == 0:
        return low, low
    span = sum((n - 1) * s for n, s in zip(a._t.shape, a._t.stride())) + 1
    return low, low + span * a._t.element_size()


_install()
__all__ = ["byte_bounds", "copyto", "delete", "flatiter", "histogram2d", "histogramdd"]
