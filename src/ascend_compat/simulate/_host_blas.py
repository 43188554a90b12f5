"""The host BLAS behind the simulated NPU's large matrix products: NumPy's OpenBLAS, found at load time.

torch's CPU BLAS (MKL in the x86-64 wheels) is 1.2-1.3x slower than the OpenBLAS that NumPy bundles for large
float32/float64 products on some hosts (AMD EPYC), which made a matmul on the simulated device slower than NumPy on
the same machine. The extension links no BLAS of its own: this module finds the ``cblas_sgemm``/``cblas_dgemm``
entry points (and OpenBLAS's thread-count functions) in the OpenBLAS library NumPy has loaded and hands their
addresses to the extension (``_native/npu_blas.cpp``), which routes mm/bmm/addmm of at least 256^3 multiply-adds
through them. Without NumPy, or with a NumPy on another BLAS (MKL, Accelerate), nothing is handed over and torch's
kernel runs every product, as before.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Optional

__all__ = ["HostBlas", "attach", "find"]

# (symbol prefix, suffix) of OpenBLAS builds: NumPy's wheels (scipy_openblas64: ILP64, prefixed and suffixed
# symbols; scipy_openblas32: prefixed), then plain OpenBLAS (a distribution's, conda's).
_NAMINGS = (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", ""))


@dataclass(frozen=True)
class HostBlas:
    """The entry points found: addresses of ``cblas_sgemm``, ``cblas_dgemm`` and the thread-count functions."""

    path: str
    sgemm: int
    dgemm: int
    get_threads: int
    set_threads: int
    ilp64: bool  # 64-bit integer arguments


def _loaded_libraries() -> list[str]:
    """Shared libraries mapped into this process whose name mentions BLAS (Linux), else NumPy's bundled ones."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if path.startswith("/") and "blas" in os.path.basename(path).lower() and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    if not paths:
        import numpy

        root = os.path.dirname(os.path.dirname(numpy.__file__))
        for pattern in ("numpy.libs/*blas*", "numpy/.dylibs/*blas*"):
            paths += sorted(glob.glob(os.path.join(root, pattern)))
    return paths


def _address(lib: ctypes.CDLL, name: str) -> int:
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def _config(lib: ctypes.CDLL, prefix: str, suffix: str) -> Optional[str]:
    try:
        fn = getattr(lib, f"{prefix}openblas_get_config{suffix}")
    except AttributeError:
        return None
    fn.restype = ctypes.c_char_p
    value = fn()
    return value.decode("ascii", "replace") if isinstance(value, bytes) else None


def _from_library(path: str) -> Optional[HostBlas]:
    """The entry points of one already loaded OpenBLAS library (None: not OpenBLAS, or not loaded)."""
    try:  # RTLD_NOLOAD: only a library NumPy (or another module) loaded and initialised already
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
    except OSError:
        return None
    for prefix, suffix in _NAMINGS:
        sgemm, dgemm = _address(lib, f"{prefix}cblas_sgemm{suffix}"), _address(lib, f"{prefix}cblas_dgemm{suffix}")
        config = _config(lib, prefix, suffix)
        if not (sgemm and dgemm) or config is None:  # only OpenBLAS: its config tells the integer width
            continue
        return HostBlas(path, sgemm, dgemm, _address(lib, f"{prefix}openblas_get_num_threads{suffix}"),
                        _address(lib, f"{prefix}openblas_set_num_threads{suffix}"),
                        ilp64=suffix == "64_" or "USE64BITINT" in config)
    return None


def _works(blas: HostBlas) -> bool:
    """A 2x3 by 3x2 product through the found ``sgemm``, checked (a wrong guess fails here, not in a user's op)."""
    integer = ctypes.c_int64 if blas.ilp64 else ctypes.c_int32
    fp = ctypes.POINTER(ctypes.c_float)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer, integer, ctypes.c_float,
                             fp, integer, fp, integer, ctypes.c_float, fp, integer)
    a = (ctypes.c_float * 6)(1, 2, 3, 4, 5, 6)
    b = (ctypes.c_float * 6)(7, 8, 9, 10, 11, 12)
    c = (ctypes.c_float * 4)()
    proto(blas.sgemm)(101, 111, 111, 2, 2, 3, 1.0, a, 3, b, 2, 0.0, c, 2)  # row-major, no transposes
    return list(c) == [58.0, 64.0, 139.0, 154.0]


@functools.lru_cache(maxsize=1)
def find() -> Optional[HostBlas]:
    """NumPy's OpenBLAS entry points, or None (no NumPy, another BLAS, or a platform without ``dlopen``)."""
    if sys.platform == "win32":
        return None
    try:
        import numpy  # noqa: F401  (loads and initialises its BLAS)
    except ImportError:
        return None
    for path in _loaded_libraries():
        blas = _from_library(path)
        if blas is not None and _works(blas):
            return blas
    return None


def attach(ext: ModuleType, enabled: bool = True) -> Optional[HostBlas]:
    """Hand the host BLAS to the extension ``ext`` (or, with ``enabled=False``, take it away: torch's kernel then
    runs every product). Returns what was handed over."""
    blas = find() if enabled else None
    if blas is None:
        ext.set_host_blas(sgemm=0, dgemm=0, ilp64=False, get_threads=0, set_threads=0)
    else:
        ext.set_host_blas(sgemm=blas.sgemm, dgemm=blas.dgemm, ilp64=blas.ilp64, get_threads=blas.get_threads,
                          set_threads=blas.set_threads)
    return blas


def describe() -> str:
    """One line for diagnostics: which BLAS the simulated NPU's large products use."""
    blas = find()
    if blas is None:
        return "torch's CPU BLAS (NumPy's OpenBLAS was not found)"
    return f"NumPy's OpenBLAS ({os.path.basename(blas.path)}, {'ILP64' if blas.ilp64 else 'LP64'})"

