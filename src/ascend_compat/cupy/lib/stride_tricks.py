"""``as_strided`` and ``sliding_window_view``: views of an array's memory with chosen shapes and byte strides."""

from __future__ import annotations

import operator
from typing import Any, Optional

import numpy

from ascend_compat.cupy._core import _root, asarray, ndarray
from ascend_compat.cupy._core_flip import layout, make, memory_tensor


def as_strided(x: Any, shape: Any = None, strides: Any = None) -> ndarray:
    """A view of ``x``'s memory with ``shape`` and ``strides`` (in bytes, multiples of the item size; as in
    NumPy, nothing checks that the view stays inside the allocation)."""
    a = asarray(x)
    shape = tuple(a.shape if shape is None else (operator.index(s) for s in shape))
    strides = tuple(a.strides if strides is None else (operator.index(s) for s in strides))
    if len(shape) != len(strides):
        raise ValueError(f"shape {shape} and strides {strides} have different lengths")
    item = a.itemsize
    if any(s % item for s in strides):
        raise ValueError(f"strides {strides} must be multiples of the item size {item}")
    # counted from the first element, as NumPy's; negative strides give a negative-stride view
    return make(memory_tensor(a), (layout(a)[0], shape, tuple(s // item for s in strides)), a.dtype, _root(a))


def sliding_window_view(x: Any, window_shape: Any, axis: Optional[Any] = None, *, subok: bool = False,
                        writeable: bool = False) -> ndarray:
    """A read-only-in-spirit view of every window of ``window_shape`` over ``axis`` (all axes by default)."""
    if writeable:
        raise NotImplementedError("Writeable views are not supported.")
    a = asarray(x)
    win = tuple(window_shape) if numpy.iterable(window_shape) else (window_shape,)
    win = tuple(operator.index(w) for w in win)
    if any(w < 0 for w in win):
        raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        axes = tuple(range(a.ndim))
        if len(win) != len(axes):
            raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; "
                             f"got {len(win)} window_shape elements and `x.ndim` is {a.ndim}.")
    else:
        axes = numpy.lib.array_utils.normalize_axis_tuple(axis, a.ndim, allow_duplicate=True)
        if len(win) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got {len(win)} window_shape "
                             f"elements and {len(axes)} axes elements.")
    shape = list(a.shape)
    for ax, w in zip(axes, win):
        if shape[ax] < w:
            raise ValueError("window shape cannot be larger than input array shape")
        shape[ax] -= w - 1
    strides = a.strides + tuple(a.strides[ax] for ax in axes)
    return as_strided(a, tuple(shape) + win, strides)


__all__ = ["as_strided", "sliding_window_view"]
