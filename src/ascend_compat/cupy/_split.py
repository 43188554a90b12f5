"""Splitting arrays into views: ``array_split``, ``split``, ``hsplit``, ``vsplit``, ``dsplit``."""

from __future__ import annotations

from typing import Any

import numpy

from ascend_compat.cupy._core import asarray, ndarray
from ascend_compat.cupy._manipulation import _view, normalize_axis


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


__all__ = ["array_split", "dsplit", "hsplit", "split", "vsplit"]
