"""Memory pools answered from the backend's caching allocator (``torch.npu.memory_allocated`` ...).

CuPy's pool and the backend's caching allocator play the same part: ``used_bytes`` is what live arrays hold
(``memory_allocated``), ``total_bytes`` what the allocator has reserved from the device (``memory_reserved``), and
``free_all_blocks`` returns cached, unused blocks (``empty_cache``). The CPU has no device allocator: there every
figure is 0 and freeing is a no-op.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Optional

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
        return alloc(size)


def alloc(size: int) -> Any:
    """``size`` bytes of device memory on the current device (a ``MemoryPointer``, freed with its last user).

    The pointer can back an array through ``ndarray(shape, dtype, memptr=...)``."""
    from ascend_compat.cupy._creation import empty

    size = int(size)
    if size < 0:
        raise ValueError(f"cannot allocate a negative number of bytes: {size}")
    with oom_as_cupy_error():
        return empty((size,), "uint8").data


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
