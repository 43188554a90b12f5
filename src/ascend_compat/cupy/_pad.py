"""``pad``: every mode is an index map (edge, wrap, reflect, symmetric) or a concatenation of computed borders
(constant, empty, linear_ramp, maximum, minimum, mean, median), one axis at a time."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes, _ufuncs
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._manipulation import concatenate

_STAT_MODES = ("maximum", "minimum", "mean", "median")


def _pairs(value: Any, ndim: int, name: str) -> list[tuple[Any, Any]]:
    """NumPy's broadcasting of ``pad_width``-like arguments to one (before, after) pair per axis."""
    if value is None:
        return [(None, None)] * ndim
    arr = numpy.asarray(value.get() if isinstance(value, ndarray) else value)
    try:
        arr = numpy.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with remapped shapes: {name} "
                         f"{numpy.shape(value)} for an array of dimension {ndim}") from None
    return [(arr[i, 0].item(), arr[i, 1].item()) for i in range(ndim)]


def _index_map(mode: str, n: int, before: int, after: int, device: torch.device) -> torch.Tensor:
    i = torch.arange(-before, n + after, device=device)
    if mode == "edge":
        return i.clamp(0, n - 1)
    if mode == "wrap":
        return i % n
    if mode == "reflect":
        if n == 1:
            return torch.zeros_like(i)
        j = i % (2 * n - 2)
        return torch.where(j >= n, 2 * n - 2 - j, j)
    j = i % (2 * n)  # symmetric
    return torch.where(j >= n, 2 * n - 1 - j, j)


def _border(a: ndarray, axis: int, width: int, fill: Optional[Callable[[], ndarray]]) -> ndarray:
    shape = list(a.shape)
    shape[axis] = width
    return _wrap(fill()._t.expand(shape).clone(), a._dtype) if width and fill is not None else _wrap(
        torch.empty(shape, dtype=a._t.dtype, device=a._t.device), a._dtype)


def _constant(value: Any, dtype: numpy.dtype) -> ndarray:
    return asarray(numpy.array(value).astype(dtype))


def _stat(a: ndarray, axis: int, mode: str, length: Any, side: str) -> ndarray:
    from ascend_compat.cupy import _reduction, _stats

    n = a.shape[axis]
    k = n if length is None else max(min(int(length), n), 1)
    part = a[(slice(None),) * axis + ((slice(0, k),) if side == "before" else (slice(n - k, n),))]
    reductions: dict[str, Callable[..., ndarray]] = {
        "maximum": _reduction.amax, "minimum": _reduction.amin, "mean": _reduction.mean, "median": _stats.median}
    fn = reductions[mode]
    res = fn(part, axis=axis, keepdims=True)
    if a._dtype.kind in "iu" and mode in ("mean", "median"):
        res = _ufuncs.rint(res)
    return res.astype(a._dtype)


def _ramp(a: ndarray, axis: int, width: int, end: Any, side: str) -> ndarray:
    from ascend_compat.cupy._creation import linspace
    from ascend_compat.cupy._manipulation import squeeze

    n = a.shape[axis]
    edge = squeeze(a[(slice(None),) * axis + ((slice(0, 1),) if side == "before" else (slice(n - 1, n),))], axis)
    edge = edge.astype(numpy.complex128 if a._dtype.kind == "c" else numpy.float64)  # complex ramps stay complex
    endv = edge * 0 + (complex(end) if a._dtype.kind == "c" else float(numpy.real(end)))
    ramp = linspace(endv, edge, width + 1, axis=axis) if side == "before" else linspace(edge, endv, width + 1,
                                                                                         axis=axis)
    r = ramp[(slice(None),) * axis + ((slice(0, width),) if side == "before" else (slice(1, width + 1),))]
    if a._dtype.kind in "iu":
        r = _ufuncs.trunc(r)
    return r.astype(a._dtype)


_ALLOWED_KWARGS = {
    "empty": (), "edge": (), "wrap": (), "constant": ("constant_values",), "linear_ramp": ("end_values",),
    "maximum": ("stat_length",), "mean": ("stat_length",), "median": ("stat_length",), "minimum": ("stat_length",),
    "reflect": ("reflect_type",), "symmetric": ("reflect_type",),
}


def _odd_fill(p: torch.Tensor, left: int, right: int, n: int, symmetric: bool) -> None:
    """NumPy's odd reflection, chunk by chunk, into ``p`` (axis 0, the original ``n`` values in the middle):
    each chunk mirrors the values already in place about the current outer edge."""
    total = p.shape[0]
    while left or right:
        old = total - left - right
        if symmetric:
            old, edge_off = old // n * n, 1
        else:
            old, edge_off = (old - 1) // (n - 1) * (n - 1), 0
        if left:
            k = min(old, left)
            stop = left - edge_off
            chunk = p[stop + 1:stop + k + 1].flip(0)
            p[left - k:left] = _twice_minus(p[left:left + 1], chunk)
            left -= k
        if right:
            k = min(old, right)
            start = total - right + edge_off - 2
            chunk = p[start - k + 1:start + 1].flip(0)
            p[total - right:total - right + k] = _twice_minus(p[total - right - 1:total - right], chunk)
            right -= k


def _twice_minus(edge: torch.Tensor, chunk: torch.Tensor) -> torch.Tensor:
    """``2 * edge - chunk`` with NumPy's wrap-around in the array's own type (bool: nonzero)."""
    if edge.dtype == torch.bool:
        return (2 * edge.long() - chunk.long()) != 0
    return 2 * edge - chunk


def _reflect(a: ndarray, t: torch.Tensor, axis: int, before: int, after: int, mode: str, odd: bool) -> ndarray:
    n = t.shape[axis]
    if n == 0:
        raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
    if not odd or n == 1:  # a singleton axis extends like 'edge' (NumPy's legacy rule), for 'odd' too
        idx = _index_map("edge" if n == 1 else mode, n, before, after, t.device)
        return _wrap(torch.index_select(t, axis, idx), a._dtype)
    src = t.movedim(axis, 0)
    p = src.new_empty((before + n + after, *src.shape[1:]))
    p[before:before + n] = src
    _odd_fill(p, before, after, n, mode == "symmetric")
    mask = _dtypes.WRAP_MASK.get(a._dtype)
    if mask is not None:  # uint16/uint32 held in a wider type: wrap back into range as NumPy does
        p &= mask
    return _wrap(p.movedim(0, axis).contiguous(), a._dtype)


def _pad_with(a: ndarray, widths: list[tuple[int, int]], fn: Callable[..., Any], kwargs: dict[str, Any]) -> ndarray:
    """NumPy's callable mode: ``fn(vector, (before, after), axis, kwargs)`` edits each 1-D slice in place."""
    import itertools

    from ascend_compat.cupy._manipulation import moveaxis

    out = pad(a, widths)  # zeros around the data
    for axis in range(out.ndim):
        view = moveaxis(out, axis, -1)
        for ind in itertools.product(*[range(k) for k in view.shape[:-1]]):
            fn(view[ind], widths[axis], axis, kwargs)
    return out


def _widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    raw = numpy.asarray(pad_width.get() if isinstance(pad_width, ndarray) else pad_width)
    if raw.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    widths = [(int(b), int(e)) for b, e in _pairs(raw, ndim, "pad_width")]
    if any(b < 0 or e < 0 for b, e in widths):
        raise ValueError("index can't contain negative values")
    return widths


def pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> ndarray:
    """Pad ``array`` as ``numpy.pad`` does (every mode, a callable mode included)."""
    a = asarray(array)
    widths = _widths(pad_width, a.ndim)
    if callable(mode):
        return _pad_with(a, widths, mode, kwargs)
    if mode not in _ALLOWED_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_ALLOWED_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    odd = kwargs.get("reflect_type", "even") == "odd"
    out = a
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = out.shape[axis]
        if mode in ("edge", "wrap", "reflect", "symmetric"):
            if n == 0:
                raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
            if mode in ("reflect", "symmetric"):
                out = _reflect(a, out._t, axis, before, after, mode, odd)
            else:
                out = _wrap(torch.index_select(out._t, axis, _index_map(mode, n, before, after, out._t.device)),
                            a._dtype)
            continue
        if mode in ("constant", "empty"):
            values = _pairs(kwargs.get("constant_values", 0), a.ndim, "constant_values")[axis]
            lo = _border(out, axis, before, partial(_constant, values[0], a._dtype))
            hi = _border(out, axis, after, partial(_constant, values[1], a._dtype))
        elif mode in _STAT_MODES:
            if n == 0:
                raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
            lengths = _pairs(kwargs.get("stat_length"), a.ndim, "stat_length")[axis]
            lo = _border(out, axis, before, partial(_stat, out, axis, mode, lengths[0], "before"))
            hi = _border(out, axis, after, partial(_stat, out, axis, mode, lengths[1], "after"))
        else:  # linear_ramp
            ends = _pairs(kwargs.get("end_values", 0), a.ndim, "end_values")[axis]
            lo = _ramp(out, axis, before, ends[0], "before") if before else _border(out, axis, 0, None)
            hi = _ramp(out, axis, after, ends[1], "after") if after else _border(out, axis, 0, None)
        out = concatenate([lo, out, hi], axis)
    return out if out is not a else a.copy()


__all__ = ["pad"]
