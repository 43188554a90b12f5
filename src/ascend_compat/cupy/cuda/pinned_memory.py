"""Page-locked host memory: ``cupy.cuda.alloc_pinned_memory`` and the pinned allocator hooks.

The buffer is a torch host tensor, pinned by the backend's pinned allocator when it has one (CUDA, torch_npu),
plain host memory otherwise (the CPU backend, the simulated NPU): copies from it are then ordinary, not faster.
The pointer object supports the buffer protocol, so ``numpy.frombuffer(alloc_pinned_memory(n), ...)`` works.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy
import torch

from ascend_compat.cupy.cuda.memory import PinnedMemoryPool  # CuPy's home of the class too


class PinnedMemoryPointer(numpy.ndarray):
    """A host buffer of ``size`` bytes (a 1-d uint8 host array) with CuPy's ``ptr``/``size``/``mem`` names."""

    _tensor: torch.Tensor

    @property
    def ptr(self) -> int:
        return int(self.ctypes.data)

    @property
    def mem(self) -> PinnedMemoryPointer:
        return self

    @property
    def pinned(self) -> bool:
        """Whether the backend's pinned allocator holds the buffer (False: plain host memory)."""
        tensor = getattr(self, "_tensor", None)
        return bool(tensor is not None and tensor.is_pinned())


def _pinned_tensor(size: int) -> torch.Tensor:
    try:
        return torch.empty(size, dtype=torch.uint8, pin_memory=True)
    except RuntimeError:  # no accelerator with a pinned allocator: plain host memory
        return torch.empty(size, dtype=torch.uint8)


def _default_malloc(size: int) -> PinnedMemoryPointer:
    size = int(size)
    if size < 0:
        raise ValueError(f"cannot allocate a negative number of bytes: {size}")
    tensor = _pinned_tensor(size)
    out = tensor.numpy().view(PinnedMemoryPointer)
    out._tensor = tensor  # keeps the storage alive as long as the buffer
    return out


__all__ = ["PinnedMemoryPointer", "PinnedMemoryPool", "alloc_pinned_memory", "set_pinned_memory_allocator"]
_ALLOCATOR: Optional[Callable[[int], Any]] = _default_malloc


def set_pinned_memory_allocator(allocator: Optional[Callable[[int], Any]] = None) -> None:
    """Use ``allocator(size)`` for :func:`alloc_pinned_memory`; ``None`` allocates without a pool.

    What it means here: a ``PinnedMemoryPool``'s ``malloc`` and ``None`` both take host memory from the backend's
    pinned allocator (torch keeps its own cache of pinned blocks), plain host memory where there is none (the CPU
    backend, the simulated NPU). Another callable is called for every :func:`alloc_pinned_memory`.
    """
    global _ALLOCATOR
    if allocator is not None and not callable(allocator):
        raise TypeError(f"allocator must be a callable taking a size in bytes, or None, not {type(allocator)}")
    _ALLOCATOR = allocator


def alloc_pinned_memory(size: int) -> PinnedMemoryPointer:
    """``size`` bytes of host memory (pinned where the backend can pin), as a buffer-protocol object."""
    mem = _ALLOCATOR(size) if _ALLOCATOR is not None else None
    return mem if mem is not None else _default_malloc(size)
