"""Histograms and binning (``histogram``, ``histogram2d``, ``histogramdd``, ``bincount``, ``digitize``) with
NumPy's edges, dtypes and errors. Equal-width edges are NumPy's own ``linspace`` of the data's extremes (a few
numbers, computed on the host in the edges' dtype, so float16/float32 edges match NumPy to the bit); counting
runs on the device."""

from __future__ import annotations

import operator
import warnings
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import cast_tensor

__all__ = ["bincount", "digitize", "histogram", "histogram2d", "histogramdd"]

_F64 = numpy.dtype(numpy.float64)


def _f64(a: ndarray) -> torch.Tensor:
    return cast_tensor(a._t, a.dtype, _F64)


def _outer_edges(a: Any, rng: Any) -> tuple[Any, Any]:
    """NumPy's ``_get_outer_edges``: the range, or the data's min/max as NumPy scalars of its dtype."""
    if rng is not None:
        first, last = rng  # ValueError / TypeError for a malformed range, as NumPy's unpacking
        first, last = (x.get()[()] if isinstance(x, ndarray) else x for x in (first, last))
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (numpy.isfinite(first) and numpy.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif a.size == 0:
        first, last = 0, 1
    else:
        first, last = a.min().get()[()], a.max().get()[()]
        if not (numpy.isfinite(first) and numpy.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _array_bins(bins: Any, what: str) -> ndarray:
    edges = bins if isinstance(bins, ndarray) else asarray(numpy.asarray(bins))
    if edges.size > 1 and bool((edges._t[:-1] > edges._t[1:]).any()):
        raise ValueError(f"{what} must {'increase' if what == '`bins`' else 'be'} monotonically"
                         f"{'' if what == '`bins`' else ' increasing'}, when an array")
    return edges


def _bin_edges(a: ndarray, bins: Any, rng: Any) -> ndarray:
    if isinstance(bins, str):
        raise NotImplementedError("only integer and array bins are implemented")
    if isinstance(bins, ndarray) or numpy.ndim(bins) == 1:
        return _array_bins(bins, "`bins`")
    if numpy.ndim(bins) != 0:
        raise ValueError("`bins` must be 1d, when an array")
    try:
        n = operator.index(bins)
    except TypeError:
        raise TypeError("`bins` must be an integer, a string, or an array") from None
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    first, last = _outer_edges(a, rng)
    bin_type = numpy.result_type(first, last, a.dtype)
    if bin_type.kind in "iub":
        bin_type = numpy.result_type(bin_type, float)
    edges = numpy.linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
    if numpy.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"Too many bins for data range. Cannot create {n} finite-sized bins.")
    return asarray(edges)


def _bin_index(x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """Bin of each value (edges[i] <= x < edges[i+1], the last bin closed), -1 outside."""
    nb = edges.numel() - 1
    idx = torch.searchsorted(edges.contiguous(), x.contiguous(), right=True) - 1
    idx = torch.where(x == edges[-1], nb - 1, idx)
    return torch.where((idx >= 0) & (idx < nb), idx, -1)


def _weighted_counts(idx: torch.Tensor, w: Optional[torch.Tensor], n: int) -> torch.Tensor:
    ok = idx >= 0
    if w is None:
        return torch.bincount(idx[ok], minlength=n)
    w = w[ok]
    if w.is_complex():
        return torch.complex(torch.bincount(idx[ok], w.real.double(), n), torch.bincount(idx[ok], w.imag.double(), n))
    return torch.bincount(idx[ok], w.double(), n)


def histogram(x: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: bool = False) -> tuple[ndarray, ndarray]:
    """Counts (or weight sums, or a density) of ``x`` in ``bins`` equal-width bins or between given edges."""
    a: Any = asarray(x)  # Any: ndarray's methods and indexing are attached at import (see _methods)
    if a.dtype.kind == "c":
        raise NotImplementedError("complex number is not supported")
    if a.dtype.kind == "b":
        warnings.warn(f"Converting input from {a.dtype} to uint8 for compatibility.", RuntimeWarning, stacklevel=2)
        a = a.astype(numpy.uint8)
    w: Any = None
    if weights is not None:
        w = asarray(weights)
        if w.shape != a.shape:
            raise ValueError("weights should have the same shape as a.")
        w = w.ravel()
    a = a.ravel()
    edges = _bin_edges(a, bins, range)
    nb = edges.size - 1
    counts = _weighted_counts(_bin_index(_f64(a), _f64(edges)), None if w is None else w._t, nb)
    ntype = numpy.dtype(numpy.int64) if w is None else w.dtype
    hist = _wrap(cast_tensor(counts, _dtypes.logical_dtype(counts.dtype), ntype), ntype)
    if density:
        db = _f64(_wrap(edges._t[1:] - edges._t[:-1], edges.dtype))  # the widths in the edges' dtype, as NumPy
        res = numpy.result_type(ntype, _F64)
        t = cast_tensor(hist._t, ntype, res)
        hist = _wrap(t / db.to(t.dtype) / t.sum(), res)
    return hist, edges


def _sample_columns(sample: Any) -> Any:
    if isinstance(sample, ndarray):
        s: Any = sample
        return s[:, None] if s.ndim == 1 else s
    from ascend_compat.cupy._manipulation import stack

    return stack([asarray(s) for s in sample], axis=-1)


def _dd_edges(col: Any, b: Any, rng: Any, i: int) -> ndarray:
    if (numpy.ndim(b) == 0 and not isinstance(b, ndarray)) or (isinstance(b, ndarray) and b.ndim == 0):
        if int(b) < 1:
            raise ValueError(f"`bins[{i}]` must be positive, when an integer")
        smin, smax = _outer_edges(col, rng)
        try:
            n = operator.index(b)
        except TypeError:
            raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from None
        return asarray(numpy.linspace(smin, smax, n + 1))
    if not isinstance(b, ndarray):
        raise ValueError("array-like bins not supported: pass cupy arrays as bin edges")
    if b.ndim != 1:
        raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
    return _array_bins(b, f"`bins[{i}]`")


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool = False) -> tuple[ndarray, list[ndarray]]:
    """Multidimensional histogram of ``(N, D)`` samples (or a sequence of D coordinate arrays)."""
    s = _sample_columns(sample)
    d = s.shape[1]
    try:
        if len(bins) != d:
            raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    except TypeError:
        bins = [bins] * d
    if range is None:
        range = (None,) * d
    elif len(range) != d:
        raise ValueError("range argument must have one entry per dimension")
    edges = [_dd_edges(s[:, i], bins[i], range[i], i) for i in builtins_range(d)]
    nbins = [e.size - 1 for e in edges]
    flat: Optional[torch.Tensor] = None
    for i, e in enumerate(edges):
        k = _bin_index(_f64(s[:, i]), _f64(e))
        flat = k if flat is None else torch.where((flat >= 0) & (k >= 0), flat * nbins[i] + k, -1)
    assert flat is not None
    w = None if weights is None else asarray(weights)._t.reshape(-1)
    hist = _weighted_counts(flat, w, int(numpy.prod(nbins))).to(torch.float64).reshape(nbins)
    if density:
        total = hist.sum()
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = nbins[i]
            hist = hist / _f64(_wrap(e._t[1:] - e._t[:-1], e.dtype)).reshape(shape)
        hist = hist / total
    return _wrap(hist.contiguous(), _F64), edges


builtins_range = range


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool = False) -> tuple[ndarray, ndarray, ndarray]:
    """Two-dimensional histogram of the samples ``x`` and ``y``."""
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):
        if not isinstance(bins, ndarray):
            raise ValueError("array-like bins not supported: pass a cupy array of bin edges")
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, weights, density)
    return hist, edges[0], edges[1]


def bincount(x: Any, weights: Any = None, minlength: Any = 0) -> ndarray:
    """Number of occurrences (or weight sums) of each non-negative integer in ``x``."""
    a = asarray(x)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else
                         "object of too small depth for desired array")
    if a.dtype.kind not in "iub" or a.dtype == numpy.uint64:
        raise TypeError(f"Cannot cast array data from {a.dtype!r} to dtype('int64') according to the rule 'safe'")
    minlength = 0 if minlength is None else operator.index(minlength)
    if minlength < 0:
        raise ValueError("minlength must be non-negative")
    w = None if weights is None else asarray(weights)
    if w is not None and w.shape != a.shape:
        raise ValueError("The weights and list don't have the same length.")
    if w is not None and w.dtype.kind == "c":
        raise TypeError("Cannot cast array data from dtype('complex128') to dtype('float64') according to the "
                        "rule 'safe'")
    t = a._t.to(torch.int64)
    if a.size == 0:  # NumPy returns intp zeros for an empty input, weights or not
        return _wrap(torch.zeros(minlength, dtype=torch.int64, device=t.device))
    if bool((t < 0).any()):
        raise ValueError("The first argument of bincount must be non-negative")
    return _wrap(torch.bincount(t, None if w is None else _f64(w), minlength))


def _monotonicity(b: torch.Tensor) -> int:
    """NumPy's ``check_array_monotonic``: 1 increasing, -1 decreasing, 0 neither (NaNs compare false)."""
    if b.numel() < 2:
        return 1
    differ = torch.nonzero(b[1:] != b[0])
    if differ.numel() == 0:
        return 1
    i = int(differ[0, 0]) + 1
    tail = b[i:]
    if bool(b[0] < b[i]):
        return 0 if bool((tail[:-1] > tail[1:]).any()) else 1
    return 0 if bool((tail[:-1] < tail[1:]).any()) else -1


def digitize(x: Any, bins: Any, right: bool = False) -> ndarray:
    """Indices of the bins (increasing or decreasing edges) each value of ``x`` falls in."""
    from ascend_compat.cupy._sorting import searchsorted

    xa, b = asarray(x), asarray(bins)
    b_: Any = b
    if xa.dtype.kind == "c" or b.dtype.kind == "c":
        raise TypeError("x may not be complex")
    if b.ndim != 1:
        raise ValueError("object too deep for desired array" if b.ndim > 1 else
                         "object of too small depth for desired array")
    mono = _monotonicity(b._t)
    if mono == 0:
        raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"  # the arguments are swapped, so is the side
    if mono == -1:
        r = searchsorted(b_[::-1], xa, side=side)
        return _wrap(b.size - r._t)
    return searchsorted(b, xa, side=side)
