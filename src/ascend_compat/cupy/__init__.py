"""A CuPy-compatible array module on torch tensors on the current device (npu, simulated npu, cuda or cpu).

``import ascend_compat.cupy as cp``; ``cp.ndarray`` has a real ``numpy.dtype`` and NumPy 2 type promotion
(NEP 50). ``linalg``, ``fft``, ``random``, ``cuda`` and ``show_config`` load on first use.
"""

# ruff: noqa: F401  (this module re-exports the package's public names)
from __future__ import annotations

import builtins
import importlib
from typing import TYPE_CHECKING, Any

import numpy as _numpy

# NumPy names CuPy re-exports unchanged.
from numpy import (
    base_repr,
    binary_repr,
    bool_,
    byte,
    cdouble,
    complex64,
    complex128,
    complexfloating,
    csingle,
    double,
    dtype,
    e,
    euler_gamma,
    finfo,
    float16,
    float32,
    float64,
    floating,
    format_float_positional,
    format_float_scientific,
    generic,
    half,
    iinfo,
    inexact,
    inf,
    int8,
    int16,
    int32,
    int64,
    int_,
    intc,
    integer,
    intp,
    issubdtype,
    longlong,
    nan,
    newaxis,
    number,
    pi,
    promote_types,
    short,
    signedinteger,
    single,
    ubyte,
    uint,
    uint8,
    uint16,
    uint32,
    uint64,
    uintc,
    uintp,
    ulonglong,
    unsignedinteger,
    ushort,
)

from ascend_compat.cupy import (  # _internals/_methods attach cupy._core names and ndarray methods
    _internals,
    _methods,
    _util,
    exceptions,
)
from ascend_compat.cupy._apply import *  # noqa: F403
from ascend_compat.cupy._binary import *  # noqa: F403
from ascend_compat.cupy._core import (
    array,
    asanyarray,
    asarray,
    ascontiguousarray,
    asfortranarray,
    asnumpy,
    current_torch_device,
    from_dlpack,
    fromDlpack,
    get_array_module,
    ndarray,
)
from ascend_compat.cupy._creation import *  # noqa: F403
from ascend_compat.cupy._dtypes import make_aligned_dtype
from ascend_compat.cupy._extra import *  # noqa: F403
from ascend_compat.cupy._float64 import Float64DowncastWarning, Float64Error  # the float64 policy's types
from ascend_compat.cupy._functional import *  # noqa: F403
from ascend_compat.cupy._gradient import *  # noqa: F403
from ascend_compat.cupy._indexing import *  # noqa: F403
from ascend_compat.cupy._io import *  # noqa: F403
from ascend_compat.cupy._kernels import ElementwiseKernel, RawKernel, RawModule, ReductionKernel, fuse
from ascend_compat.cupy._linalg_top import *  # noqa: F403
from ascend_compat.cupy._manipulation import *  # noqa: F403
from ascend_compat.cupy._memory import *  # noqa: F403
from ascend_compat.cupy._misc import *  # noqa: F403
from ascend_compat.cupy._more import *  # noqa: F403
from ascend_compat.cupy._pad import *  # noqa: F403
from ascend_compat.cupy._polynomial import *  # noqa: F403
from ascend_compat.cupy._rearrange import *  # noqa: F403
from ascend_compat.cupy._reduction import *  # noqa: F403
from ascend_compat.cupy._sorting import *  # noqa: F403
from ascend_compat.cupy._split import *  # noqa: F403
from ascend_compat.cupy._stats import *  # noqa: F403
from ascend_compat.cupy._ufunc import ufunc
from ascend_compat.cupy._ufuncs import *  # noqa: F403

if TYPE_CHECKING:
    from ascend_compat.cupy.cuda.memory import MemoryPool, PinnedMemoryPool

AxisError = _numpy.exceptions.AxisError
ComplexWarning = _numpy.exceptions.ComplexWarning
bool = _numpy.bool_
float_ = _numpy.float64
complex_ = _numpy.complex128
__version__ = "14.2.0+ascend_compat"

_LAZY = {"linalg": "linalg", "fft": "fft", "random": "random", "cuda": "cuda", "testing": "testing",
         "sparse": None, "show_config": "_float64"}
_LAZY["polynomial"] = "polynomial"
_LAZY["lib"] = "lib"


def __getattr__(name: str) -> Any:
    # The submodules another author maintains load on first use, so this package imports without them.
    if name in _LAZY:
        target = _LAZY[name]
        if target is None:
            raise AttributeError(f"ascend_compat.cupy.{name} is not supported")
        try:
            mod = importlib.import_module(f"ascend_compat.cupy.{target}")
        except ModuleNotFoundError as exc:  # not shipped (cupy.testing): hasattr() must answer False, not raise
            if exc.name != f"ascend_compat.cupy.{target}":
                raise
            from ascend_compat._cupy_alias import not_provided

            raise AttributeError(not_provided(f"cupy.{name}", attribute=True)
                                 or f"ascend_compat.cupy.{name} is not supported") from None
        value = getattr(mod, name) if name == "show_config" else mod
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ascend_compat.cupy' has no attribute {name!r}")


def install_as_cupy() -> builtins.bool:  # `bool` is NumPy's here (CuPy's cupy.bool)
    """Make ``import cupy`` give this module (never over a real CuPy that is installed and usable); returns
    whether it did. ``uninstall_as_cupy()`` undoes it."""
    from ascend_compat.cupy._install import install_as_cupy as install

    return install()


def uninstall_as_cupy() -> None:
    """Undo :func:`install_as_cupy`."""
    from ascend_compat.cupy._install import uninstall_as_cupy as uninstall

    uninstall()


def is_available() -> builtins.bool:
    """True: the module always has a device (the CPU at worst)."""
    return True


def get_default_memory_pool() -> MemoryPool:
    """The device memory pool (``cupy.cuda.MemoryPool``; its figures are the backend allocator's)."""
    from ascend_compat.cupy import cuda

    return cuda.get_default_memory_pool() if hasattr(cuda, "get_default_memory_pool") else cuda.MemoryPool()


def get_default_pinned_memory_pool() -> PinnedMemoryPool:
    """The pinned host memory pool (``cupy.cuda.PinnedMemoryPool``)."""
    from ascend_compat.cupy import cuda

    return cuda.get_default_pinned_memory_pool()
