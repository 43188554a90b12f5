"""Memory pools answered from the backend's caching allocator (``torch.npu.memory_allocated`` ...).

CuPy's pool and the backend's caching allocator play the same part: ``used_bytes`` is what live arrays hold
(``memory_allocated``), ``total_bytes`` what the allocator has reserved from the device (``memory_reserved``), and
``free_all_blocks`` returns cached, unused blocks (``empty_cache``). The CPU has no device allocator: there every
figure is 0 and freeing is a no-op.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Callable, Optional

import torch

from ascend_compat.cupy.cuda import _backend


class OutOfMemoryError(torch.OutOfMemoryError):
    """The device ran out of memory (CuPy's type; also a ``torch.OutOfMemoryError``)."""

    def __init__(self, size: int = 0, total: int = 0, limit: int = 0, message: str = "") -> None:
        self.size, self.total, self.limit = size, total, limit
        text = message or f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes)."
        if limit and not message:
            text += f" (limit set to: {limit:,} bytes)"
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.size, self.total, self.limit, self.args[0])


@contextlib.contextmanager
def oom_as_cupy_error() -> Iterator[None]:
    """Re-raise the backend's out-of-memory error inside the block as :class:`OutOfMemoryError` (a subclass)."""
    try:
        yield
    except OutOfMemoryError:
        raise
    except torch.OutOfMemoryError as exc:
        raise OutOfMemoryError(message=str(exc)) from exc


def _device(device_id: Optional[int]) -> int:
    return _backend.current_index() if device_id is None else int(device_id)


class MemoryPool:
    """The current backend's device allocator, seen through CuPy's ``MemoryPool`` methods (per device)."""

    def used_bytes(self, device_id: Optional[int] = None) -> int:
        """Bytes held by live arrays on the device."""
        return int(_backend.call("memory_allocated", _device(device_id), default=0))

    def total_bytes(self, device_id: Optional[int] = None) -> int:
        """Bytes the allocator holds from the device (used + cached)."""
        return int(_backend.call("memory_reserved", _device(device_id), default=0))

    def free_bytes(self, device_id: Optional[int] = None) -> int:
        """Cached bytes not used by any array."""
        return self.total_bytes(device_id) - self.used_bytes(device_id)

    def n_free_blocks(self) -> int:
        stats = _backend.call("memory_stats", _backend.current_index(), default={}) or {}
        return int(stats.get("inactive_split.all.current", 0))

    def free_all_blocks(self, stream: Any = None) -> None:
        """Return cached blocks to the device."""
        _backend.call("empty_cache")

    def set_limit(self, size: Optional[int] = None, fraction: Optional[float] = None) -> None:
        """Cap the current device's allocations (``size`` bytes or a ``fraction`` of its memory)."""
        if size is not None and fraction is not None:
            raise ValueError("size and fraction cannot be specified at one time")
        mod = _backend.module()
        if mod is None:
            raise RuntimeError("the CPU backend has no device memory limit")
        index = _backend.current_index()
        total = int(mod.mem_get_info(index)[1])
        if fraction is None:
            fraction = 1.0 if not size else min(int(size) / total, 1.0)
        if not 0 <= fraction <= 1:
            raise ValueError(f"memory limit fraction out of range: {fraction}")
        mod.set_per_process_memory_fraction(float(fraction), index)
        self._limits = {**getattr(self, "_limits", {}), index: int(total * fraction) if fraction < 1 else 0}

    def get_limit(self) -> int:
        """The limit set by :meth:`set_limit` on the current device (0: none)."""
        return int(getattr(self, "_limits", {}).get(_backend.current_index(), 0))

    def malloc(self, size: int) -> Any:
        """``size`` bytes of device memory from the backend's allocator, as a memory pointer (``.ptr``)."""
        return _backend_malloc(size)


def alloc(size: int) -> Any:
    """``size`` bytes of device memory on the current device (a ``MemoryPointer``, freed with its last user), from
    the allocator :func:`set_allocator` installed (the backend's by default).

    The pointer can back an array through ``ndarray(shape, dtype, memptr=...)``."""
    allocator = get_allocator()
    return _backend_malloc(size) if allocator is _backend_malloc else allocator(size)


def _backend_malloc(size: int) -> Any:
    """``size`` bytes from the backend's caching allocator (CuPy's raw ``_malloc`` and pool in one)."""
    from ascend_compat.cupy._creation import empty

    size = int(size)
    if size < 0:
        raise ValueError(f"cannot allocate a negative number of bytes: {size}")
    with oom_as_cupy_error():
        return empty((size,), "uint8").data


_ALLOCATOR: Callable[[int], Any] = _backend_malloc
_LOCAL = threading.local()  # per thread: the allocator of an active using_allocator block


def set_allocator(allocator: Optional[Callable[[int], Any]] = None) -> None:
    """Install ``allocator(size) -> memory pointer`` as the allocator :func:`alloc` (and ``MemoryPool.malloc``
    callers) use; ``None`` restores the backend's.

    What it means here: arrays are torch tensors, which the backend's caching allocator (``torch.npu``'s,
    ``torch.cuda``'s) always allocates, so a pool's ``malloc`` (``cupy.cuda.MemoryPool().malloc``,
    ``get_default_memory_pool().malloc``) and ``None`` both mean that allocator, as every ``MemoryPool`` here
    is a view of it. Another callable serves :func:`alloc` only; array creation does not call it.
    """
    global _ALLOCATOR
    if allocator is not None and not callable(allocator):
        raise TypeError(f"allocator must be a callable taking a size in bytes, or None, not {type(allocator)}")
    if getattr(_LOCAL, "allocator", None) is not None:
        raise ValueError("Can't change the global allocator inside `using_allocator` context manager")
    _ALLOCATOR = _backend_malloc if allocator is None or _is_pool_malloc(allocator) else allocator


def _is_pool_malloc(allocator: Any) -> bool:
    return isinstance(getattr(allocator, "__self__", None), MemoryPool) and \
        getattr(allocator, "__func__", None) is MemoryPool.malloc


def get_allocator() -> Callable[[int], Any]:
    """The allocator :func:`alloc` uses now (the backend's unless :func:`set_allocator` changed it)."""
    local = getattr(_LOCAL, "allocator", None)
    return local if local is not None else _ALLOCATOR


@contextlib.contextmanager
def using_allocator(allocator: Optional[Callable[[int], Any]] = None) -> Iterator[None]:
    """Use ``allocator`` for :func:`alloc` in this thread inside the block (``None``: the backend's)."""
    if allocator is not None and not callable(allocator):
        raise TypeError(f"allocator must be a callable taking a size in bytes, or None, not {type(allocator)}")
    old = getattr(_LOCAL, "allocator", None)
    _LOCAL.allocator = _backend_malloc if allocator is None or _is_pool_malloc(allocator) else allocator
    try:
        yield
    finally:
        _LOCAL.allocator = old


class PinnedMemoryPool:
    """Page-locked host memory: torch's pinned allocator keeps no public statistics, so figures are 0."""

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        """Nothing is cached outside torch's own pinned-memory allocator."""

    def malloc(self, size: int) -> Any:
        """``size`` bytes of (pinned where possible) host memory."""
        from ascend_compat.cupy.cuda.pinned_memory import _default_malloc

        return _default_malloc(size)


_POOL = MemoryPool()
_PINNED = PinnedMemoryPool()


def get_default_memory_pool() -> MemoryPool:
    return _POOL


def get_default_pinned_memory_pool() -> PinnedMemoryPool:
    return _PINNED
