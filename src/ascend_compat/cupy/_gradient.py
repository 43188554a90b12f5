"""``gradient``: central differences inside, one-sided (first or second order) at the edges, as NumPy computes
them, in array operations on the device."""

from __future__ import annotations

from typing import Any

import numpy

from ascend_compat.cupy._core import asarray, ndarray


def _spacings(f: Any, axes: tuple[int, ...], varargs: tuple[Any, ...]) -> list[Any]:
    n = len(varargs)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and numpy.ndim(varargs[0]) == 0 and not (isinstance(varargs[0], ndarray) and varargs[0].ndim):
        return [varargs[0]] * len(axes)
    if n != len(axes):
        raise TypeError("invalid number of arguments")
    out: list[Any] = []
    for ax, d in zip(axes, varargs):
        dist: Any = asarray(d)
        if dist.ndim == 0:
            out.append(d)
            continue
        if dist.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if dist.shape[0] != f.shape[ax]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        if dist.dtype.kind in "iub":
            dist = dist.astype(numpy.float64)
        diffx = dist[1:] - dist[:-1]
        out.append(diffx[0] if bool((diffx == diffx[0]).all()) else diffx)
    return out


def _edges(ax_dx: Any, uniform: bool, first: bool) -> tuple[Any, Any, Any]:
    """Second-order one-sided coefficients at the first (or last) edge."""
    if uniform:
        return (-1.5 / ax_dx, 2.0 / ax_dx, -0.5 / ax_dx) if first else (0.5 / ax_dx, -2.0 / ax_dx, 1.5 / ax_dx)
    dx1, dx2 = (ax_dx[0], ax_dx[1]) if first else (ax_dx[-2], ax_dx[-1])
    if first:
        return (-(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2)), (dx1 + dx2) / (dx1 * dx2), -dx1 / (dx2 * (dx1 + dx2)))
    return (dx2 / (dx1 * (dx1 + dx2)), -(dx2 + dx1) / (dx1 * dx2), (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2)))


def _along(f: Any, ax_dx: Any, axis: int, edge_order: int, otype: numpy.dtype) -> Any:
    from ascend_compat.cupy._creation import empty_like

    nd = f.ndim

    def at(s: Any) -> tuple[Any, ...]:
        return (slice(None),) * axis + (s,) + (slice(None),) * (nd - axis - 1)

    out: Any = empty_like(f, dtype=otype)
    uniform = not (isinstance(ax_dx, ndarray) and ax_dx.ndim)
    if uniform:
        out[at(slice(1, -1))] = (f[at(slice(2, None))] - f[at(slice(None, -2))]) / (2.0 * ax_dx)
    else:
        dx1, dx2 = ax_dx[0:-1], ax_dx[1:]
        shape = [1] * nd
        shape[axis] = -1
        a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
        b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
        c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
        out[at(slice(1, -1))] = a * f[at(slice(None, -2))] + b * f[at(slice(1, -1))] + c * f[at(slice(2, None))]
    if edge_order == 1:
        out[at(0)] = (f[at(1)] - f[at(0)]) / (ax_dx if uniform else ax_dx[0])
        out[at(-1)] = (f[at(-1)] - f[at(-2)]) / (ax_dx if uniform else ax_dx[-1])
        return out
    a, b, c = _edges(ax_dx, uniform, True)
    out[at(0)] = a * f[at(0)] + b * f[at(1)] + c * f[at(2)]
    a, b, c = _edges(ax_dx, uniform, False)
    out[at(-1)] = a * f[at(-3)] + b * f[at(-2)] + c * f[at(-1)]
    return out


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """The gradient of ``f`` along each of ``axis`` (all by default), with NumPy's spacing arguments."""
    from ascend_compat.cupy._manipulation import normalize_axes

    f = asarray(f)
    axes = tuple(range(f.ndim)) if axis is None else normalize_axes(axis, f.ndim)
    dx = _spacings(f, axes, varargs)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if otype.kind == "b":
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported: gradient of a bool array")
    if otype.kind not in "fc":
        f = f.astype(numpy.float64)
        otype = numpy.dtype(numpy.float64)
    outs = []
    for ax, ax_dx in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                             "(edge_order + 1) elements are required.")
        outs.append(_along(f, ax_dx, ax, edge_order, otype))
    return outs[0] if len(axes) == 1 else tuple(outs)


__all__ = ["gradient"]
