"""``cupy.cuda`` on the backend ascend_compat.cupy runs on: devices, streams, events, memory pools.

On Ascend these map onto ``torch.npu`` (torch_npu or the simulated NPU), on CUDA onto ``torch.cuda``; on the CPU
there is one device, streams are always complete and memory figures are 0. CUDA-only libraries (cuBLAS, cuSOLVER,
NVRTC, ...) are present as names whose use raises :class:`CUDAOnlyError` with the alternative.
"""

from __future__ import annotations

import sys as _sys

from ascend_compat.cupy.cuda import curand, memory, runtime
from ascend_compat.cupy.cuda._backend import current_torch_device
from ascend_compat.cupy.cuda._cuda_only import (
    CUDAOnlyError,
    RawKernel,
    RawModule,
    compiler_cache_module,
    cufft_module,
    make_module,
    texture_module,
)
from ascend_compat.cupy.cuda._environment import get_cuda_path, get_hipcc_path, get_nvcc_path, get_rocm_path
from ascend_compat.cupy.cuda.device import Device, get_compute_capability, get_device_id
from ascend_compat.cupy.cuda.memory import (
    MemoryPool,
    OutOfMemoryError,
    PinnedMemoryPool,
    alloc,
    get_allocator,
    get_default_memory_pool,
    get_default_pinned_memory_pool,
    set_allocator,
    using_allocator,
)
from ascend_compat.cupy.cuda.pinned_memory import (
    PinnedMemoryPointer,
    alloc_pinned_memory,
    set_pinned_memory_allocator,
)
from ascend_compat.cupy.cuda.stream import Event, ExternalStream, Stream, get_current_stream, get_elapsed_time

__all__ = [
    "CUDAOnlyError",
    "Device",
    "Event",
    "ExternalStream",
    "MemoryPool",
    "OutOfMemoryError",
    "PinnedMemoryPointer",
    "PinnedMemoryPool",
    "RawKernel",
    "RawModule",
    "Stream",
    "alloc",
    "alloc_pinned_memory",
    "curand",
    "current_torch_device",
    "get_allocator",
    "get_compute_capability",
    "get_cuda_path",
    "get_current_stream",
    "get_default_memory_pool",
    "get_default_pinned_memory_pool",
    "get_device_id",
    "get_elapsed_time",
    "get_hipcc_path",
    "get_local_runtime_version",
    "get_nvcc_path",
    "get_rocm_path",
    "is_available",
    "memory",
    "runtime",
    "set_allocator",
    "set_pinned_memory_allocator",
    "using_allocator",
]

cublas = make_module("cublas")
cusolver = make_module("cusolver")
cusparse = make_module("cusparse")
cufft = cufft_module()
nvrtc = make_module("nvrtc")
compiler = make_module("compiler")
driver = make_module("driver")
texture = texture_module()
_compiler_cache = compiler_cache_module()
nccl = make_module("nccl", available=False)
cutensor = make_module("cutensor", available=False)  # never available off CUDA: callers check it
for _lib in (cublas, cusolver, cusparse, cufft, nvrtc, compiler, driver, texture, nccl, cutensor, _compiler_cache):
    # importable by name too (``from ascend_compat.cupy.cuda.texture import TextureObject``), as CuPy's modules are
    _sys.modules.setdefault(_lib.__name__, _lib)


get_local_runtime_version = runtime.runtimeGetVersion  # CuPy's name: 0 off CUDA, which has no CUDA runtime


def is_available() -> bool:
    """True when the backend has a device (always on the CPU backend, which is one)."""
    return runtime.getDeviceCount() > 0


def compile_with_cache(*args: object, **kwargs: object) -> None:
    from ascend_compat.cupy.cuda._cuda_only import refuse

    refuse("cuda.compile_with_cache (NVRTC)")


def __getattr__(name: str) -> object:
    """``cupy.cuda.nvtx``, ``profiler``, ``cub``...: an AttributeError saying they are not provided, and why."""
    from ascend_compat._cupy_alias import not_provided

    raise AttributeError(not_provided(f"cupy.cuda.{name}", attribute=True)
                         or f"module {__name__!r} has no attribute {name!r}")
