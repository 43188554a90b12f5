"""Shape manipulation: reshape, transpose, dimensions, broadcasting, joining and ``repeat`` (splitting is in
``_split``; tiling, flipping, rolling and resizing in ``_rearrange``)."""

from __future__ import annotations

import operator
from typing import Any, Optional, Union, cast

import numpy
import torch
from numpy.exceptions import AxisError

from ascend_compat.cupy._broadcast_errors import broadcast as _broadcast_of
from ascend_compat.cupy._broadcast_errors import shape_text
from ascend_compat.cupy._core import _root, _wrap, asarray, ndarray
from ascend_compat.cupy._core_flip import view_of
from ascend_compat.cupy._dtypes import cast_tensor, to_numpy_dtype

_Axis = Union[int, tuple[int, ...], None]


def normalize_axis(axis: Any, ndim: int) -> int:
    """``axis`` in ``[0, ndim)``; AxisError otherwise."""
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer") from None
    if not -ndim <= ax < ndim:
        raise AxisError(ax, ndim)
    return ax % ndim if ndim else 0


def normalize_axes(axis: _Axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(normalize_axis(a, ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    return axes


def _view(t: torch.Tensor, a: ndarray) -> ndarray:
    if t._is_view():
        return _wrap(t, a._dtype, base=_root(a))
    if a._is_flip:  # made from a negative-stride view's read copy (which tracks no views): mapped onto its memory
        return view_of(t, a)
    return _wrap(t, a._dtype, base=_root(a) if t.data_ptr() == a._t.data_ptr() and t.numel() else None)


def _new_shape(shape: Any, size: int) -> tuple[int, ...]:
    if isinstance(shape, (int, numpy.integer)):
        shape = (shape,)
    shape = tuple(operator.index(s) for s in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(s < -1 for s in shape):
        raise ValueError("negative dimensions not allowed")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def reshape(a: Any, newshape: Any = None, order: str = "C", *, shape: Any = None, copy: Any = None) -> ndarray:
    a = asarray(a)
    if isinstance(copy, str):
        raise ValueError("strings are not allowed for 'copy' keyword. Use True/False/None instead.")
    if copy:
        return reshape(a.copy(), newshape, order, shape=shape)
    order = order.upper() if isinstance(order, str) else "C"
    if order == "K":
        raise ValueError("order 'K' is not permitted for reshaping")
    target = _new_shape(shape if shape is not None else newshape, a.size)
    if len(target) > 64:
        raise ValueError(f"maximum supported dimension for an ndarray is currently 64, found {len(target)}")
    if order == "A":
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    if order == "F":
        rev = tuple(range(a.ndim - 1, -1, -1))  # (a tuple: ``permute()`` of no dimensions is an error)
        t = a._t.permute(rev).reshape(target[::-1]).permute(tuple(range(len(target) - 1, -1, -1)))
    elif order == "C":
        t = a._t.reshape(target)
    else:
        raise ValueError(f"order not understood: {order!r}")
    if a._is_flip:  # (each read of a negative-stride view's _t is a new copy: ask the mapped result)
        r = _view(t, a)
        if copy is False and r.size and r._base is None:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        return r
    if copy is False and t.numel() and t.data_ptr() != a._t.data_ptr():
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    return _view(t, a)


def _view_reshape(a: ndarray, shape: Any) -> torch.Tensor:
    target = _new_shape(shape, a.size)
    try:
        return a._t.view(target)
    except RuntimeError:
        raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` to make a copy "
                             "with the desired shape.") from None


def ravel(a: Any, order: str = "C") -> ndarray:
    """The elements as a 1-d array (a view when possible); ``order="K"`` reads them in memory order."""
    a = asarray(a)
    order = order.upper() if isinstance(order, str) else "C"
    if order == "A":
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    mem = a._pv if a._is_flip else a._t  # (negative strides: K orders axes by their size, as NumPy)
    strides, shape = mem.stride(), mem.shape
    if order == "K" and a.ndim > 1 and all(st or n == 1 for st, n in zip(strides, shape)):
        perm = sorted(range(a.ndim), key=lambda d: -strides[d] if shape[d] > 1 else 0)
        a = _view(a._t.permute(perm), a)
    out = reshape(a, -1, "F" if order == "F" else "C")
    contiguous = not out._is_flip and out._t.stride(0) == 1
    return out if out.size < 2 or contiguous else out.copy()  # always contiguous, as NumPy


def transpose(a: Any, axes: Any = None) -> ndarray:
    a = asarray(a)
    if axes is None or axes == ():
        perm = tuple(range(a.ndim - 1, -1, -1))
    else:
        if len(axes) != a.ndim:
            raise ValueError("axes don't match array")
        perm = normalize_axes(tuple(axes), a.ndim)
    return _view(a._t.permute(perm), a)


def swapaxes(a: Any, axis1: int, axis2: int) -> ndarray:
    a = asarray(a)
    return _view(a._t.transpose(normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)), a)


def moveaxis(a: Any, source: Any, destination: Any) -> ndarray:
    a = asarray(a)
    src = normalize_axes(source, a.ndim)
    dst = normalize_axes(destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    return _view(torch.movedim(a._t, src, dst), a)


def rollaxis(a: Any, axis: int, start: int = 0) -> ndarray:
    a = asarray(a)
    n = a.ndim
    axis = normalize_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a.view()


def expand_dims(a: Any, axis: Any) -> ndarray:
    a = asarray(a)
    axes = normalize_axes(axis, a.ndim + len(axis if isinstance(axis, (tuple, list)) else (axis,)))
    t = a._t
    for ax in sorted(axes):
        t = t.unsqueeze(ax)
    return _view(t, a)


def squeeze(a: Any, axis: _Axis = None) -> ndarray:
    a = asarray(a)
    if axis is None:
        return _view(a._t.reshape([s for s in a.shape if s != 1]), a)
    if a.ndim == 0:  # NumPy accepts axis 0 / -1 (or an empty tuple) for a 0-d array
        for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)):
            if operator.index(ax) not in (0, -1):
                raise AxisError(ax, 0)
        return _view(a._t.view(()), a)
    axes = normalize_axes(axis, a.ndim)
    if any(a.shape[ax] != 1 for ax in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return _view(a._t.reshape([s for i, s in enumerate(a.shape) if i not in axes]), a)


def _atleast(n: int, arys: Any) -> Any:
    res = []
    for x in arys:
        a = asarray(x)
        if a.ndim < n:
            shape = {0: (1,) * n, 1: ((1, a.size, 1) if n == 3 else (1, a.size))}.get(a.ndim, a.shape + (1,))  # noqa: RUF005
            a = a.reshape(shape)
        res.append(a)
    return res[0] if len(res) == 1 else res


def atleast_1d(*arys: Any) -> Any:
    return _atleast(1, arys)


def atleast_2d(*arys: Any) -> Any:
    return _atleast(2, arys)


def atleast_3d(*arys: Any) -> Any:
    return _atleast(3, arys)


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to; NumPy's ``ValueError`` naming the first two that clash."""
    try:
        return tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        norm = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
        last = next(i for i in range(len(norm)) if _broadcast_of(norm[:i + 1]) is None)
        first = next((i for i in range(last) if _broadcast_of([norm[i], norm[last]]) is None), 0)
        raise ValueError("shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between arg "
                         f"{first} with shape {norm[first]} and arg {last} with shape {norm[last]}.") from None


def broadcast_to(array: Any, shape: Any) -> ndarray:
    a = asarray(array)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) < a.ndim:
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    if _broadcast_of([a.shape, shape]) != shape:
        raise ValueError(f"operands could not be broadcast together with remapped shapes [original->remapped]: "
                         f"{shape_text(a.shape)}  and requested shape {shape_text(shape)}")  # (NumPy's two spaces)
    return _view(a._t.expand(shape), a)


def broadcast_arrays(*args: Any) -> tuple[ndarray, ...]:
    """The arrays broadcast to one shape (views; a tuple, as in NumPy 2)."""
    arrs = [asarray(x) for x in args]
    shape = broadcast_shapes(*[a.shape for a in arrs])
    return tuple(a if a.shape == shape else _view(a._t.expand(shape), a) for a in arrs)


class broadcast:  # noqa: N801 (NumPy's name)
    """The broadcast shape of several arrays (``cupy.broadcast``)."""

    def __init__(self, *arrays: Any) -> None:
        self.values = tuple(broadcast_arrays(*arrays))
        self.shape = self.values[0].shape if self.values else ()
        self.nd = self.ndim = len(self.shape)
        self.size = int(numpy.prod(self.shape))


def _common(arrs: list[ndarray], dtype: Any, casting: str) -> tuple[numpy.dtype, list[torch.Tensor]]:
    dt = numpy.result_type(*[a._dtype for a in arrs]) if dtype is None else to_numpy_dtype(dtype)
    for a in arrs:
        if not numpy.can_cast(a._dtype, dt, cast(Any, casting)):
            raise TypeError(f"Cannot cast array data from {a._dtype!r} to {dt!r} according to the rule {casting!r}")
        if a._dtype.kind == "c" and dt.kind not in "cb":  # to bool keeps "nonzero": nothing is discarded
            import warnings

            warnings.warn("Casting complex values to real discards the imaginary part", numpy.exceptions.ComplexWarning,
                          stacklevel=3)
    return dt, [cast_tensor(a._t, a._dtype, dt) for a in arrs]


def concatenate(arrays: Any, axis: Optional[int] = 0, out: Any = None, *, dtype: Any = None,
                casting: str = "same_kind") -> ndarray:
    arrs = [asarray(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrs, axis = [a.ravel() for a in arrs], 0
    nd = arrs[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if any(a.ndim != nd for a in arrs):
        raise ValueError("all the input array dimensions except for the concatenation axis must match exactly")
    axis = normalize_axis(axis, nd)
    for a in arrs:
        if any(a.shape[i] != arrs[0].shape[i] for i in range(nd) if i != axis):
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly")
    dt, ts = _common(arrs, dtype if out is None else (dtype or out._dtype), casting)
    res = _wrap(torch.cat(ts, axis), dt)
    if out is not None:
        if out.shape != res.shape:
            raise ValueError("Output array is the wrong shape")
        out[...] = res
        return out
    return res


def stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None, casting: str = "same_kind") -> ndarray:
    arrs = [asarray(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to stack")
    if any(a.shape != arrs[0].shape for a in arrs):
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis(axis, arrs[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrs], axis, out, dtype=dtype, casting=casting)


def hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> ndarray:
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> ndarray:
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


def row_stack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> ndarray:
    """``vstack`` under its old name, deprecated in NumPy 2 (the same DeprecationWarning)."""
    import warnings

    warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, stacklevel=2)
    return vstack(tup, dtype=dtype, casting=casting)


def dstack(tup: Any) -> ndarray:
    return concatenate([atleast_3d(a) for a in tup], 2)


def column_stack(tup: Any) -> ndarray:
    arrs = []
    for a in tup:
        a = asarray(a)
        if a.ndim > 2:
            raise ValueError("Only 1 or 2 dimensional arrays can be column stacked")
        arrs.append(a.reshape(-1, 1) if a.ndim < 2 else a)
    return concatenate(arrs, 1)


def _repeat_counts(repeats: Any, n: int, device: torch.device) -> Any:
    """``repeats`` as an int or an int64 tensor of ``n`` counts, with NumPy's checks."""
    if isinstance(repeats, numpy.ndarray):
        raise TypeError("repeats must be an int, a sequence of ints or a device array, not a host numpy.ndarray")
    if isinstance(repeats, ndarray):
        if repeats.ndim > 1:
            raise ValueError("repeats must be 0- or 1-dimensional")
        if not numpy.can_cast(repeats.dtype, numpy.intp, "safe"):
            raise TypeError(f"Cannot cast array data from {repeats.dtype!r} to dtype('int64') according to the "
                            "rule 'safe'")
        reps = repeats._t.reshape(-1).to(torch.int64)
    elif isinstance(repeats, (list, tuple)):
        if any(isinstance(r, (list, tuple)) for r in repeats):
            raise ValueError("repeats: object too deep for desired array")
        reps = torch.tensor([operator.index(r) for r in repeats], dtype=torch.int64, device=device)
    else:
        reps = torch.tensor([operator.index(repeats)], dtype=torch.int64, device=device)
    if bool((reps < 0).any()):
        raise ValueError("repeats may not contain negative values.")
    if reps.numel() == 1:
        return int(reps[0])
    if reps.numel() != n:
        raise ValueError(f"repeats must have the same length as the axis ({reps.numel()} != {n})")
    return reps


def repeat(a: Any, repeats: Any, axis: Optional[int] = None) -> ndarray:
    """Each element (or slice along ``axis``) repeated ``repeats`` times."""
    a = asarray(a)
    t = a._t
    if axis is None:
        t, axis = t.reshape(-1), 0
    else:
        axis = normalize_axis(axis, a.ndim)
    reps = _repeat_counts(repeats, t.shape[axis], t.device)
    return _wrap(torch.repeat_interleave(t, reps, dim=axis), a._dtype)


__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast", "broadcast_arrays", "broadcast_shapes",
           "broadcast_to", "column_stack", "concatenate", "dstack", "expand_dims", "hstack", "moveaxis", "ravel",
           "repeat", "reshape", "rollaxis", "row_stack", "squeeze", "stack", "swapaxes", "transpose", "vstack"]
