"""The C/C++/CUDA API mapping (``data/cuda_cxx_apis.json``) as the scanner looks names up: exact names, name
prefixes (``cublas`` then an upper-case letter), ``::``-qualified names and namespace prefixes (``thrust::``),
methods (``x.is_cuda()``) and headers; each entry says which rule (``code``) its uses are reported under."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Optional

_FAMILY_CODE = {
    "driver": "AC602", "cublas": "AC603", "cudnn": "AC604", "nccl": "AC605", "curand": "AC606", "thrust": "AC607",
    "cub": "AC607", "cufft": "AC608", "cusparse": "AC608", "cusolver": "AC608", "cutlass": "AC608", "nvrtc": "AC608",
    "nvtx": "AC618", "intrinsic": "AC612", "header": "AC613", "torch_ext": "AC614",
}
_RUNTIME_CODE = {"memory": "AC601", "streams": "AC616", "device": "AC617", "custom_kernel": "AC610"}
_KERNEL_CODE = {
    "__global__": "AC609", "<<<>>>": "AC610", "asm": "AC611", "__device__": "AC615", "__constant__": "AC619",
    "__managed__": "AC619", "__device__ variable": "AC619",
}
LABEL = {
    "runtime": "CUDA runtime", "driver": "CUDA driver API", "cublas": "cuBLAS", "cudnn": "cuDNN", "nccl": "NCCL",
    "curand": "cuRAND", "thrust": "Thrust", "cub": "CUB", "cufft": "cuFFT", "cusparse": "cuSPARSE",
    "cusolver": "cuSOLVER", "cutlass": "CUTLASS", "nvrtc": "NVRTC", "nvtx": "NVTX",
    "intrinsic": "CUDA device intrinsic", "header": "CUDA header", "torch_ext": "PyTorch CUDA C++ API",
    "kernel": "CUDA kernel code",
}
# Namespaces whose CUDA names (CUDAGuard, kCUDA) are looked up even when the name is not the whole path.
TORCH_ROOTS = (b"at", b"c10", b"torch")


@dataclass(frozen=True)
class ApiEntry:
    """One mapping from a CUDA API or construct to its Ascend counterpart (None: no direct counterpart)."""

    name: str
    match: str
    ascend: Optional[str]
    family: str
    difficulty: str
    source: str
    category: Optional[str] = None
    note: Optional[str] = None

    @property
    def code(self) -> str:
        if self.family == "runtime":
            return _RUNTIME_CODE[self.category or "device"]
        if self.family == "kernel":
            return _KERNEL_CODE[self.name]
        return _FAMILY_CODE[self.family]

    @property
    def alternative(self) -> str:
        if self.ascend is None:
            return f"no direct counterpart: {self.note or 'rewrite with Ascend C'}"
        return f"{self.ascend}; {self.note}" if self.note else self.ascend

    def message(self, api: str) -> str:
        label = LABEL[self.family]
        if self.ascend is None:
            return f"{api} ({label}) has no direct Ascend counterpart: {self.note or 'rewrite with Ascend C'}"
        return f"{api} ({label}): use {self.alternative}"


@lru_cache(maxsize=1)
def api_entries() -> tuple[ApiEntry, ...]:
    """Every entry of ``data/cuda_cxx_apis.json``, in file order."""
    text = (resources.files("ascend_compat.migrate") / "data" / "cuda_cxx_apis.json").read_text("utf-8")
    return tuple(
        ApiEntry(e["name"], e["match"], e["ascend"], e["family"], e["difficulty"], e["source"], e.get("category"),
                 e.get("note"))
        for e in json.loads(text)["entries"]
    )


@dataclass(frozen=True)
class Tables:
    names: dict[bytes, ApiEntry]  # exact names, bare and ::-qualified
    prefixes: tuple[tuple[bytes, bool, ApiEntry], ...]  # bare name prefixes, longest first, with boundary rule
    prefix_starts: tuple[bytes, ...]  # the same prefixes, for one quick startswith
    ns_prefixes: tuple[tuple[bytes, ApiEntry], ...]  # "thrust::" and the like, longest first
    ns_starts: tuple[bytes, ...]
    torch_words: frozenset[bytes]  # parts of PyTorch's CUDA names: at::/c10::/torch:: paths without one are settled
    roots: frozenset[bytes]  # first components worth resolving a qualified name for
    methods: dict[bytes, ApiEntry]
    headers: dict[str, ApiEntry]
    header_prefixes: tuple[tuple[str, ApiEntry], ...]
    header_starts: tuple[str, ...]
    kernel: dict[str, ApiEntry]


@lru_cache(maxsize=1)
def tables() -> Tables:
    names: dict[bytes, ApiEntry] = {}
    prefixes: list[tuple[bytes, bool, ApiEntry]] = []
    ns_prefixes: list[tuple[bytes, ApiEntry]] = []
    methods: dict[bytes, ApiEntry] = {}
    headers: dict[str, ApiEntry] = {}
    header_prefixes: list[tuple[str, ApiEntry]] = []
    kernel: dict[str, ApiEntry] = {}
    roots = set(TORCH_ROOTS)
    torch_words = {b"cuda"}
    for e in api_entries():
        key = e.name.encode()
        if e.family == "kernel":
            kernel[e.name] = e
        elif e.family == "header":
            if e.match == "prefix":
                header_prefixes.append((e.name, e))
            else:
                headers[e.name] = e
        elif e.match == "method":
            methods[key] = e
        elif e.match == "prefix" and key.endswith(b"::"):
            ns_prefixes.append((key, e))
        elif e.match == "prefix":
            # A lower-case prefix is a library name and must be followed by a capital: cublasSgemm, not
            # cublas_helper or cumsum. "cudaMem" (already camel case) and "curand_" stand as written.
            prefixes.append((key, key.isalpha() and key.islower(), e))
        else:
            names[key] = e
        if b"::" in key and e.family != "header":
            roots.add(key.split(b"::", 1)[0])
        if e.family == "torch_ext":
            torch_words.update(w for w in key.split(b"::") if w)
    by_len: Callable[[tuple[Any, ...]], int] = lambda item: -len(item[0])  # noqa: E731
    prefixes.sort(key=by_len)
    ns_prefixes.sort(key=by_len)
    header_prefixes.sort(key=by_len)
    return Tables(names, tuple(prefixes), tuple(p[0] for p in prefixes), tuple(ns_prefixes),
                   tuple(p for p, _ in ns_prefixes), frozenset(torch_words), frozenset(roots), methods, headers,
                   tuple(header_prefixes), tuple(p for p, _ in header_prefixes), kernel)
