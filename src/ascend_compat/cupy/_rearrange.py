"""Rearranging elements: ``tile``, ``flip``/``fliplr``/``flipud``, ``roll``, ``rot90``, ``resize``, ``append`` and
``require``."""

from __future__ import annotations

from typing import Any, Optional

import numpy
import torch
from numpy.exceptions import AxisError

from ascend_compat.cupy import _core_flip
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._manipulation import _Axis, concatenate, normalize_axes, normalize_axis


def tile(A: Any, reps: Any) -> ndarray:  # noqa: N803
    a = asarray(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    nd = max(len(reps), a.ndim)
    t = a._t.reshape((1,) * (nd - a.ndim) + a.shape)
    return _wrap(t.repeat((1,) * (nd - len(reps)) + reps), a._dtype)


def flip(m: Any, axis: _Axis = None) -> ndarray:
    """``m`` read backwards along ``axis`` (all axes by default): a view with negative strides, as NumPy's."""
    a = asarray(m)
    axes = normalize_axes(axis, a.ndim)
    return _core_flip.flip(a, axes) if axes else _wrap(a._t.clone(), a._dtype)


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
    if axis is None:  # several shifts of the flattened array add up, as in NumPy
        total = sum(int(s) for s in shift) if isinstance(shift, (list, tuple)) else int(shift)
        return _wrap(torch.roll(a._t.reshape(-1), total).reshape(a.shape), a._dtype)
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
    k %= 4
    if k == 0:
        return a[:]
    if k == 2:
        return _core_flip.flip(a, ax)
    perm = list(range(a.ndim))
    perm[ax[0]], perm[ax[1]] = ax[1], ax[0]
    if k == 1:  # views, as NumPy's rot90
        return _core_flip.flip(a, (ax[1],)).transpose(perm)
    return _core_flip.flip(a.transpose(perm), (ax[1],))


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
    """``a`` (converted to ``dtype``) meeting the flags in ``requirements`` (C/F-contiguous, aligned, writeable,
    owning its data), copied only when needed."""
    if dtype is not None:
        try:
            numpy.dtype(dtype)
        except TypeError:
            raise ValueError(f"invalid dtype {dtype!r}") from None
    names = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F", "FORTRAN": "F",
             "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O", "E": "E",
             "ENSUREARRAY": "E"}
    reqs = set()
    for r in ([requirements] if isinstance(requirements, str) else requirements or []):
        key = names.get(str(r).upper())
        if key is None or key == "W":  # CuPy has no read-only arrays to make writeable
            raise ValueError(f"Incorrect flag requirements: {r!r}")
        reqs.add(key)
    if "C" in reqs and "F" in reqs:
        raise ValueError("Cannot specify both 'C' and 'F' order")
    a = asarray(a, dtype)
    if "O" in reqs and not a.flags.owndata:
        return a.copy(order="F" if "F" in reqs else "C")
    if "F" in reqs and not a.flags.f_contiguous:
        return a.copy(order="F")
    if "C" in reqs and not a.flags.c_contiguous:
        return a.copy(order="C")
    return a


def asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """``asarray(a)``, refusing NaN and infinity (ValueError; OverflowError when they go to an integer type)."""
    if dtype is not None and not isinstance(a, ndarray) and numpy.dtype(dtype).kind in "biu":
        numpy.asarray(a, dtype=dtype)  # host data: NumPy's own conversion errors (inf -> int: OverflowError)
    arr = asarray(a, dtype=dtype, order=order)
    if arr.dtype.kind in "fc" and not bool(torch.isfinite(arr._t).all()):
        raise ValueError("array must not contain infs or NaNs")
    return arr


__all__ = ["append", "asarray_chkfinite", "flip", "fliplr", "flipud", "require", "resize", "roll", "rot90", "tile"]
