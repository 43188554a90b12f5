"""CUDA-only CuPy APIs: each raises :class:`CUDAOnlyError` naming the API and what to use instead."""

from __future__ import annotations

from types import ModuleType
from typing import Any, NoReturn

from ascend_compat.cupy.cuda import _backend

_ALTERNATIVES = {
    "RawKernel": "write the kernel as array expressions, a torch op, or an Ascend C / Triton kernel "
    "(ascend-compat scaffold)",
    "RawModule": "port the CUDA C module to Ascend C or Triton (ascend-compat scaffold) and call it through torch",
    "cublas": "use cupy.matmul/dot/linalg, which run on the backend's BLAS",
    "cusolver": "use cupy.linalg",
    "cusparse": "use dense arrays or torch.sparse",
    "cufft": "use cupy.fft",
    "curand": "use cupy.random",
    "nvrtc": "no runtime CUDA C compilation exists off CUDA; see ascend-compat scaffold",
    "compiler": "no runtime CUDA C compilation exists off CUDA; see ascend-compat scaffold",
    "driver": "use cupy.cuda.Device / Stream / runtime",
    "texture": "use ordinary arrays and indexing",
    "_compiler_cache": "no runtime CUDA C compilation (nor its kernel cache) exists off CUDA",
    "nccl": "use torch.distributed (hccl on Ascend)",
    "cutensor": "use cupy.einsum / tensordot",
    "__cuda_array_interface__": "use DLPack (cupy.from_dlpack, __dlpack__) or torch.as_tensor(array)",
}


class CUDAOnlyError(NotImplementedError):
    """A CUDA-only CuPy API was used where the backend is not CUDA."""


def message(api: str) -> str:
    alt = next((_ALTERNATIVES[p] for p in api.split(".") if p in _ALTERNATIVES), "there is no equivalent off CUDA")
    return f"cupy {api} is CUDA-only and the ascend_compat.cupy backend is '{_backend.device_type()}': {alt}"


def refuse(api: str) -> NoReturn:
    raise CUDAOnlyError(message(api))


class RawKernel:
    """CUDA C kernel source compiled by NVRTC: not available off CUDA."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        refuse("RawKernel")


class RawModule:
    """CUDA C module compiled by NVRTC: not available off CUDA."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        refuse("RawModule")


class CudaOnlyModule(ModuleType):
    """A stand-in for ``cupy.cuda.<lib>``: constants it defines work, everything else raises CUDAOnlyError."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(f"cuda.{self.__name__.rsplit('.', 1)[-1]}.{name}")


def make_module(name: str, **constants: Any) -> ModuleType:
    mod = CudaOnlyModule(f"ascend_compat.cupy.cuda.{name}", f"CUDA-only: {_ALTERNATIVES.get(name, '')}")
    for key, value in constants.items():
        setattr(mod, key, value)
    return mod


def refusing_class(api: str) -> type:
    """A class standing for the CUDA-only type ``api`` (``cuda.texture.TextureObject``): it can be imported,
    subclassed and named in ``isinstance`` checks, as on CUDA; making one raises :class:`CUDAOnlyError`."""
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        refuse(api)

    name = api.rsplit(".", 1)[-1]
    return type(name, (), {"__init__": init, "__doc__": f"CUDA-only ``cupy.{api}``: {message(api)}."})


_TEXTURE_TYPES = ("ChannelFormatDescriptor", "CUDAarray", "ResourceDescriptor", "TextureDescriptor", "TextureObject",
                  "SurfaceObject", "TextureReference")


def texture_module() -> ModuleType:
    """``cupy.cuda.texture``: its types import (code naming them at import time loads), making one raises."""
    return make_module("texture", **{n: refusing_class(f"cuda.texture.{n}") for n in _TEXTURE_TYPES})


def compiler_cache_module() -> ModuleType:
    """``cupy.cuda._compiler_cache`` (NVRTC's on-disk kernel cache): its backend types import, making one raises."""
    return make_module("_compiler_cache", **{n: refusing_class(f"cuda._compiler_cache.{n}") for n in
                                             ("DiskKernelCacheBackend", "KernelCacheBackend")})


class _Plan:
    """A cuFFT plan: not available off CUDA (``cupy.fft`` plans each transform through the backend)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        refuse(f"cuda.cufft.{type(self).__name__}")


class Plan1d(_Plan):
    pass


class PlanNd(_Plan):
    pass


def cufft_module() -> ModuleType:
    """``cupy.cuda.cufft``: the plan types (refused on construction), no current plan, the direction constants."""
    return make_module("cufft", Plan1d=Plan1d, PlanNd=PlanNd, get_current_plan=lambda: None, CUFFT_FORWARD=-1,
                       CUFFT_INVERSE=1)
