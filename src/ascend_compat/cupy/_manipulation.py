"""Shape manipulation: reshape, transpose, joining, splitting, tiling, flipping and broadcasting."""

from __future__ import annotations

import operator
from typing import Any, Optional, Union

import numpy
import torch
from numpy.exceptions import AxisError

from ascend_compat.cupy._core import _root, _wrap, asarray, ndarray
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
    base = _root(a) if t._is_view() or (t.data_ptr() == a._t.data_ptr() and t.numel()) else None
    return _wrap(t, a._dtype, base=base)


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
    if copy:
        return reshape(a.copy(), newshape, order, shape=shape)
    target = _new_shape(shape if shape is not None else newshape, a.size)
    order = order.upper() if isinstance(order, str) else "C"
    if order == "A":
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    if order == "F":
        t = a._t.permute(*range(a.ndim - 1, -1, -1)).reshape(target[::-1]).permute(*range(len(target) - 1, -1, -1))
    elif order == "C":
        t = a._t.reshape(target)
    else:
        raise ValueError(f"order not understood: {order!r}")
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
    strides = a._t.stride()
    if order == "K" and a.ndim > 1 and all(st or n == 1 for st, n in zip(strides, a._t.shape)):
        perm = sorted(range(a.ndim), key=lambda d: -strides[d] if a._t.shape[d] > 1 else 0)
        a = _view(a._t.permute(perm), a)
    out = reshape(a, -1, "F" if order == "F" else "C")
    return out if out.size < 2 or out._t.stride(0) == 1 else out.copy()  # always contiguous, as NumPy


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
    try:
        return tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape: {shapes}") from None


def broadcast_to(array: Any, shape: Any) -> ndarray:
    a = asarray(array)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) < a.ndim or broadcast_shapes(a.shape, shape) != shape:
        raise ValueError(f"operands could not be broadcast together with remapped shapes [original->remapped]: "
                         f"{a.shape} and requested shape {shape}")
    return _view(a._t.expand(shape), a)


def broadcast_arrays(*args: Any) -> list[ndarray]:
    arrs = [asarray(x) for x in args]
    shape = broadcast_shapes(*[a.shape for a in arrs])
    return [a if a.shape == shape else _view(a._t.expand(shape), a) for a in arrs]


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
        if not numpy.can_cast(a._dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {a._dtype!r} to {dt!r} according to the rule {casting!r}")
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


row_stack = vstack


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


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[ndarray]:
    a = asarray(ary)
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, numpy.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        bounds = [0]
        for i in range(sections):
            bounds.append(bounds[-1] + each + (1 if i < extra else 0))
    else:
        bounds = [0, *[int(i) for i in indices_or_sections], n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = min(max(lo if lo >= 0 else lo + n, 0), n), min(max(hi if hi >= 0 else hi + n, 0), n)
        out.append(_view(a._t.narrow(axis, lo, max(hi - lo, 0)), a))
    return out


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[ndarray]:
    a = asarray(ary)
    if isinstance(indices_or_sections, (int, numpy.integer)) and a.shape[normalize_axis(axis, a.ndim)] % int(
            indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return array_split(a, indices_or_sections, axis)


def hsplit(ary: Any, indices_or_sections: Any) -> list[ndarray]:
    a = asarray(ary)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(a, indices_or_sections, 1 if a.ndim > 1 else 0)


def vsplit(ary: Any, indices_or_sections: Any) -> list[ndarray]:
    if asarray(ary).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary: Any, indices_or_sections: Any) -> list[ndarray]:
    if asarray(ary).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def tile(A: Any, reps: Any) -> ndarray:  # noqa: N803
    a = asarray(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    nd = max(len(reps), a.ndim)
    t = a._t.reshape((1,) * (nd - a.ndim) + a.shape)
    return _wrap(t.repeat((1,) * (nd - len(reps)) + reps), a._dtype)


def repeat(a: Any, repeats: Any, axis: Optional[int] = None) -> ndarray:
    a = asarray(a)
    t = a._t
    if axis is None:
        t, axis = t.reshape(-1), 0
    else:
        axis = normalize_axis(axis, a.ndim)
    if isinstance(repeats, ndarray):
        repeats = repeats.tolist()
    if isinstance(repeats, (list, tuple)) and len(repeats) == 1:
        repeats = repeats[0]
    if isinstance(repeats, (list, tuple)):
        if any(r < 0 for r in repeats):
            raise ValueError("repeats may not contain negative values.")
        if len(repeats) != t.shape[axis]:
            raise ValueError("operands could not be broadcast together")
        reps = torch.tensor(repeats, device=t.device)
    else:
        if repeats < 0:
            raise ValueError("repeats may not contain negative values.")
        reps = int(repeats)
    return _wrap(torch.repeat_interleave(t, reps, dim=axis), a._dtype)


def flip(m: Any, axis: _Axis = None) -> ndarray:
    a = asarray(m)
    axes = normalize_axes(axis, a.ndim)
    return _wrap(a._t.flip(axes) if axes else a._t.clone(), a._dtype)


def fliplr(m: Any) -> ndarray:
    if asarray(m).ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def flipud(m: Any) -> ndarray:
    if asarray(m).ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def roll(a: Any, shift: Any, axis: _Axis = None) -> ndarray:
    a = asarray(a)
    if isinstance(shift, ndarray):
        if shift._dtype.kind not in "iu":
            raise TypeError("shift must be an integer array")
        shift = shift.tolist()
    if axis is None:
        if isinstance(shift, list):
            raise ValueError("'shift' must be a scalar when axis is None")
        return _wrap(torch.roll(a._t.reshape(-1), int(shift)).reshape(a.shape), a._dtype)
    axes = tuple(normalize_axis(x, a.ndim) for x in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    shifts = tuple(int(s) for s in shift) if isinstance(shift, (tuple, list)) else (int(shift),) * len(axes)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    return _wrap(torch.roll(a._t, shifts, axes), a._dtype)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> ndarray:
    a = asarray(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if a.ndim < 2:
        raise ValueError("Axes must be different.") if axes[0] == axes[1] else AxisError("Axes out of range")
    ax = (normalize_axis(axes[0], a.ndim), normalize_axis(axes[1], a.ndim))
    if ax[0] == ax[1]:
        raise ValueError("Axes must be different.")
    return _wrap(torch.rot90(a._t, k, ax), a._dtype)


def resize(a: Any, new_shape: Any) -> ndarray:
    a = asarray(a)
    shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    n = int(numpy.prod(shape))
    flat = a._t.reshape(-1)
    if flat.numel() == 0:
        return _wrap(torch.zeros(shape, dtype=flat.dtype, device=flat.device), a._dtype)
    reps = -(-n // flat.numel())
    return _wrap(flat.repeat(reps)[:n].reshape(shape), a._dtype)


def append(arr: Any, values: Any, axis: Optional[int] = None) -> ndarray:
    a, v = asarray(arr), asarray(values)
    if axis is None:
        return concatenate([a.ravel(), v.ravel()])
    return concatenate([a, v], axis)


def require(a: Any, dtype: Any = None, requirements: Any = None) -> ndarray:
    reqs = {r.upper()[0] for r in (requirements or [])}
    a = asarray(a, dtype)
    if "F" in reqs and not a.flags.f_contiguous:
        return a.copy(order="F")
    if "C" in reqs and not a.flags.c_contiguous:
        return a.copy(order="C")
    return a


__all__ = ["append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast", "broadcast_arrays",
           "broadcast_shapes", "broadcast_to", "column_stack", "concatenate", "dsplit", "dstack", "expand_dims",
           "flip", "fliplr", "flipud", "hsplit", "hstack", "moveaxis", "ravel", "repeat", "require", "reshape",
           "resize", "roll", "rollaxis", "rot90", "row_stack", "split", "squeeze", "stack", "swapaxes", "tile",
           "transpose", "vsplit", "vstack"]
