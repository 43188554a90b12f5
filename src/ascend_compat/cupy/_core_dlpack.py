"""DLPack exchange: ``ndarray.__dlpack__``/``__dlpack_device__``/``toDlpack`` and ``from_dlpack``, with CuPy's rules
for ``dl_device`` (the array's own device, or the CPU through a host copy), ``copy`` and ``stream``. Arrays share
memory with the tensors they exchange, except uint16/uint32 arrays, which are held widened and export a copy."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes

if TYPE_CHECKING:
    from ascend_compat.cupy._core import ndarray

_CPU_DEVICE = (1, 0)  # DLPack's kCPU
_EXT_DEV = 12  # DLPack's kDLExtDev: torch only names the NPU "privateuse1"


def export_tensor(a: ndarray) -> torch.Tensor:
    """The tensor other libraries see: the real unsigned type (a copy for uint16/32), conjugation resolved."""
    if a._is_flip:  # negative strides, which torch cannot express: a copy in the array's order
        from ascend_compat.cupy._core_flip import fresh

        t = fresh(a)
    else:
        t = a._t.detach()
    if a._dtype in _dtypes.WIDENED:
        t = t.view(torch.uint64) if a._dtype == _dtypes.UINT64 else t.to(unsigned_torch(a._dtype))
    return t.resolve_conj()


def unsigned_torch(dt: numpy.dtype) -> torch.dtype:
    return {2: torch.uint16, 4: torch.uint32, 8: torch.uint64}[dt.itemsize]


def dlpack_device(a: ndarray) -> tuple[int, int]:
    dev = a._t.device
    if dev.type == "npu":
        return (_EXT_DEV, dev.index or 0)
    kind, index = a._t.__dlpack_device__()
    return (int(kind), int(index))


def dlpack(a: ndarray, stream: Any = None, max_version: Any = None, dl_device: Any = None,
           copy: Optional[bool] = None) -> Any:
    """``a.__dlpack__(...)``: a capsule of ``a``'s memory, or of a host copy when ``dl_device`` is the CPU."""
    if stream == 0:
        warnings.warn("Stream 0 is ambiguous in DLPack (CUDA's legacy default stream); it is taken as the current "
                      "stream", UserWarning, stacklevel=3)
    if a._is_flip and copy is False:
        raise BufferError("an array with negative strides cannot be exported without a copy (torch's DLPack has no "
                          "negative strides) and copy=False was asked")
    own = dlpack_device(a)
    target = own if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
    t = export_tensor(a)
    if target != own or (copy and dl_device is not None):
        if target != _CPU_DEVICE:
            raise BufferError(f"cannot export an array on DLPack device {own} to device {target}")
        if copy is False and own != _CPU_DEVICE:
            raise ValueError("exporting device memory to the CPU needs a copy, and copy=False was asked")
        t = t.cpu() if own != _CPU_DEVICE else t.clone()  # a host copy
    elif copy:
        raise BufferError("__dlpack__(copy=True) is only supported for host copies (dl_device=(1, 0))")
    if max_version is None:
        return t.__dlpack__()
    return t.__dlpack__(max_version=(int(max_version[0]), int(max_version[1])))


def _consumed(capsule: Any) -> bool:
    return type(capsule).__name__ == "PyCapsule" and '"used_dltensor' in repr(capsule)


def from_dlpack(x: Any, *, device: Any = None, copy: Optional[bool] = None) -> ndarray:
    """An array over the memory of ``x`` (an object with ``__dlpack__``, or a DLPack capsule) without copying."""
    from ascend_compat.cupy._core import _wrap, ndarray
    from ascend_compat.cupy._core_flip import view_of

    if device is not None:
        raise NotImplementedError("from_dlpack(device=...) is not supported: the array stays on x's device")
    if isinstance(x, ndarray):
        if copy:
            dlpack(x, copy=True)  # raises BufferError, as CuPy does for device-to-device copies
        return view_of(x._t.view(x._t.shape), x)
    if isinstance(x, torch.Tensor):  # a tensor already is the storage (torch's DLPack check misses "npu")
        return _wrap(x.detach())
    if _consumed(x):
        raise ValueError("DLPack tensor capsule was consumed multiple times: a capsule can be read once")
    try:
        return _wrap(torch.utils.dlpack.from_dlpack(x))
    except ValueError:
        if not hasattr(x, "__dlpack__"):
            raise
        return _wrap(torch.utils.dlpack.from_dlpack(x.__dlpack__()))
