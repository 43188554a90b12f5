"""Moving data onto the device and back: ``array``/``asarray`` (host data, torch tensors, DLPack objects),
``asnumpy``, ``from_dlpack`` and ``get_array_module``. Re-exported by ``_core`` (the contract's home)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _alloc, _dtypes, _float64
from ascend_compat.cupy._core import _wrap, current_torch_device, ndarray
from ascend_compat.cupy._core_dlpack import from_dlpack
from ascend_compat.cupy._dtypes import to_numpy_dtype

_WIDE_TORCH = {torch.float64: numpy.dtype(numpy.float64), torch.complex128: numpy.dtype(numpy.complex128)}


def _host_to_tensor(arr: numpy.ndarray, device: torch.device) -> torch.Tensor:
    arr = _dtypes.numpy_view_for_torch(arr)
    if arr.flags.f_contiguous and not arr.flags.c_contiguous:
        t = _host_to_tensor(arr.T, device)
        return t.permute(*range(t.dim() - 1, -1, -1))  # (torch deprecates .T on tensors not 2-d)
    if not arr.flags.c_contiguous or not arr.flags.writeable or arr.dtype.byteorder == ">":
        arr = numpy.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
    t = torch.from_numpy(arr)
    if device.type == "cpu":
        big = _alloc.empty_if_large(t.shape, t.dtype, device)  # huge pages for a large copy, as NumPy's
        return big.copy_(t) if big is not None else t.clone() if t.numel() else t
    return t.to(device)


def array(obj: Any, dtype: Any = None, copy: Any = True, order: str = "K", subok: bool = False,
          ndmin: int = 0, *, blocking: bool = False) -> ndarray:
    """A new device array from ``obj`` (host data, nested sequences, device arrays, DLPack objects)."""
    order = order.upper() if isinstance(order, str) else "K"
    if not isinstance(obj, ndarray) and hasattr(obj, "__cupy_get_ndarray__"):
        obj = obj.__cupy_get_ndarray__()
    if isinstance(obj, ndarray):
        out = obj.astype(dtype if dtype is not None else obj._dtype, order=order, copy=bool(copy))
        if copy is False and out is not obj:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
    elif isinstance(obj, torch.Tensor):
        out = _from_tensor(obj, dtype)
        if copy:
            out = out.copy(order=order)
    elif isinstance(obj, (list, tuple)) and _contains_ndarray(obj):
        from ascend_compat.cupy._manipulation import stack

        out = stack([array(o, copy=False) for o in obj])
        # NumPy lays a list of arrays out in C order unless F is asked for
        out = out.astype(out._dtype if dtype is None else dtype, order="F" if order == "F" else "C", copy=False)
    else:
        if hasattr(obj, "__dlpack__") and not isinstance(obj, (numpy.ndarray, numpy.generic)):
            return from_dlpack(obj)
        np_order: Any = order  # validated by NumPy
        host = numpy.array(obj, dtype=None if dtype is None else to_numpy_dtype(dtype), order=np_order)
        if host.dtype.kind in "OSUV":
            raise ValueError(f"Unsupported dtype {host.dtype}")
        if not host.dtype.isnative:  # CuPy byte-swaps host data into native order
            host = host.astype(host.dtype.newbyteorder("="))
        to_numpy_dtype(host.dtype)
        dev = current_torch_device()
        if host.dtype in _float64.WIDE:  # ASCEND_COMPAT_CUPY_FLOAT64 on the device (error: raises here)
            want = _float64.check_dtype(host.dtype, dev)
            if want != host.dtype:
                host = host.astype(want)
        out = _wrap(_host_to_tensor(host, dev), host.dtype)
        if order in ("C", "F") and host.ndim > 1:
            out = out.copy(order=order)
    if ndmin > out.ndim:
        out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
    return out


def _contains_ndarray(seq: Any) -> bool:
    return any(isinstance(o, ndarray) or hasattr(o, "__cupy_get_ndarray__")
               or (isinstance(o, (list, tuple)) and _contains_ndarray(o)) for o in seq)


def _from_tensor(t: torch.Tensor, dtype: Any) -> ndarray:
    dev = current_torch_device()
    if t.device != dev:
        if t.dtype in _WIDE_TORCH and dtype is None:  # a float64 tensor copied onto the device: the float64 policy
            want = _float64.check_dtype(_WIDE_TORCH[t.dtype], dev)
            t = t.to(dev, _dtypes.storage_dtype(want))
        else:
            t = t.to(dev)
    out = _wrap(t.detach())
    return out if dtype is None else out.astype(dtype, copy=False)


def asarray(a: Any, dtype: Any = None, order: Optional[str] = None, *, blocking: bool = False) -> ndarray:
    """``a`` as a device array; no copy when it already is one (or a torch tensor on the current device)."""
    order = order.upper() if isinstance(order, str) else None
    if type(a) is ndarray or (isinstance(a, ndarray) and a._is_flip):
        if dtype is None or to_numpy_dtype(dtype) == a._dtype:
            if order in ("C", "F") and not a.flags[order]:
                return a.copy(order=order)
            return a
        return a.astype(dtype, order=order or "K")
    if isinstance(a, torch.Tensor):
        return _from_tensor(a, dtype)
    return array(a, dtype, copy=False, order=order or "K")


def asanyarray(a: Any, dtype: Any = None, order: Optional[str] = None, *, blocking: bool = False) -> ndarray:
    return asarray(a, dtype, order)


def ascontiguousarray(a: Any, dtype: Any = None) -> ndarray:
    """``a`` in C order, at least 1-d (as NumPy 2 and CuPy)."""
    out = asarray(a, dtype, order="C")
    return out.reshape(1) if out.ndim == 0 else out


def asfortranarray(a: Any, dtype: Any = None) -> ndarray:
    """``a`` in Fortran order, at least 1-d (as NumPy 2 and CuPy)."""
    out = asarray(a, dtype, order="F")
    return out.reshape(1) if out.ndim == 0 else out


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, *, blocking: bool = True) -> Any:
    """A host ``numpy.ndarray`` of ``a`` (a copy for device arrays)."""
    if isinstance(a, ndarray):
        return a.get(stream, order, out)
    if out is not None:
        out[...] = a
        return out
    np_order: Any = order  # validated by NumPy
    return numpy.asarray(a, order=np_order)


def new_ndarray(cls: type[ndarray], shape: Any, dtype: Any, memptr: Any, strides: Any, order: Any) -> Any:
    """``cls(shape, dtype, memptr, strides, order)`` (``ndarray.__new__``): new memory, or a view of the memory
    ``memptr`` (an array's ``.data``) with ``strides`` in bytes; a ``FlipView`` where a stride is negative."""
    t, dt, base = _new_array(shape, dtype, memptr, strides, order)
    if isinstance(t, ndarray):  # negative strides (``_core_flip``)
        if cls is not ndarray:
            raise TypeError(f"{cls.__name__}(memptr=, strides=): negative strides are supported for ndarray itself, "
                            "not for its subclasses")
        return t
    self: ndarray = object.__new__(cls)
    self._t, self._dtype, self._base = t, dt, base
    return self


def _new_array(shape: Any, dtype: Any, memptr: Any, strides: Any, order: Any) -> tuple[Any, Any, Any]:
    """(tensor, or a ``FlipView`` for negative strides; dtype; base) of ``ndarray(shape, dtype, memptr, strides,
    order)``."""
    from ascend_compat.cupy._creation import _shape, empty

    shp = _shape(shape)
    if len(shp) > 64:
        raise ValueError(f"maximum supported dimension for an ndarray is 64, found {len(shp)}")
    if order not in ("C", "F", "c", "f", None):
        raise ValueError(f"order not understood: {order!r}")
    dt = to_numpy_dtype(dtype)
    if strides is None and memptr is None:
        new = empty(shp, dt, order=order or "C")
        return new._t, dt, None
    isz = dt.itemsize
    byte_strides = _default_strides(shp, isz, order) if strides is None else tuple(int(s) for s in strides)
    if len(byte_strides) != len(shp):
        raise ValueError(f"ndarray() with strides {byte_strides}: need one stride per axis of shape {shp}")
    if memptr is None:  # strides into new memory of the array's own size, as NumPy (CuPy's checks and wording)
        if all(shp) and any(n > 1 and s < 0 for n, s in zip(shp, byte_strides)):  # (CuPy's get_range)
            raise ValueError("ndarray() with strides currently does not allow negative strides")
        right = 0 if not all(shp) else isz + sum((n - 1) * s for n, s in zip(shp, byte_strides))
        if right > math.prod(shp) * isz:
            raise ValueError(f"ndarray() with strides must stay within a contiguous size of {math.prod(shp) * isz} "
                             f"but got {right}.")
        memptr = empty((math.prod(shp) * isz,), numpy.uint8).data
    return _view_of_memory(shp, dt, memptr, byte_strides)


def _view_of_memory(shp: tuple[int, ...], dt: numpy.dtype, memptr: Any, byte_strides: tuple[int, ...]
                    ) -> tuple[Any, Any, Any]:
    """(tensor, dtype, base) of the view of ``memptr``'s memory whose element 0 is at ``memptr`` (CuPy's rule, also
    for negative strides: the other elements may lie below it); a view reaching outside the memory raises."""
    from ascend_compat.cupy._core import _root
    from ascend_compat.cupy._core_flip import layout, make, memory_tensor

    src = memptr._a
    if dt in _dtypes.WIDENED or src._dtype in _dtypes.WIDENED:
        raise TypeError("ndarray(memptr=) cannot reinterpret uint16/uint32/uint64 memory in ascend_compat.cupy")
    isz = dt.itemsize
    mt = memory_tensor(src)  # (a negative-stride view's memory too; memptr counts from its first element)
    storage = mt.untyped_storage()
    start = layout(src)[0] * mt.element_size() + memptr.offset
    if start % isz or any(s % isz for s in byte_strides):
        raise ValueError(f"memptr offset and strides must be multiples of the itemsize {isz}")
    if all(shp):  # CuPy does not check (the memory may be foreign); torch cannot reach outside its storage
        low = start + sum((n - 1) * s for n, s in zip(shp, byte_strides) if s < 0)
        high = start + sum((n - 1) * s for n, s in zip(shp, byte_strides) if s > 0) + isz
        if low < 0 or high > storage.nbytes():
            raise ValueError(f"ndarray() with strides {byte_strides} reaches outside its {storage.nbytes()}-byte "
                             f"memory: bytes [{low}, {high}) of it (shape {shp}, itemsize {isz}, element 0 at byte "
                             f"{start})")
    t = torch.empty(0, dtype=_dtypes.storage_dtype(dt), device=mt.device).set_(storage)
    out = make(t, (start // isz, shp, tuple(s // isz for s in byte_strides)), dt, _root(src))
    return (out if out._is_flip else out._t), dt, _root(src)


def _default_strides(shape: tuple[int, ...], itemsize: int, order: Any) -> tuple[int, ...]:
    dims = range(len(shape)) if order in ("F", "f") else range(len(shape) - 1, -1, -1)
    out, step = [0] * len(shape), itemsize
    for d in dims:
        out[d] = step
        step *= max(shape[d], 1)
    return tuple(out)


fromDlpack = from_dlpack  # noqa: N816 (CuPy's deprecated name)


def get_array_module(*args: Any) -> Any:
    """``ascend_compat.cupy`` when any argument is a device array, else ``numpy``."""
    for a in args:
        if isinstance(a, ndarray):
            import ascend_compat.cupy as cp

            return cp
    return numpy
