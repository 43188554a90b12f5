"""``apply_along_axis`` and ``apply_over_axes``: a Python function applied to 1-D slices / along axes.

The function runs once per slice from Python (as in CuPy), so the cost grows with the number of slices.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy

from ascend_compat.cupy._core import asarray, ndarray
from ascend_compat.cupy._manipulation import expand_dims, normalize_axis, transpose


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any, **kwargs: Any) -> ndarray:
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis``; its result's dimensions replace ``axis``."""
    a = asarray(arr)
    nd = a.ndim
    axis = normalize_axis(axis, nd)
    dims = list(range(nd))
    moved = transpose(a, dims[:axis] + dims[axis + 1:] + [axis])  # the slices are moved[ind]
    outer = moved.shape[:-1]
    indices = itertools.product(*[range(n) for n in outer])
    try:
        first = next(indices)
    except StopIteration:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0") from None
    res = asarray(func1d(moved[first], *args, **kwargs))
    from ascend_compat.cupy._creation import zeros

    buff = zeros(outer + res.shape, res.dtype)
    buff[first] = res
    for ind in indices:
        buff[ind] = asarray(func1d(moved[ind], *args, **kwargs))
    k = buff.ndim - res.ndim  # put the result's dimensions where ``axis`` was
    bdims = list(range(buff.ndim))
    return transpose(buff, bdims[:axis] + bdims[k:] + bdims[axis:k])


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: Any) -> ndarray:
    """``func(a, axis)`` applied for each axis in turn; each result keeps (or regains) the input's dimensions."""
    val = asarray(a)
    n = val.ndim
    for axis in ((axes,) if numpy.ndim(axes) == 0 else axes):
        axis = normalize_axis(axis, n)  # an AxisError for a 0-d array too, as in CuPy
        res = func(val, axis)
        if res.ndim != val.ndim:
            res = expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val


__all__ = ["apply_along_axis", "apply_over_axes"]
