"""``copyto``, ``delete``, ``a.flat``, multi-dimensional histograms, ``byteswap`` and CuPy's ``scatter_*`` methods."""

from __future__ import annotations

from typing import Any, Callable, Literal

import numpy
import torch

from ascend_compat.cupy._broadcast_errors import broadcast, input_into_error, shape_text
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import cast_tensor
from ascend_compat.cupy._manipulation import normalize_axis
from ascend_compat.cupy._memory import read_first

#: NumPy's casting rules.
Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]


def copyto(dst: ndarray, src: Any, casting: Casting = "same_kind", where: Any = True) -> None:
    """Copy ``src`` into ``dst`` (broadcasting), under NumPy's casting rule, where ``where`` is True."""
    if not isinstance(dst, ndarray):
        raise TypeError(f"copyto() argument 1 must be ascend_compat.cupy.ndarray, not {type(dst).__name__}")
    if dst._is_flip:  # negative strides: into a scratch copy, written back
        from ascend_compat.cupy._core_flip import rmw

        rmw(dst, copyto, src, casting, where)
        return
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
    if s.ndim > dst.ndim and all(n == 1 for n in s.shape[:s.ndim - dst.ndim]):
        s = s.reshape(s.shape[s.ndim - dst.ndim:])  # NumPy drops leading length-1 dimensions of the source
    if broadcast((s.shape, dst.shape)) != dst.shape:
        raise input_into_error(s.shape, dst.shape)
    st = cast_tensor(s._t, s._dtype, dst._dtype).expand(dst._t.shape)
    if isinstance(where, (bool, int, float, complex, numpy.generic)):  # a scalar mask: all or nothing
        if bool(where):
            dst._t.copy_(read_first(st, dst._t))
        return
    w = asarray(where)
    if w.ndim > dst.ndim and all(n == 1 for n in w.shape[:w.ndim - dst.ndim]):
        w = w.reshape(w.shape[w.ndim - dst.ndim:])
    if w._dtype.kind != "b":
        raise TypeError("where= must be a boolean array")
    if broadcast((w.shape, dst.shape)) != dst.shape:
        raise ValueError(f"could not broadcast where mask from shape {shape_text(w.shape)} into shape "
                         f"{shape_text(dst.shape)}")
    dst._t.copy_(torch.where(w._t, st, dst._t))


def delete(arr: Any, obj: Any, axis: Any = None) -> ndarray:
    """A copy of ``arr`` without the entries ``obj`` selects along ``axis`` (NumPy's index rules)."""
    if not isinstance(arr, ndarray):  # as CuPy: host sequences are not converted implicitly
        raise ValueError(f"delete() needs an ascend_compat.cupy.ndarray, not {type(arr).__name__}")
    a = arr
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


builtins_range = range


def byteswap(self: ndarray, inplace: bool = False) -> ndarray:
    swapped = asarray(self.get().byteswap())
    if inplace:
        if self._is_flip:  # negative strides: written through to the memory
            self[...] = swapped
            return self
        self._t.copy_(swapped._t)
        return self
    return swapped


def _scatter(name: str) -> Callable[[ndarray, Any, Any], None]:
    def method(self: ndarray, slices: Any, value: Any) -> None:
        from ascend_compat.cupy import _ufuncs as U  # noqa: N812

        getattr(U, name).at(self, slices, value)
    method.__name__ = f"scatter_{name}"
    return method


def _install() -> None:
    # Methods defined here rather than in _core (which stays under its size budget), attached at import.
    methods = {"flat": property(flatiter), "byteswap": byteswap, "scatter_add": _scatter("add"),
               "scatter_max": _scatter("maximum"), "scatter_min": _scatter("minimum")}
    for name, value in methods.items():
        setattr(ndarray, name, value)


_install()
__all__ = ["copyto", "delete", "flatiter"]
