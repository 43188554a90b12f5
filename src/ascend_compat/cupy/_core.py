"""The ``ndarray`` of ``ascend_compat.cupy``: a NumPy-typed view of a torch tensor on the target device.

Contract for the other ``ascend_compat.cupy`` modules (linalg, fft, random, cuda): an ``ndarray`` keeps its
torch tensor in ``_t`` and its logical ``numpy.dtype`` in ``_dtype`` (the tensor's dtype is the same, except that
uint16/uint32 are stored widened to int32/int64 and uint64 as the int64 bit pattern, see ``_dtypes``).
``_wrap(t, dtype=None)`` makes an ndarray from a tensor without copying; ``_unwrap(x)`` gives the tensor of an
ndarray, a numpy scalar or a Python scalar (as a 0-d tensor on the current device) and raises TypeError for a host
``numpy.ndarray``, as CuPy does for implicit host->device conversion. ``asarray`` / ``asnumpy`` move data between
host and device. ``current_torch_device()`` is the device new arrays go to: the (simulated or real) ``npu`` when
``torch.npu`` is available, else ``cuda`` when available, else the CPU; its index is the backend's current device,
so ``cuda.Device(n)`` only needs to set the backend's current device.
"""

from __future__ import annotations

import contextlib
import math
import types
import warnings
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

import numpy
import torch

from ascend_compat.cupy import _core_dlpack, _cupyx, _dtypes
from ascend_compat.cupy._core_dlpack import export_tensor as _export_tensor
from ascend_compat.cupy._core_flags import Flags, _MemoryPointer

_CPU = torch.device("cpu")
# ``cupy._core.internal`` helpers that CuPy's testing package uses.
internal = types.SimpleNamespace(prod=math.prod)
_FORCED: Optional[str] = None
_FLIPS_LIVE = 0  # negative-stride views alive (``_core_flip``): only then can ``_wrap`` meet their read copies
_READ_COPIES: weakref.WeakSet[Any] = weakref.WeakSet()  # their storages (not every inference tensor: a user's too)
_KIND_CACHE: dict[int, str] = {}


def _device_kind() -> str:
    if _FORCED is not None:
        return _FORCED
    npu = getattr(torch, "npu", None)
    key = id(npu)
    kind = _KIND_CACHE.get(key)
    if kind is None:
        if npu is not None and npu.is_available():
            kind = "npu"
        elif torch.cuda.is_available():
            kind = "cuda"
        else:
            kind = "cpu"
        _KIND_CACHE[key] = kind
    return kind


def current_torch_device() -> torch.device:
    """The torch device new arrays are created on (npu, else cuda, else cpu; at the backend's current index)."""
    kind = _device_kind()
    if kind == "cpu":
        return _CPU
    return torch.device(kind, getattr(torch, kind).current_device())


@contextlib.contextmanager
def use_device_kind(kind: Optional[str]) -> Iterator[None]:
    """Force new arrays onto ``kind`` ("cpu", "npu", "cuda") inside the block (tests, benchmarks)."""
    global _FORCED
    old, _FORCED = _FORCED, kind
    try:
        yield
    finally:
        _FORCED = old


class ndarray:  # noqa: N801
    """A CuPy-compatible n-dimensional array held in a torch tensor on the current device."""

    __slots__ = ("__weakref__", "_base", "_dtype", "_t")
    __array_priority__ = 100
    _is_flip = False  # True for negative-stride views (``_core_flip.FlipView``)
    _t: torch.Tensor
    _dtype: numpy.dtype
    _base: Optional[ndarray]

    if TYPE_CHECKING:  # methods and operators are attached at import by the modules defining them (_methods)
        def __getattr__(self, name: str) -> Any: ...
        def __getitem__(self, key: Any) -> Any: ...
        def __setitem__(self, key: Any, value: Any) -> None: ...

    def __new__(cls, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None,
                order: Any = "C") -> ndarray:
        from ascend_compat.cupy._transfer import new_ndarray

        return new_ndarray(cls, shape, dtype, memptr, strides, order)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # __new__ did the work (subclasses add arguments)
        pass

    # -- basic attributes -------------------------------------------------------------------------------------
    @property
    def dtype(self) -> numpy.dtype:
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._t.shape)

    @shape.setter
    def shape(self, value: Any) -> None:
        from ascend_compat.cupy._manipulation import _view_reshape

        self._t = _view_reshape(self, value)

    @property
    def ndim(self) -> int:
        return self._t.dim()

    @property
    def size(self) -> int:
        return self._t.numel()

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._t.numel() * self._dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        if self._base is None and 0 in self._t.shape:  # NumPy 2 gives new empty arrays zero strides
            return (0,) * self._t.dim()
        isz = self._dtype.itemsize
        return tuple(s * isz for s in self._t.stride())

    @property
    def base(self) -> Optional[ndarray]:
        return self._base

    @property
    def flags(self) -> Flags:
        return Flags.of(self)

    @property
    def device(self) -> Any:
        from ascend_compat.cupy import cuda

        return cuda.Device(self._t.device.index or 0)

    @property
    def data(self) -> _MemoryPointer:
        return _MemoryPointer(self)

    @property
    def T(self) -> ndarray:  # noqa: N802 (NumPy's name)
        return self.transpose()

    @property
    def mT(self) -> ndarray:  # noqa: N802 (NumPy's name)
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return _wrap(self._t.transpose(-1, -2), self._dtype, base=self)

    # -- host transfer -----------------------------------------------------------------------------------------
    def get(self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> Any:
        """Copy to a new host ``numpy.ndarray`` (or into ``out``)."""
        _cupyx.declare_synchronize()  # cupyx.allow_synchronize(False) forbids it
        t = self._t.detach()
        if t.is_conj():
            t = t.resolve_conj()
        host = t.cpu()
        arr = host.numpy()
        if host.data_ptr() == t.data_ptr() or arr.base is not None:
            arr = arr.copy(order="K")
        dt = self._dtype
        if arr.dtype != dt:
            arr = arr.view(dt) if dt == _dtypes.UINT64 else arr.astype(dt)
        if out is not None:
            if not isinstance(out, numpy.ndarray) or out.shape != arr.shape or out.dtype != dt:
                raise ValueError("out must be a numpy.ndarray of the same shape and dtype")
            if not (out.flags.c_contiguous or out.flags.f_contiguous):  # CuPy copies into contiguous memory only
                raise RuntimeError("Cannot set to non-contiguous array")
            out[...] = arr
            return out
        order = str(order).upper()
        if order == "A":
            order = "F" if self.flags.f_contiguous and not self.flags.c_contiguous else "C"
        if order == "F" and not arr.flags.f_contiguous:
            return numpy.asfortranarray(arr)
        return numpy.ascontiguousarray(arr) if order == "C" and not arr.flags.c_contiguous else arr

    def set(self, arr: Any, stream: Any = None) -> None:
        """Copy the host array ``arr`` (same shape) into this array."""
        arr = numpy.asarray(arr)
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if arr.dtype != self._dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self._dtype} array")
        self._t.copy_(_host_to_tensor(arr, self._t.device))

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._t.device.type != "cuda":
            raise AttributeError("__cuda_array_interface__ exists only for arrays on CUDA devices; on "
                                 f"{self._t.device.type} use DLPack (__dlpack__ / torch.from_dlpack) instead")
        return {"shape": self.shape, "typestr": self._dtype.str, "data": (self._t.data_ptr(), False),
                "strides": self.strides, "version": 3}

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Optional[bool] = None) -> Any:
        return _core_dlpack.dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return _core_dlpack.dlpack_device(self)

    def toDlpack(self) -> Any:  # noqa: N802 (CuPy's name)
        """A DLPack capsule sharing this array's memory."""
        return torch.utils.dlpack.to_dlpack(_export_tensor(self))

    # -- conversions -------------------------------------------------------------------------------------------
    def item(self, *args: Any) -> Any:
        return self.get().item(*args)

    def tolist(self) -> Any:
        return self.get().tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return self.get().tobytes(order)

    def __bytes__(self) -> bytes:
        if self.ndim == 0 and self._dtype.kind in "biu":  # bytes(int): that many zero bytes, as NumPy
            return bytes(int(self))
        return self.tobytes()

    def _scalar(self, kind: str) -> Any:
        if self.size != 1:
            raise TypeError(f"only length-1 arrays can be converted to Python scalars ({kind})")
        return self.get().reshape(())[()]

    def __bool__(self) -> bool:
        if self.size == 0:  # CuPy: False with a DeprecationWarning (NumPy >= 2.2 raises)
            warnings.warn("The truth value of an empty array is ambiguous. Returning False, but in future this "
                          "will result in an error.", DeprecationWarning, stacklevel=2)
            return False
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. "
                             "Use a.any() or a.all()")
        return bool(self._scalar("bool"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self.ndim != 0 or self._dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._scalar("index"))

    def __len__(self) -> int:
        if self._t.dim() == 0:
            raise TypeError("len() of unsized object")
        return self._t.shape[0]

    def __iter__(self) -> Iterator[ndarray]:
        if self._t.dim() == 0:
            raise TypeError("iteration over a 0-d array")
        return (_wrap(row, self._dtype, base=self) for row in self._t.unbind(0))

    def __repr__(self) -> str:
        return repr(self.get()).replace("array(", "array(", 1)

    def __str__(self) -> str:
        return str(self.get())

    def __format__(self, spec: str) -> str:
        return format(self.get() if self.ndim else self.get()[()], spec)

    def __copy__(self) -> ndarray:
        return self.copy()

    def __deepcopy__(self, memo: Any) -> ndarray:  # on the array's own device, whatever the current one
        return _wrap(self._t.clone(memory_format=torch.preserve_format), self._dtype)

    def __reduce__(self) -> Any:
        return (array, (self.get(order="A"),))  # an F-ordered array comes back F-ordered, as NumPy's pickle

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        import ascend_compat.cupy as cp

        home: Any = cp  # numpy.linalg.qr -> cupy.linalg.qr, numpy.fft.fft -> cupy.fft.fft
        for part in (func.__module__ or "numpy").split(".")[1:]:
            if part.startswith("_"):
                break
            home = getattr(home, part, None)
        mine = getattr(home, func.__name__, None) or getattr(cp, func.__name__, None)
        if mine is None or mine is func:
            return NotImplemented
        return mine(*args, **kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        import ascend_compat.cupy as cp

        mine = getattr(cp, ufunc.__name__, None)
        if mine is None:
            return NotImplemented
        # NumPy hands scalars over as 0-d host arrays: give them back as scalars (CuPy accepts those).
        inputs = tuple(x[()] if isinstance(x, numpy.ndarray) and x.ndim == 0 else x for x in inputs)
        return getattr(mine, method)(*inputs, **kwargs)

    def __cupy_get_ndarray__(self) -> ndarray:
        return self

    def __hash__(self) -> int:  # NumPy arrays are unhashable
        raise TypeError("unhashable type: 'ndarray'")

    # Methods (arithmetic, reductions, indexing, manipulation) are attached by the modules defining them.


def _root(a: ndarray) -> ndarray:
    """The array owning the memory ``a`` views (``a`` itself when it owns it)."""
    return a if a._base is None else a._base


def _wrap(t: torch.Tensor, dtype: Any = None, base: Optional[ndarray] = None) -> ndarray:
    """An ndarray over tensor ``t`` (no copy); ``dtype`` is the logical numpy dtype when ``t`` is widened."""
    if _FLIPS_LIVE and t.is_inference() and t.untyped_storage() in _READ_COPIES:  # a negative-stride view's read
        # copy (write-protected): a copy of it. Other inference tensors (torch.inference_mode) stay views
        t = t.clone()
    a = object.__new__(ndarray)
    if dtype is None:
        tdt = t.dtype
        if tdt in (torch.uint16, torch.uint32, torch.uint64):
            dtype = _dtypes.logical_dtype(tdt)
            t = t.view(torch.int64) if tdt == torch.uint64 else t.to(_dtypes.storage_dtype(dtype))
        else:
            dtype = _dtypes.logical_dtype(tdt)
            if tdt == torch.bfloat16:
                t = t.float()
    a._t = t
    a._dtype = dtype
    a._base = base
    return a


def _unwrap(x: Any) -> torch.Tensor:
    """The tensor of ``x``: an ndarray, a numpy scalar or a Python scalar (0-d, on the current device)."""
    if type(x) is ndarray:
        return x._t
    if isinstance(x, numpy.ndarray):
        raise TypeError("Unsupported type <class 'numpy.ndarray'>: implicit conversion of a host NumPy array "
                        "is not allowed; use ascend_compat.cupy.asarray(x)")
    if isinstance(x, ndarray):
        return x._t
    if isinstance(x, (bool, int, float, complex, numpy.generic)):
        return asarray(x)._t
    raise TypeError(f"Unsupported type {type(x)}")


# Host <-> device transfer lives in _transfer; the names stay importable from here (the contract's module).
from ascend_compat.cupy._transfer import (  # noqa: E402
    _host_to_tensor,
    array,
    asanyarray,
    asarray,
    ascontiguousarray,
    asfortranarray,
    asnumpy,
    from_dlpack,
    fromDlpack,
    get_array_module,
)

__all__ = [
    "_host_to_tensor",
    "array",
    "asanyarray",
    "asarray",
    "ascontiguousarray",
    "asfortranarray",
    "asnumpy",
    "current_torch_device",
    "fromDlpack",
    "from_dlpack",
    "get_array_module",
    "ndarray",
]
