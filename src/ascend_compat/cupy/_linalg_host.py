"""Large matrix products of CPU arrays on NumPy's BLAS, computed on the tensors' own memory.

torch's CPU BLAS (MKL in the x86-64 wheels) takes 1.15-1.35x the time of the OpenBLAS that NumPy bundles for
float32/float64 products of 512^2 to 4096^2 on AMD EPYC hosts (torch 2.13, NumPy 2.4, one thread); so, as the
elementwise ufuncs do for cos & co. (``_ufunc_write``), ``matmul``/``dot``/``@`` of large float and complex CPU
arrays run NumPy's kernel on zero-copy ``Tensor.numpy()`` views, writing a given ``out=`` in place (NumPy buffers
an ``out=`` that overlaps an operand). Results are NumPy's own, within the CuPy suite's matmul tolerance of torch's.

Only CPU tensors: an npu tensor's memory is device memory on a real NPU, so device arrays always run the
backend's kernel (the simulated NPU has its own host BLAS for large products, ``simulate/_host_blas.py``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy
import torch

from ascend_compat.cupy import _core

__all__ = ["MIN_MACS", "product"]

# From this many multiply-adds on (256^3, the simulated NPU's threshold too): below it torch's kernel is as fast
# (measured 0.95-1.05x of NumPy's route from 64^3 to 256^3, one thread) and the route's views cost ~1 us.
MIN_MACS = 1 << 24
_KINDS = "fc"  # float16 is not among NumPy's BLAS types (and its loop is slow): torch keeps it


def _viewable(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and not (t.requires_grad or t.is_conj() or t.is_neg()) and t.dim() > 0


def _macs(ta: torch.Tensor, tb: torch.Tensor) -> int:
    """Multiply-adds of a product of ``ta`` (.., m, k) and ``tb`` (.., k, n) (1-D operands are vectors)."""
    k = ta.shape[-1]
    if k == 0:
        return 0
    n = tb.shape[-1] if tb.dim() > 1 else 1
    m_rows = ta.numel() // k  # every row of a (all batches) times every column of b
    return max(m_rows * n, tb.numel() // k * (ta.shape[-2] if ta.dim() > 1 else 1)) * k


def product(fn: Callable[..., Any], ta: torch.Tensor, tb: torch.Tensor, res: numpy.dtype,
            out: Optional[_core.ndarray]) -> Optional[_core.ndarray]:
    """``fn(ta, tb)`` (``numpy.matmul`` or ``numpy.dot``) by NumPy on the tensors' memory, as an array of dtype
    ``res`` (or written into ``out`` of that dtype); None where torch's kernel runs instead: small products, other
    dtypes or devices, an ``out=`` of another dtype, shapes NumPy refuses (torch's path raises its own error)."""
    if res.kind not in _KINDS or res.itemsize < 4 or not (_viewable(ta) and _viewable(tb)) or \
            _macs(ta, tb) < MIN_MACS:
        return None
    target = None
    if out is not None:
        if type(out) is not _core.ndarray or out.dtype != res or not _viewable(out._t):  # (not negative strides)
            return None
        target = out._t.numpy()
    try:
        result = fn(ta.numpy(), tb.numpy(), out=target)
    except ValueError:
        return None
    if out is not None:
        return out
    return _core._wrap(torch.from_numpy(numpy.asarray(result)), dtype=res)
