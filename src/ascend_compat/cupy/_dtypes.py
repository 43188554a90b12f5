"""NumPy dtype <-> torch storage dtype tables.

Every array has a logical ``numpy.dtype``; its torch tensor has a *storage* dtype. They are the same except for
the unsigned types torch barely computes with: uint16 is stored as int32 and uint32 as int64 (values exact,
results masked back into range), uint64 as the int64 bit pattern (add/sub/mul/bitwise exact; order and division
through :func:`unsigned_order`; float conversion exact below 2**63).
"""

from __future__ import annotations

from typing import Any

import numpy
import torch

_NP_TO_TORCH: dict[numpy.dtype, torch.dtype] = {
    numpy.dtype(numpy.bool_): torch.bool,
    numpy.dtype(numpy.int8): torch.int8,
    numpy.dtype(numpy.int16): torch.int16,
    numpy.dtype(numpy.int32): torch.int32,
    numpy.dtype(numpy.int64): torch.int64,
    numpy.dtype(numpy.uint8): torch.uint8,
    numpy.dtype(numpy.uint16): torch.int32,
    numpy.dtype(numpy.uint32): torch.int64,
    numpy.dtype(numpy.uint64): torch.int64,
    numpy.dtype(numpy.float16): torch.float16,
    numpy.dtype(numpy.float32): torch.float32,
    numpy.dtype(numpy.float64): torch.float64,
    numpy.dtype(numpy.complex64): torch.complex64,
    numpy.dtype(numpy.complex128): torch.complex128,
}
_TORCH_TO_NP: dict[torch.dtype, numpy.dtype] = {
    torch.bool: numpy.dtype(numpy.bool_),
    torch.int8: numpy.dtype(numpy.int8),
    torch.int16: numpy.dtype(numpy.int16),
    torch.int32: numpy.dtype(numpy.int32),
    torch.int64: numpy.dtype(numpy.int64),
    torch.uint8: numpy.dtype(numpy.uint8),
    torch.uint16: numpy.dtype(numpy.uint16),
    torch.uint32: numpy.dtype(numpy.uint32),
    torch.uint64: numpy.dtype(numpy.uint64),
    torch.float16: numpy.dtype(numpy.float16),
    torch.bfloat16: numpy.dtype(numpy.float32),
    torch.float32: numpy.dtype(numpy.float32),
    torch.float64: numpy.dtype(numpy.float64),
    torch.complex64: numpy.dtype(numpy.complex64),
    torch.complex128: numpy.dtype(numpy.complex128),
}
# Logical unsigned types held in a wider signed storage type: the mask that wraps a result back into range.
WRAP_MASK: dict[numpy.dtype, int] = {numpy.dtype(numpy.uint16): 0xFFFF, numpy.dtype(numpy.uint32): 0xFFFFFFFF}
UINT64 = numpy.dtype(numpy.uint64)
#: uint64's top bit in its int64 storage, as a Python int (``unsigned_order`` flips it).
UINT64_TOP_BIT = -(2**63)
BOOL = numpy.dtype(numpy.bool_)
INT64 = numpy.dtype(numpy.int64)
FLOAT64 = numpy.dtype(numpy.float64)
# A numpy dtype whose storage is not its own: the torch tensor must not be reinterpreted without care.
WIDENED = frozenset({numpy.dtype(numpy.uint16), numpy.dtype(numpy.uint32), UINT64})

ALL_TYPES = tuple(_NP_TO_TORCH)
_DTYPE_CACHE: dict[Any, numpy.dtype] = {}


def to_numpy_dtype(dtype: Any) -> numpy.dtype:
    """``numpy.dtype(dtype)`` (cached), refusing types the module cannot hold with a TypeError."""
    if isinstance(dtype, numpy.dtype):  # keep the caller's spelling (dtype('q') == dtype('l'), .type differs)
        if dtype not in _NP_TO_TORCH:
            raise _unsupported(dtype)
        return dtype
    try:
        return _DTYPE_CACHE[dtype]
    except (KeyError, TypeError):
        pass
    if isinstance(dtype, torch.dtype):
        dt = _TORCH_TO_NP[dtype]
    else:
        dt = numpy.dtype(dtype)
    if dt not in _NP_TO_TORCH:
        raise _unsupported(dt)
    try:
        _DTYPE_CACHE[dtype] = dt
    except TypeError:  # unhashable dtype-like
        pass
    return dt


class UnsupportedDtypeError(ValueError, TypeError):
    """A NumPy dtype arrays cannot hold: CuPy raises ValueError ("Unsupported dtype"), callers may expect the
    TypeError of a bad dtype argument; this is both."""


def _unsupported(dt: numpy.dtype) -> UnsupportedDtypeError:
    if not dt.isnative and dt.newbyteorder("=") in _NP_TO_TORCH:
        return UnsupportedDtypeError(f"Unsupported dtype {dt!r}: arrays hold native byte-order data only")
    return UnsupportedDtypeError(f"Unsupported dtype {dt!r}: ascend_compat.cupy holds numeric and bool dtypes only")


def storage_dtype(dt: numpy.dtype) -> torch.dtype:
    """The torch dtype that holds values of numpy dtype ``dt``."""
    return _NP_TO_TORCH[dt]


def logical_dtype(tdt: torch.dtype) -> numpy.dtype:
    """The numpy dtype of a torch tensor wrapped as it is."""
    try:
        return _TORCH_TO_NP[tdt]
    except KeyError:
        raise TypeError(f"torch dtype {tdt} has no NumPy counterpart") from None


def numpy_view_for_torch(arr: numpy.ndarray) -> numpy.ndarray:
    """A host array in the storage dtype of ``arr.dtype`` (exact for every value)."""
    dt = arr.dtype
    if dt == UINT64:
        return arr.view(numpy.int64)
    if dt in WRAP_MASK:
        return arr.astype(numpy.int32 if dt.itemsize == 2 else numpy.int64)
    return arr


def unsigned_order(t: torch.Tensor) -> torch.Tensor:
    """uint64 values held as int64 bit patterns with the top bit flipped: torch's signed order of the result is
    the unsigned order of ``t`` (max, min, sort, search, comparison). Its own inverse: the same call maps a result
    back to uint64 storage."""
    return t ^ UINT64_TOP_BIT


def cast_tensor(t: torch.Tensor, src: numpy.dtype, dst: numpy.dtype) -> torch.Tensor:
    """Convert storage tensor ``t`` holding ``src`` values into the storage of ``dst`` values (NumPy rules)."""
    if src == dst:
        return t
    if src == UINT64 and dst.kind in "fc":  # the int64 bit pattern of values >= 2**63 is negative
        f = t.to(torch.float64)
        f = torch.where(t < 0, f + 18446744073709551616.0, f)
        return f.to(_NP_TO_TORCH[dst])
    if src.kind == "c" and dst.kind != "c":
        t = t.real if dst.kind != "b" else t
    if dst.kind == "b":
        return t != 0
    if dst in WRAP_MASK:
        if t.dtype.is_floating_point:
            t = t.to(torch.int64)
        return (t.to(torch.int64) & WRAP_MASK[dst]).to(_NP_TO_TORCH[dst])
    if dst == UINT64 and t.dtype.is_floating_point:
        big = t >= 9223372036854775808.0
        return torch.where(big, (t - 18446744073709551616.0), t).to(torch.int64)
    return t.to(_NP_TO_TORCH[dst])


def _device_alignment(dt: numpy.dtype) -> int:
    """The alignment a device kernel needs for one value of ``dt`` (complex: its whole itemsize, as CUDA's
    ``complex<T>``; a subarray: its element's; raw bytes: 1)."""
    if dt.subdtype is not None:
        return _device_alignment(dt.subdtype[0])
    if dt.kind == "V":
        return 1 if dt.fields is None else _aligned(dt, -1, True)[1]
    return dt.itemsize


def _aligned(dt: numpy.dtype, alignment: int, recurse: bool) -> tuple[numpy.dtype, int]:
    names: list[str] = []
    offsets: list[int] = []
    formats: list[numpy.dtype] = []
    offset, align, end = 0, 1, 0
    fields: dict[str, Any] = dict(dt.fields or {})
    for name, (sub, off, *_) in fields.items():
        if off < end:
            raise ValueError("make_aligned_dtype() only supports well behaved in-order fields as it ignores "
                             "field offsets.")
        end = off + sub.itemsize
        meta = dict(sub.metadata or {}).get("__cuda_alignment__")
        if meta is not None:
            sub_align = int(meta)
        elif sub.kind == "V" and sub.fields is not None:
            sub, sub_align = _aligned(sub, -1, True) if recurse else (sub, sub.alignment)
        else:
            sub_align = _device_alignment(sub)
        offset += -offset % sub_align
        align = max(align, sub_align)
        names.append(name)
        offsets.append(offset)
        formats.append(sub)
        offset += sub.itemsize
    extra: dict[str, Any] = {}
    if alignment != -1:
        if alignment < align:
            raise ValueError(f"make_aligned_dtype(): given alignment={alignment} smaller than minimum alignment "
                             f"{align}")
        align, extra = alignment, {"metadata": {"__cuda_alignment__": alignment}}
    itemsize = -(-offset // align) * align
    if dt.itemsize > itemsize:
        raise ValueError("Input descriptor had larger itemsize than inferred.")
    spec = {"names": names, "offsets": offsets, "formats": formats, "itemsize": itemsize}
    return numpy.dtype(spec, align=True, **extra), align  # type: ignore[call-overload]


def make_aligned_dtype(dtype: Any, *, alignment: int = -1, recurse: bool = True) -> numpy.dtype:
    """``cupy.make_aligned_dtype``: ``dtype`` (structured) with every field at the offset a device kernel needs
    and the itemsize padded to the largest field alignment (or ``alignment``, a power of 2)."""
    if alignment != -1 and (alignment <= 0 or alignment & (alignment - 1)):
        raise ValueError("Reasonable alignments must be >0 and a power of 2.")
    dt = numpy.dtype(dtype, align=True)
    if dt.kind != "V" or dt.fields is None:
        raise ValueError("make_aligned_dtype() only supports structured dtypes.")
    return _aligned(dt, alignment, recurse)[0]
