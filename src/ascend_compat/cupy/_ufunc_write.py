"""How a ufunc's result gets written: torch's ``out=`` kernels straight into an array, NumPy's faster SIMD
kernels on CPU tensors' memory, large new CPU results on huge pages (``_alloc``), and ``out=``/``where=`` stores.

NumPy's kernels are used on CPU tensors only: an npu tensor's memory is device memory on a real NPU, so device
arrays always run the backend's kernel (the simulated NPU has its own fast host kernels for that).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import numpy
import torch
from numpy.exceptions import ComplexWarning

from ascend_compat.cupy import _alloc, _complex_arith
from ascend_compat.cupy._broadcast_errors import shape_text
from ascend_compat.cupy._core import _wrap, asarray, ndarray
from ascend_compat.cupy._dtypes import UINT64, WRAP_MASK, cast_tensor, storage_dtype
from ascend_compat.cupy._ufunc_support import UINT64_KERNELS, unalias

# ufuncs whose torch function can write into ``out=`` directly (same dtype, same shape).
OUT_KERNELS: dict[str, Callable[..., Any]] = {
    "add": torch.add, "subtract": torch.sub, "multiply": torch.mul, "maximum": torch.maximum,
    "minimum": torch.minimum, "cos": torch.cos, "sin": torch.sin, "tan": torch.tan, "exp": torch.exp,
    "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh, "absolute": torch.abs, "negative": torch.neg,
    "square": torch.square, "log1p": torch.log1p, "expm1": torch.expm1,
}
# The same for complex loops: add, subtract and negative part by part (``_complex_arith``: NumPy's signed zeros and
# infinities; torch's complex kernels lose them).
COMPLEX_OUT_KERNELS = {**OUT_KERNELS, "add": _complex_arith.add, "subtract": _complex_arith.sub,
                       "negative": _complex_arith.neg}


def out_kernel(name: str, loop_out: numpy.dtype) -> Optional[Callable[..., Any]]:
    """The kernel writing ufunc ``name``'s result of loop dtype ``loop_out`` into ``out=`` (None: none)."""
    if loop_out == UINT64 and name in UINT64_KERNELS:  # torch's int64 kernel would order the bit patterns signed
        return None
    return (COMPLEX_OUT_KERNELS if loop_out.kind == "c" else OUT_KERNELS).get(name)


# Float arrays on the CPU: ufuncs (by loop dtype char, f = float32, d = float64) whose NumPy SIMD kernel is several
# times faster than torch's CPU kernel (torch 2.13 on x86-64: cos/sin/tan/exp/log/tanh 2-9x slower, see
# benchmarks/cupy/bench_ops.py); NumPy's float64 cos/sin are 4x slower than torch's, so those stay with torch.
# NumPy computes on the tensors' memory (no copy) from NUMPY_MIN elements on (below, the call overhead dominates):
# results match NumPy's bit for bit, torch's within an ULP or two.
NUMPY_FASTER = {"cos": "f", "sin": "f", "tan": "fd", "exp": "fd", "log": "fd", "sqrt": "fd", "tanh": "fd",
                "expm1": "fd", "log1p": "fd"}
NUMPY_MIN = 4096


class NumpyWriter:
    """A kernel ``(*cpu_tensors, out=tensor)`` running NumPy's ufunc on the tensors' memory."""

    def __init__(self, np_ufunc: Any) -> None:
        self._np = np_ufunc

    def __call__(self, *ins: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        with numpy.errstate(all="ignore"):  # CuPy does not warn on nan/inf results
            self._np(*(t.numpy() for t in ins), out=out.numpy())
        return out


def writer_for(name: str, np_writer: Optional[NumpyWriter], lout: numpy.dtype) -> Optional[Callable[..., Any]]:
    """The kernel that writes a large result of loop dtype ``lout`` into a given tensor (None: none)."""
    if WRAP_MASK.get(lout) is not None:  # widened unsigned storage needs the generic path's wrap
        return None
    if np_writer is not None and lout.char in NUMPY_FASTER[name]:
        return np_writer
    return out_kernel(name, lout)


def min_elements(writer: Any, lout: numpy.dtype) -> int:
    """From how many elements a new result is written by ``writer`` rather than by the kernel's allocation."""
    return NUMPY_MIN if isinstance(writer, NumpyWriter) else -(-_alloc.THRESHOLD // lout.itemsize)


def write_new(writer: Any, ins: Any, want: torch.dtype, min_count: int) -> Optional[torch.Tensor]:
    """``writer(*ins)`` written into a new tensor (huge pages on the CPU when large), or None where the kernel's
    own allocation is as good: fewer than ``min_count`` elements, not the CPU, or operands whose result layout
    differs.

    Only for C-contiguous tensor operands of one shape (and scalars): torch would make that result C-contiguous
    too, so the layout users see does not change.
    """
    ta = ins[0]
    if not isinstance(ta, torch.Tensor) or ta.numel() < min_count or not ta.is_contiguous():
        return None
    for tb in ins[1:]:
        if isinstance(tb, torch.Tensor) and (tb.shape != ta.shape or not tb.is_contiguous()):
            return None
    o = _alloc.empty_if_large(ta.shape, want, ta.device)
    if o is None:
        if not isinstance(writer, NumpyWriter) or ta.device.type != "cpu":
            return None
        o = torch.empty(ta.shape, dtype=want)
    try:
        return writer(*ins, out=o)
    except torch.OutOfMemoryError:
        raise
    except RuntimeError:  # a dtype the direct kernel refuses: the generic kernel handles it
        return None


def finish(t: torch.Tensor, loop_out: numpy.dtype) -> torch.Tensor:
    """Bring a kernel result into the storage of ``loop_out`` (wrapping widened unsigned types)."""
    want = storage_dtype(loop_out)
    if t.dtype != want:
        t = t.to(want)
    mask = WRAP_MASK.get(loop_out)
    if mask is not None:
        t = t & mask
    return t


def store(r: torch.Tensor, loop_dt: numpy.dtype, out: Optional[ndarray], where: Any) -> ndarray:
    """The result ``r`` (loop dtype ``loop_dt``) as a new array, or written into ``out`` where ``where`` holds
    (broadcast to ``out``'s shape, cast as NumPy casts)."""
    if out is not None and out._is_flip:  # negative strides: into a scratch copy, written back
        from ascend_compat.cupy._core_flip import rmw

        return rmw(out, lambda s: store(r, loop_dt, s, where))
    if where is not True:
        mask = asarray(where)._t if not isinstance(where, ndarray) else where._t
        if mask.dtype != torch.bool:
            raise TypeError("where= must be a boolean array")
        if out is None:
            out = _wrap(torch.empty(torch.broadcast_shapes(r.shape, mask.shape), dtype=r.dtype,
                                    device=r.device), loop_dt)
        r = torch.where(mask, cast_tensor(r, loop_dt, out._dtype), out._t)
    elif out is None:
        return _wrap(r, loop_dt)
    if tuple(r.shape) != out.shape:
        expanded: Optional[torch.Tensor] = None
        try:
            if torch.broadcast_shapes(r.shape, out._t.shape) == out._t.shape:
                expanded = r.expand(out._t.shape)
        except RuntimeError:
            pass
        if expanded is None:
            raise ValueError(f"non-broadcastable output operand with shape {shape_text(out.shape)} doesn't match "
                             f"the broadcast shape {shape_text(r.shape)}")
        r = expanded
    if loop_dt.kind == "c" and out._dtype.kind not in "cb":  # casting="unsafe" into a real out=, as NumPy
        warnings.warn("Casting complex values to real discards the imaginary part", ComplexWarning, stacklevel=4)
    out._t.copy_(cast_tensor(r, loop_dt, out._dtype) if out._dtype != loop_dt else unalias((r,), out._t)[0])
    return out
