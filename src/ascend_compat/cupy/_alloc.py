"""Large CPU result arrays backed by transparent huge pages, as NumPy's allocator does.

On Linux with transparent huge pages in ``madvise`` mode, a fresh large allocation faults in 4 KiB pages on first
touch unless it is advised ``MADV_HUGEPAGE``. NumPy advises every allocation of 4 MiB and more; torch's CPU allocator
does not, so writing a new 10M-element float32 result cost ~3x NumPy's time (nearly all of it page faults).
:func:`empty` allocates a CPU tensor, advises the 2 MiB-aligned part of it before anything touches it, and is used
where this package creates large results on the CPU. Elsewhere (other devices, small sizes, no THP, not Linux)
it is a plain ``torch.empty`` (or ``None`` from :func:`empty_if_large`, so callers keep their own fast path).
"""

from __future__ import annotations

import ctypes
import functools
import math
import sys
from typing import Any, Callable, NoReturn, Optional, TypeVar, cast

import torch

__all__ = ["THRESHOLD", "advise", "empty", "empty_if_large", "enabled", "maps_oom", "raise_cupy_oom"]

THRESHOLD = 4 << 20  # bytes; NumPy's threshold for advising huge pages
_HUGE = 2 << 20  # x86-64 / aarch64 PMD huge page
_MADV_HUGEPAGE = 14
_THP_MODE = "/sys/kernel/mm/transparent_hugepage/enabled"
_CPU = torch.device("cpu")
_madvise: Any = None  # the libc function once looked up; False where there is none to call


def _thp_mode(path: str = _THP_MODE) -> str:
    """The bracketed THP mode (``always``, ``madvise``, ``never``), or "" when it cannot be read."""
    try:
        with open(path, encoding="ascii") as f:
            text = f.read()
    except OSError:
        return ""
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else ""


def _lookup() -> Any:
    """libc's ``madvise`` where huge pages can be advised, else False (looked up once)."""
    global _madvise
    if _madvise is None:
        _madvise = False
        if sys.platform.startswith("linux") and _thp_mode() in ("always", "madvise"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).madvise
            except (OSError, AttributeError):
                return _madvise
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            fn.restype = ctypes.c_int
            _madvise = fn
    return _madvise


def enabled() -> bool:
    """Whether large CPU results are advised huge pages on this machine."""
    return _lookup() is not False


def advise(ptr: int, nbytes: int) -> bool:
    """Advise ``MADV_HUGEPAGE`` on the 2 MiB-aligned part of ``[ptr, ptr + nbytes)``; whether a call was made.

    Failures are ignored (an old kernel, a region that is not anonymous memory): the advice is an optimisation.
    """
    fn = _lookup()
    if fn is False or nbytes < THRESHOLD:
        return False
    start = (ptr + _HUGE - 1) & ~(_HUGE - 1)
    end = (ptr + nbytes) & ~(_HUGE - 1)
    if end <= start:
        return False
    fn(start, end - start, _MADV_HUGEPAGE)
    return True


def empty_if_large(shape: Any, dtype: torch.dtype, device: torch.device) -> Optional[torch.Tensor]:
    """A new C-contiguous CPU tensor advised huge pages, or None when ``device`` is not the CPU, the array is
    under :data:`THRESHOLD` bytes or huge pages cannot be advised (the caller then allocates as it did)."""
    if device.type != "cpu" or _madvise is False:
        return None
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < THRESHOLD or not enabled():
        return None
    t = torch.empty(shape, dtype=dtype, device=_CPU)
    advise(t.data_ptr(), nbytes)
    return t


def empty(shape: Any, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``torch.empty(shape, dtype=dtype, device=device)``, advised huge pages when it is a large CPU tensor."""
    t = empty_if_large(shape, dtype, device)
    return t if t is not None else torch.empty(shape, dtype=dtype, device=device)


def raise_cupy_oom(exc: BaseException, nbytes: int = 0) -> NoReturn:
    """Raise the backend's out-of-memory error ``exc`` as CuPy's ``OutOfMemoryError`` (a subclass of the
    backend's, so ``except torch.OutOfMemoryError`` still catches it); ``nbytes``: the request, where known."""
    from ascend_compat.cupy.cuda.memory import OutOfMemoryError

    if isinstance(exc, OutOfMemoryError):
        raise exc
    text = str(exc).strip() or "out of memory"
    if nbytes:
        text = f"Out of memory allocating {nbytes:,} bytes: {text}"
    raise OutOfMemoryError(nbytes, message=text) from exc


_F = TypeVar("_F", bound=Callable[..., Any])


def maps_oom(fn: _F) -> _F:
    """Decorate an array-creating function so that the device running out of memory inside it raises CuPy's
    ``OutOfMemoryError``."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except torch.OutOfMemoryError as exc:
            raise_cupy_oom(exc)
    return cast(_F, wrapper)
