"""Memory ranges of device arrays: ``byte_bounds``, ``may_share_memory`` (bounds) and ``shares_memory`` (exact)."""

from __future__ import annotations

from typing import Any

import torch

from ascend_compat.cupy._core import ndarray
from ascend_compat.cupy._core_flip import memory_tensor


def byte_bounds(a: ndarray) -> tuple[int, int]:
    """(low, high): the device addresses of the first byte ``a`` can reach and one past its last byte."""
    if not isinstance(a, ndarray):
        raise TypeError("byte_bounds() needs an ascend_compat.cupy.ndarray")
    low = high = a.data.ptr
    if a.size == 0:
        return low, high
    for n, s in zip(a.shape, a.strides):  # strides in bytes, as the array reports them
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high + a.itemsize


def _storage(t: torch.Tensor) -> int:
    return int(t.untyped_storage().data_ptr())


def _same_memory(a: Any, b: Any) -> bool:
    if not (isinstance(a, ndarray) and isinstance(b, ndarray)) or a.size == 0 or b.size == 0:
        return False
    return _storage(memory_tensor(a)) == _storage(memory_tensor(b))


def read_first(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """``src`` as it is before ``dst`` is written: a copy when they share memory (``a[1:] = a[:-1]``,
    ``copyto(a, a.T)``), as NumPy reads the whole source first."""
    return src.clone() if _storage(src) == _storage(dst) else src


def _extent(t: torch.Tensor) -> tuple[int, int]:
    """[start, stop) in bytes of the memory a (non-empty) tensor reaches."""
    start = t.data_ptr()
    return start, start + (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


def may_share_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    """True when the memory bounds of ``a`` and ``b`` overlap (they may share elements)."""
    if max_work is not None and max_work != 0:
        return shares_memory(a, b, max_work)
    if not _same_memory(a, b):
        return False
    ta, tb = memory_tensor(a), memory_tensor(b)  # (the same memory as a._t, also for negative strides)
    (lo_a, hi_a), (lo_b, hi_b) = _extent(ta), _extent(tb)
    return lo_a < hi_b and lo_b < hi_a


def _byte_offsets(t: torch.Tensor, lo: int, hi: int, per_byte: bool) -> torch.Tensor:
    """The addresses of ``t``'s elements (of every byte of them when ``per_byte``) inside [lo, hi)."""
    off = torch.zeros((), dtype=torch.int64)
    for d, (n, s) in enumerate(zip(t.shape, t.stride())):
        shape = [1] * t.dim()
        shape[d] = n
        off = off + (torch.arange(n, dtype=torch.int64) * (s * t.element_size())).reshape(shape)
    off = off.reshape(-1) + t.data_ptr()
    if per_byte:
        off = (off[:, None] + torch.arange(t.element_size(), dtype=torch.int64)).reshape(-1)
    return off[(off >= lo) & (off < hi)]


def shares_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    """True when ``a`` and ``b`` have at least one byte of memory in common (an exact answer)."""
    if max_work == 0:
        return may_share_memory(a, b)
    if not _same_memory(a, b):
        return False
    ta, tb = memory_tensor(a), memory_tensor(b)  # (the same memory as a._t, also for negative strides)
    (lo_a, hi_a), (lo_b, hi_b) = _extent(ta), _extent(tb)
    lo, hi = max(lo_a, lo_b), min(hi_a, hi_b)
    if lo >= hi:
        return False
    ea, eb = ta.element_size(), tb.element_size()
    # Same element size and alignment: elements overlap exactly when their start addresses coincide.
    per_byte = ea != eb or (ta.data_ptr() - tb.data_ptr()) % ea != 0
    lo_search = lo - (0 if per_byte else ea - 1)  # an element starting before lo may still reach into it
    oa = _byte_offsets(ta, lo_search, hi, per_byte)
    ob = _byte_offsets(tb, lo_search, hi, per_byte)
    return bool(torch.isin(oa, ob).any()) if oa.numel() and ob.numel() else False


__all__ = ["byte_bounds", "may_share_memory", "shares_memory"]
