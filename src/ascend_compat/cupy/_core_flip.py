"""Negative-stride views (``a[::-1]``, ``flip``, ``flipud``, ``fliplr``, ``rot90``) with NumPy's semantics.

torch has no negative strides, so such a view (a ``FlipView``, a subclass of ``ndarray``) keeps a positive-stride
torch view of the same memory (``_pv``) and the axes that run backwards (``_flips``). Its ``_t`` is
``_pv.flip(_flips)``: a fresh copy at every read, so reads always see the memory as it is. The copy is made as an
inference tensor: an in-place write into it, which would be lost, raises instead of vanishing silently. Writes go
through ``_pv``: ``write_back`` (a whole array), ``rmw`` (run an in-place function on a scratch copy and write it
back), ``setitem``. Views of a ``FlipView`` (slices, transposes, reshapes, ``real``/``imag``, ``view``) are mapped
back onto the memory by ``derive``; where no strided layout expresses them (NumPy would copy too) they are copies.
A layout here is (element offset, shape, signed element strides) over the storage of a tensor.
"""

from __future__ import annotations

import builtins
import operator
import threading
import weakref
from typing import Any, Callable, Optional

import numpy
import torch

from ascend_compat.cupy import _core
from ascend_compat.cupy._core import _wrap, ndarray

Layout = tuple[int, tuple[int, ...], tuple[int, ...]]
_BASIC_TYPES = (int, slice, type(None), type(Ellipsis))
_READS_LOCK = threading.Lock()


class FlipView(ndarray):
    """A view with negative strides: ``_pv`` (positive strides, same memory) read backwards along ``_flips``."""

    __slots__ = ("_flips", "_pv", "_reads")
    _is_flip = True
    _pv: torch.Tensor
    _flips: tuple[int, ...]
    _reads: list[weakref.ref[Any]]

    @property  # type: ignore[override]
    def _t(self) -> torch.Tensor:
        with torch.inference_mode():  # writes into this copy would be lost: make them raise
            c = self._pv.flip(self._flips).contiguous()  # (``_map`` reads views of it as C-ordered)
        st = c.untyped_storage()
        with _READS_LOCK:  # (two threads' reads: neither record may be lost, or its views become copies)
            reads = [r for r in self._reads if r() is not None]
            reads.append(weakref.ref(st))
            self._reads = reads
        _core._READ_COPIES.add(st)
        return c

    @_t.setter
    def _t(self, value: torch.Tensor) -> None:  # ``a.shape = ...`` of a negative-stride view
        raise AttributeError("Incompatible shape for in-place modification of a negative-stride view. Use "
                             "`.reshape()` to make a copy with the desired shape.")

    def __del__(self, _core: Any = _core) -> None:  # (the module, also while the interpreter shuts down)
        live = _core._FLIPS_LIVE
        if live:  # (None once the interpreter has cleared the module)
            _core._FLIPS_LIVE = live - 1

    # metadata from the memory's own view: reading ``_t`` would copy the data
    shape = property(lambda self: tuple(self._pv.shape), ndarray.shape.fset)  # type: ignore[attr-defined]
    ndim = property(lambda self: self._pv.dim())
    size = property(lambda self: self._pv.numel())
    nbytes = property(lambda self: self._pv.numel() * self._dtype.itemsize)

    def __len__(self) -> int:
        if self._pv.dim() == 0:
            raise TypeError("len() of unsized object")
        return int(self._pv.shape[0])

    @property
    def device(self) -> Any:
        from ascend_compat.cupy import cuda

        return cuda.Device(self._pv.device.index or 0)

    @property
    def strides(self) -> tuple[int, ...]:
        isz = self._dtype.itemsize
        return tuple(s * isz for s in layout(self)[2])

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._pv.device.type != "cuda":
            raise AttributeError("__cuda_array_interface__ exists only for arrays on CUDA devices; on "
                                 f"{self._pv.device.type} use DLPack (__dlpack__ / torch.from_dlpack) instead")
        return {"shape": self.shape, "typestr": self._dtype.str, "data": (first_ptr(self), False),
                "strides": self.strides, "version": 3}

    def toDlpack(self) -> Any:  # noqa: N802 (CuPy's name)
        raise BufferError("toDlpack() shares memory, and DLPack from torch cannot express negative strides: use "
                          "a.__dlpack__() (a copy) or ascontiguousarray(a) first")

    def set(self, arr: Any, stream: Any = None) -> None:
        rmw(self, ndarray.set, arr)

    def __setitem__(self, key: Any, value: Any) -> None:
        setitem(self, key, value)

    def __getitem__(self, key: Any) -> Any:
        return getitem(self, key)

    def __iter__(self) -> Any:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    @property
    def mT(self) -> ndarray:  # noqa: N802 (NumPy's name)
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    def view(self, dtype: Any = None, type: Any = None) -> ndarray:
        """As ``ndarray.view``; a dtype of another size needs the last axis contiguous (NumPy's rule)."""
        from ascend_compat.cupy import _methods
        from ascend_compat.cupy._dtypes import to_numpy_dtype

        an_array_type = isinstance(dtype, builtins.type) and issubclass(dtype, ndarray)
        if dtype is not None and not an_array_type and self.ndim and self.shape[-1] != 1 \
                and layout(self)[2][-1] != 1 and to_numpy_dtype(dtype).itemsize != self._dtype.itemsize:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        return _methods.view(self, dtype, type)


def layout(a: ndarray) -> Layout:
    """(element offset, shape, signed element strides) of ``a`` over its storage."""
    if type(a) is FlipView:
        pv, flips = a._pv, a._flips
        shape, st = tuple(pv.shape), list(pv.stride())
        off = int(pv.storage_offset())
        for d in flips:
            off += (shape[d] - 1) * st[d]
            st[d] = -st[d]
        return off, shape, tuple(st)
    t = a._t
    return int(t.storage_offset()), tuple(t.shape), tuple(t.stride())


def first_ptr(a: ndarray) -> int:
    """The device address of ``a``'s first element (what CuPy's ``a.data.ptr`` is)."""
    if type(a) is FlipView:
        return int(a._pv.data_ptr() + (layout(a)[0] - a._pv.storage_offset()) * a._pv.element_size())
    return int(a._t.data_ptr())


def memory_tensor(a: ndarray) -> torch.Tensor:
    """A tensor over exactly the memory of ``a`` (its elements in some order): for extents and overlaps."""
    return a._pv if type(a) is FlipView else a._t


def make(src: torch.Tensor, lay: Layout, dtype: numpy.dtype, base: Optional[ndarray]) -> ndarray:
    """An array of layout ``lay`` (in elements of ``src``'s dtype) over ``src``'s storage: a plain view when no
    stride is negative, else a ``FlipView``."""
    off, shape, strides = lay
    flips = tuple(d for d, s in enumerate(strides) if s < 0)
    if 0 in shape or not flips:
        return _wrap(src.as_strided(shape, tuple(abs(s) for s in strides), off if 0 not in shape else
                                    src.storage_offset()), dtype, base=base)
    for d in flips:
        off += (shape[d] - 1) * strides[d]
    v = object.__new__(FlipView)
    v._pv = src.as_strided(shape, tuple(abs(s) for s in strides), off)
    v._flips, v._reads, v._dtype, v._base = flips, [], dtype, base
    _core._FLIPS_LIVE += 1
    return v


def flip(a: ndarray, axes: tuple[int, ...]) -> ndarray:
    """``a`` read backwards along ``axes`` (a view, as NumPy's ``flip``)."""
    off, shape, strides = layout(a)
    st = list(strides)
    for d in axes:
        if shape[d]:
            off += (shape[d] - 1) * st[d]
        st[d] = -st[d]
    return make(_source(a), (off, shape, tuple(st)), a._dtype, _core._root(a))


def _source(a: ndarray) -> torch.Tensor:
    return a._pv if type(a) is FlipView else a._t


def is_basic(key: tuple[Any, ...]) -> bool:
    return all(type(k) in _BASIC_TYPES or (isinstance(k, numpy.integer) and not isinstance(k, numpy.bool_))
               for k in key)


def index_layout(lay: Layout, key: tuple[Any, ...]) -> Layout:
    """The layout of ``a[key]`` for a basic ``key`` (integers, slices of any step, None, one Ellipsis)."""
    off, shape, strides = lay
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed")
    full: list[Any] = []
    for k in key:
        full.extend([slice(None)] * (len(shape) - used) if k is Ellipsis else [k])
    if not n_ell:
        full.extend([slice(None)] * (len(shape) - used))
    new_shape: list[int] = []
    new_strides: list[int] = []
    dim = 0
    for k in full:
        if k is None:
            new_shape.append(1)
            new_strides.append(0)
            continue
        n, s = shape[dim], strides[dim]
        if type(k) is slice:
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            if length:
                off += start * s
            new_shape.append(length)
            new_strides.append(s * step)
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            off += (i % n) * s
        dim += 1
    return off, tuple(new_shape), tuple(new_strides)


def getitem(a: ndarray, key: Any) -> ndarray:
    """``a[key]``: basic keys give views (negative steps included); others a copy, as NumPy."""
    k = key if isinstance(key, tuple) else (key,)
    if is_basic(k):
        return make(_source(a), index_layout(layout(a), k), a._dtype, _core._root(a))
    from ascend_compat.cupy._indexing import getitem as plain_getitem

    return plain_getitem(_wrap(fresh(a), a._dtype), key)


def setitem(a: ndarray, key: Any, value: Any) -> None:
    """``a[key] = value`` for a negative-stride view: written through to its memory."""
    from ascend_compat.cupy._indexing import _value_tensor
    from ascend_compat.cupy._indexing import setitem as plain_setitem

    k = key if isinstance(key, tuple) else (key,)
    if not is_basic(k):
        rmw(a, plain_setitem, key, value)
        return
    v = getitem(a, k)
    if type(v) is not FlipView:
        plain_setitem(v, Ellipsis, value)
        return
    vt = _value_tensor(v, value)  # (cast as plain assignment casts)
    if not isinstance(vt, torch.Tensor):  # a scalar: the order of the elements does not matter
        v._pv.fill_(vt)
    elif vt.dtype == v._pv.dtype and vt.dim() <= v.ndim and all(n in (1, m) for n, m in zip(vt.shape[::-1],
                                                                                           v.shape[::-1])):
        v._pv.copy_(vt.expand(v.shape).flip(v._flips))
    else:  # other dtypes and shapes: plain assignment's rules (and errors), on a scratch copy
        rmw(v, plain_setitem, Ellipsis, value)


def fresh(a: ndarray) -> torch.Tensor:
    """A (writable, C-ordered) copy of the elements of ``a`` in its logical order."""
    return a._pv.flip(a._flips).contiguous()


def write_back(a: ndarray, t: torch.Tensor) -> None:
    """Write ``t`` (broadcastable to ``a``'s shape, ``a``'s storage dtype) into ``a``'s memory."""
    a._pv.copy_(t.to(a._pv.dtype).expand(a._pv.shape).flip(a._flips))


def rmw(a: ndarray, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(a, *args, **kwargs)`` for a function writing ``a`` in place: run on a scratch copy, written back when
    ``fn`` returns (nothing is written when it raises); returns ``fn``'s result, ``a`` where that is the copy."""
    s = _wrap(fresh(a), a._dtype)
    r = fn(s, *args, **kwargs)
    write_back(a, s._t)
    return a if r is s else r


def scratch_outs(outs: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[tuple[ndarray, ndarray]]]:
    """``outs`` with every ``FlipView`` replaced by a scratch copy, and the (view, copy) pairs to write back."""
    pairs: list[tuple[ndarray, ndarray]] = []
    res = []
    for o in outs:
        if type(o) is FlipView:
            s = _wrap(fresh(o), o._dtype)
            pairs.append((o, s))
            o = s
        res.append(o)
    return tuple(res), pairs


def view_of(t: torch.Tensor, a: ndarray, dtype: Optional[numpy.dtype] = None) -> ndarray:
    """The array for ``t``, a view made from ``a._t`` (base: the memory's owner; dtype: ``a``'s unless given)."""
    if a._is_flip:
        return derive(t, a, dtype)
    return _wrap(t, a._dtype if dtype is None else dtype, base=_core._root(a))


def derive(t: torch.Tensor, a: ndarray, dtype: Optional[numpy.dtype] = None) -> ndarray:
    """The array for ``t``, a tensor made from ``a._t`` by a view operation: a view of ``a``'s memory where a
    strided layout expresses it (as NumPy's view), else a copy (``t`` was one already, or NumPy would copy)."""
    dt = a._dtype if dtype is None else dtype
    st = t.untyped_storage()
    if not any(r() is st for r in a._reads):
        return _wrap(t.clone() if t.is_inference() else t, dt)
    lay = _map(t, a)
    if lay is None:
        return _wrap(t.clone(), dt)
    pv = a._pv
    src = pv if t.dtype == pv.dtype else torch.empty(0, dtype=t.dtype, device=pv.device).set_(pv.untyped_storage())
    return make(src, lay, dt, a._base)


def _merged(a: ndarray) -> list[tuple[int, int, int]]:
    """(size, byte stride in the contiguous copy, signed byte stride in memory) of the copy's dimensions and of
    its bytes, adjacent ones merged where both layouts allow it and length-1 ones dropped."""
    e = a._pv.element_size()
    _, shape, strides = layout(a)
    dims: list[tuple[int, int, int]] = []
    cb = e
    for n, s in reversed(list(zip(shape, strides))):
        dims.append((n, cb, s * e))
        cb *= n
    dims.reverse()
    dims.append((e, 1, 1))
    out: list[tuple[int, int, int]] = []
    for n, c, m in dims:
        if n == 1:
            continue
        if out and out[-1][2] == n * m:
            pn, _, _ = out[-1]
            out[-1] = (pn * n, c, m)
        else:
            out.append((n, c, m))
    return out


def _map(t: torch.Tensor, a: ndarray) -> Optional[Layout]:
    """``t``'s layout over ``a``'s memory when ``t`` (a strided view of the contiguous copy ``a._t``) is an affine
    image of it there; None otherwise."""
    dims = _merged(a)
    e = a._pv.element_size()
    total = a._pv.numel() * e
    et = t.element_size()
    o = int(t.storage_offset()) * et
    if not 0 <= o < total:
        return None

    def unravel(b: int) -> list[int]:
        return [(b // c) % n for n, c, _ in dims]

    m0 = unravel(o)
    lo, hi = list(m0), list(m0)
    tdims = [*zip(t.shape, (s * et for s in t.stride())), (et, 1)]
    deltas = []
    for n, s in tdims:
        if n <= 1:
            deltas.append([0] * len(dims))
            continue
        end = o + (n - 1) * s
        if not 0 <= end < total:
            return None
        d = []
        for j, x in enumerate(unravel(end)):
            q, r = divmod(x - m0[j], n - 1)
            if r:
                return None
            d.append(q)
            lo[j] += min(0, (n - 1) * q)
            hi[j] += max(0, (n - 1) * q)
        deltas.append(d)
    if any(lo[j] < 0 or hi[j] >= dims[j][0] for j in range(len(dims))):
        return None
    base = layout(a)[0] * e + sum(x * dims[j][2] for j, x in enumerate(m0))
    mapped = [sum(q * dims[j][2] for j, q in enumerate(d)) for d in deltas]
    if et > 1 and mapped[-1] != 1:  # the bytes of an element must stay in order
        return None
    if base % et or any(s % et for s in mapped[:-1]):
        return None
    return base // et, tuple(t.shape), tuple(s // et for s in mapped[:-1])


__all__ = ["FlipView", "derive", "first_ptr", "flip", "getitem", "layout", "make", "memory_tensor", "rmw",
           "scratch_outs", "setitem", "view_of", "write_back"]
