"""Bit packing (``packbits``, ``unpackbits``) and ``bitwise_count`` on device arrays."""

from __future__ import annotations

from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._manipulation import normalize_axis

_UINT8 = numpy.dtype(numpy.uint8)


def _bit_weights(bitorder: Any, device: torch.device) -> torch.Tensor:
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    w = torch.tensor([128, 64, 32, 16, 8, 4, 2, 1], dtype=torch.uint8, device=device)
    return w if bitorder == "big" else w.flip(0)


def packbits(a: Any, axis: Optional[int] = None, bitorder: str = "big") -> ndarray:
    """Nonzero elements of an integer or bool array packed 8 to a ``uint8`` (zero-padded at the end)."""
    arr = asarray(a)
    if arr.dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    w = _bit_weights(bitorder, arr._t.device)
    t = (arr._t != 0)
    if axis is None:
        t, ax = t.reshape(-1), 0
    else:
        ax = normalize_axis(axis, arr.ndim)
    t = t.movedim(ax, -1)
    n = t.shape[-1]
    pad = -n % 8
    if pad:
        t = torch.nn.functional.pad(t.to(torch.uint8), (0, pad))
    bits = t.to(torch.uint8).reshape(*t.shape[:-1], (n + pad) // 8, 8)
    packed = (bits * w).sum(-1, dtype=torch.uint8)  # distinct powers of two: the sum is the bitwise or
    return _wrap(packed.movedim(-1, ax).contiguous(), _UINT8)


def unpackbits(a: Any, axis: Optional[int] = None, count: Optional[int] = None, bitorder: str = "big") -> ndarray:
    """The bits of a ``uint8`` array, 8 elements per byte (``count`` keeps the first ``count`` bits)."""
    arr = asarray(a)
    if arr.dtype != _UINT8:
        raise TypeError("Expected an input array of unsigned byte data type")
    w = _bit_weights(bitorder, arr._t.device)
    t = arr._t.reshape(-1) if axis is None else arr._t
    ax = 0 if axis is None else normalize_axis(axis, arr.ndim)
    t = t.movedim(ax, -1)
    bits = ((t.unsqueeze(-1) & w) != 0).to(torch.uint8).reshape(*t.shape[:-1], t.shape[-1] * 8)
    if count is not None:
        count = int(count)
        n = bits.shape[-1]
        if count < -n:
            raise ValueError("-count larger than number of elements")
        bits = bits[..., :count] if count <= n else torch.nn.functional.pad(bits, (0, count - n))
    return _wrap(bits.movedim(-1, ax).contiguous(), _UINT8)


def bitwise_count(x: Any, out: Any = None) -> ndarray:
    """The number of 1-bits in the absolute value of each integer (``uint8``), as NumPy 2's ufunc."""
    a = asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"ufunc 'bitwise_count' not supported for the input type {a.dtype}")
    v = a._t.to(torch.int64)
    if a.dtype.kind == "i":
        v = v.abs()  # abs(int64 min) keeps the bit pattern 2**63: one bit, as NumPy counts it
    # SWAR population count on 64-bit words; the masks drop the bits that arithmetic shifts copy in
    v = v - ((v >> 1) & 0x5555555555555555)
    v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
    res = _wrap(((v * 0x0101010101010101) >> 56 & 0xFF).to(torch.uint8), _UINT8)
    if out is not None:
        from ascend_compat.cupy._more import copyto

        copyto(out, res)
        return out
    return res


__all__ = ["bitwise_count", "packbits", "unpackbits"]
