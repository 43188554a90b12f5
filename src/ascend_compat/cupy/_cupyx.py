"""``cupyx``: the subset of CuPy's ``cupyx`` namespace this package implements (``import cupyx`` gives this module
while ``import cupy`` resolves to ``ascend_compat.cupy``).

Here: ``errstate``/``seterr``/``geterr``, ``allow_synchronize``/``DeviceSynchronized``, ``scatter_add``/``scatter_max``/
``scatter_min``, ``rsqrt``, ``get_runtime_info`` and the ``*_pinned`` host-array constructors. Not here:
``cupyx.scipy``, ``cupyx.jit``, ``cupyx.profiler``, cuTENSOR/cuSOLVER/cuSPARSE wrappers: ``import cupyx.scipy``
raises ``ModuleNotFoundError`` and ``cupyx.scipy`` an ``AttributeError``, each saying that this package does not
provide it and what to use instead (``ascend_compat._cupy_alias.NOT_PROVIDED``).
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from typing import Any, Optional

from ascend_compat._cupy_alias import not_provided
from ascend_compat.cupy._errstate import errstate, geterr, seterr

__all__ = [
    "DeviceSynchronized",
    "allow_synchronize",
    "empty_like_pinned",
    "empty_pinned",
    "errstate",
    "get_runtime_info",
    "geterr",
    "rsqrt",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "seterr",
    "zeros_like_pinned",
    "zeros_pinned",
]

#: A package for the import system (no submodules of its own): ``import cupyx.scipy`` then asks the finders, whose
#: answer says that cupyx.scipy is not provided, instead of Python's "'cupyx' is not a package".
__path__: list[str] = []

_sync = threading.local()


def __getattr__(name: str) -> Any:
    """``cupyx.scipy`` and the other CuPy submodules not provided: an AttributeError that says so."""
    message = not_provided(f"cupyx.{name}", attribute=True)
    raise AttributeError(message or f"module {__name__!r} has no attribute {name!r}")


class DeviceSynchronized(RuntimeError):  # noqa: N818  (CuPy's name)
    """Raised by a device synchronization (``ndarray.get()``, ``Device.synchronize()``) inside
    ``allow_synchronize(False)``."""

    def __init__(self, message: Optional[str] = None) -> None:
        super().__init__(message or "Device synchronization was detected while disallowed.")


def declare_synchronize() -> None:
    """Called where the package synchronizes with the device: raises when this thread disallowed it."""
    if not getattr(_sync, "allowed", True):
        raise DeviceSynchronized()


@contextlib.contextmanager
def allow_synchronize(allow: bool) -> Iterator[None]:
    """Allow or forbid device synchronization in this thread for the block (as CuPy: synchronizations outside this
    package are not detected)."""
    old = getattr(_sync, "allowed", True)
    _sync.allowed = bool(allow)
    try:
        yield
    finally:
        _sync.allowed = old


def _cp() -> Any:
    import ascend_compat.cupy as cp

    return cp


def scatter_add(a: Any, slices: Any, value: Any) -> None:
    """``a[slices] += value`` with repeated indices accumulated (``cupy.add.at``)."""
    _cp().add.at(a, slices, value)


def scatter_max(a: Any, slices: Any, value: Any) -> None:
    """``a[slices] = maximum(a[slices], value)``, repeated indices included (``cupy.maximum.at``)."""
    _cp().maximum.at(a, slices, value)


def scatter_min(a: Any, slices: Any, value: Any) -> None:
    """``a[slices] = minimum(a[slices], value)``, repeated indices included (``cupy.minimum.at``)."""
    _cp().minimum.at(a, slices, value)


def rsqrt(x: Any, out: Any = None) -> Any:
    """``1 / sqrt(x)`` elementwise."""
    cp = _cp()
    return cp.reciprocal(cp.sqrt(x), out=out)


class RuntimeInfo:
    """What ``cupy.show_config()`` prints: ``str()`` gives the table."""

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        self.rows = rows

    def __str__(self) -> str:
        width = max((len(k) for k, _ in self.rows), default=0)
        buf = io.StringIO()
        for key, value in self.rows:
            buf.write(f"{key:<{width}}  : {value}\n")
        return buf.getvalue()


def get_runtime_info(full: bool = True) -> RuntimeInfo:
    """Versions, the device in use and the float64 policy (``full`` is accepted; there are no library handles)."""
    from ascend_compat.cupy._float64 import _config_rows

    return RuntimeInfo(list(_config_rows()))


def empty_pinned(shape: Any, dtype: Any = float, order: str = "C") -> Any:
    """A host ``numpy.ndarray`` in the backend's page-locked memory (plain host memory where it has none)."""
    import numpy

    from ascend_compat.cupy.cuda.pinned_memory import alloc_pinned_memory

    dt = numpy.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = dt.itemsize
    for n in shape:
        size *= int(n)
    np_order: Any = order  # validated by NumPy
    return numpy.ndarray(shape, dtype=dt, buffer=alloc_pinned_memory(size), order=np_order)


def zeros_pinned(shape: Any, dtype: Any = float, order: str = "C") -> Any:
    """:func:`empty_pinned`, filled with zeros."""
    out = empty_pinned(shape, dtype, order)
    out.fill(0)
    return out


def _like(a: Any, dtype: Any, order: str, shape: Any) -> tuple[Any, Any, str]:
    import numpy

    a = numpy.asarray(a) if not hasattr(a, "shape") or not hasattr(a, "dtype") else a
    shape = a.shape if shape is None else shape
    dtype = a.dtype if dtype is None else dtype
    order = str(order).upper()
    if order in ("A", "K"):
        flags = getattr(a, "flags", None)
        order = "F" if flags is not None and flags.f_contiguous and not flags.c_contiguous else "C"
    return shape, dtype, order


def empty_like_pinned(a: Any, dtype: Any = None, order: str = "K", subok: Any = None, shape: Any = None) -> Any:
    """:func:`empty_pinned` with the shape and dtype of ``a`` (``order='K'``/``'A'`` keep an F-ordered layout)."""
    return empty_pinned(*_like(a, dtype, order, shape))


def zeros_like_pinned(a: Any, dtype: Any = None, order: str = "K", subok: Any = None, shape: Any = None) -> Any:
    """:func:`zeros_pinned` with the shape and dtype of ``a``."""
    return zeros_pinned(*_like(a, dtype, order, shape))
