"""``torch.compile`` on the detected device: which backend to use, and static shapes through bucketing.

``get_compile_backend()`` picks a backend name for ``torch.compile(model, backend=get_compile_backend())`` from what
is really registered in ``torch._dynamo`` at run time (never assumed): torch_npu's ``npu`` backend (torchair, graph
mode through GE) on an Ascend NPU, ``inductor`` on CUDA and CPU when its code generator can run, ``eager`` otherwise.
``describe_compile_backend()`` returns ``(name, reason)``.

Graph compilers specialise on shapes: with ``dynamic=False`` every new sequence length compiles a new graph (on
Ascend, a new GE graph; that takes seconds). :class:`ShapeBucketer` pads inputs along one dimension up to a small
set of bucket sizes, so a run sees at most ``len(buckets)`` shapes: ``pad(x, dim=1)`` returns the padded tensor,
``pad_with_mask(x)`` also the attention mask for the padding.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union

__all__ = [
    "DYNAMIC_SHAPE_ADVICE",
    "ShapeBucketer",
    "available_backends",
    "compile_report",
    "describe_compile_backend",
    "get_compile_backend",
    "suggest_buckets",
]

#: Advice ``ascend-compat compile`` prints; kept as data so the CLI and the library say the same thing.
DYNAMIC_SHAPE_ADVICE: tuple[str, ...] = (
    "With dynamic=False each new input shape compiles a new graph; on Ascend a graph compile takes seconds, "
    "so varying sequence lengths can cost more than they save.",
    "Pad variable lengths to a few fixed buckets (ascend_compat.cuda_shim.compile_helpers.ShapeBucketer) and pass "
    "the returned attention mask; the number of compiled graphs is then bounded by the number of buckets "
    "(suggest_buckets(observed_lengths) proposes sizes).",
    "Keep the batch size fixed (drop_last=True in the DataLoader, or pad the last batch).",
    "dynamic=True (or torch._dynamo.mark_dynamic) avoids recompiles where the backend supports symbolic shapes; "
    "check the recompile count before relying on it.",
    "Count recompiles with TORCH_LOGS=recompiles, or torch._dynamo.utils.counters['stats'].",
)


def available_backends() -> list[str]:
    """Every backend name registered in ``torch._dynamo`` now (debug/experimental ones included), sorted."""
    import torch._dynamo

    return sorted(torch._dynamo.list_backends(exclude_tags=()))


def _has_cxx_compiler() -> bool:
    # Inductor's CPU code generator compiles C++; without a compiler the first call fails, not the torch.compile().
    cxx = os.environ.get("CXX")
    return bool((cxx and shutil.which(cxx)) or shutil.which("g++") or shutil.which("clang++") or shutil.which("c++"))


def _has_triton() -> bool:
    return importlib.util.find_spec("triton") is not None


def _torchair_available() -> bool:
    """torchair ships inside torch_npu (``torch_npu/dynamo/torchair``) or as its own package."""
    try:
        spec = importlib.util.find_spec("torch_npu")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        if (Path(spec.origin).parent / "dynamo" / "torchair").is_dir():
            return True
    try:
        return importlib.util.find_spec("torchair") is not None
    except (ImportError, ValueError):
        return False


def get_compile_backend(requested: Optional[str] = None, device_type: Optional[str] = None) -> str:
    """The backend name for ``torch.compile(model, backend=get_compile_backend())`` on the detected device.

    ``requested`` (or ``ASCEND_COMPAT_COMPILE_BACKEND``) is returned as is when it is registered, else ValueError.
    ``device_type`` skips detection (``"npu"``, ``"cuda"``, ``"cpu"``, ...). :func:`describe_compile_backend` also
    says why.
    """
    return describe_compile_backend(requested, device_type)[0]


def describe_compile_backend(requested: Optional[str] = None, device_type: Optional[str] = None) -> tuple[str, str]:
    """``(backend_name, reason)``: what :func:`get_compile_backend` returns, and why it was chosen."""
    registered = set(available_backends())
    requested = requested or os.environ.get("ASCEND_COMPAT_COMPILE_BACKEND") or None
    if requested:
        if requested not in registered:
            raise ValueError(
                f"torch.compile backend {requested!r} is not registered in torch._dynamo; "
                f"registered: {', '.join(sorted(registered))}"
            )
        return requested, "requested"

    if device_type is None:
        from ascend_compat import backends

        detection = backends.detect()
        if detection.native_cuda:
            device_type = "cuda"
        else:
            device_type = detection.backend.device_type if detection.backend is not None else "cpu"

    if device_type == "npu":
        if "npu" in registered:
            if _torchair_available():
                return "npu", "torch_npu registered the 'npu' dynamo backend (torchair: graphs run through GE)"
            return "eager", (
                "torch_npu registered an 'npu' backend but was built without torchair, so that backend only runs "
                "graphs eagerly; 'eager' does the same without the warning"
            )
        return "eager", (
            "no 'npu' backend is registered in torch._dynamo (torch_npu without dynamo support, or the simulated "
            "NPU) and inductor generates no NPU code: eager is the safe choice"
        )
    if device_type == "cuda":
        if "inductor" in registered and _has_triton():
            return "inductor", "CUDA/ROCm with triton: inductor generates fused GPU kernels"
        return "eager", "CUDA/ROCm without triton: inductor cannot generate GPU kernels"
    if device_type == "cpu":
        if "inductor" in registered and _has_cxx_compiler():
            return "inductor", "CPU with a C++ compiler: inductor generates C++/OpenMP kernels"
        return "eager", "CPU without a C++ compiler: inductor cannot build its kernels"
    if device_type == "xpu" and "inductor" in registered and _has_triton():
        return "inductor", "Intel XPU with triton: inductor supports it"
    return "eager", f"no graph backend known to work on {device_type!r}: eager is the safe choice"


def compile_report(requested: Optional[str] = None) -> dict[str, Any]:
    """What ``ascend-compat compile`` shows: device, chosen backend and why, registered backends, advice."""
    import torch

    from ascend_compat import backends

    if os.environ.get("ASCEND_COMPAT_SIMULATE"):
        from ascend_compat import simulate

        simulate.install_from_env()
    detection = backends.detect()
    if detection.native_cuda:
        device = "cuda"
    else:
        device = detection.backend.device_type if detection.backend is not None else "cpu"
    try:
        name, reason = describe_compile_backend(requested, device_type=device)
        error = None
    except ValueError as exc:
        name, reason, error = None, None, str(exc)
    return {
        "schema_version": 1,
        "torch": torch.__version__,
        "device": device,
        "detection": detection.reason,
        "backend": name,
        "reason": reason,
        "error": error,
        "torchair": _torchair_available(),
        # torch_npu's own graph backends: 'npu' (torchair / GE) and, in newer releases, 'npugraph_ex'
        "npu_backends": [b for b in ("npu", "npugraph_ex") if b in available_backends()],
        # torch's own testing/minifier backends are registered too; they are noise in a report.
        "available_backends": [b for b in available_backends() if "TESTING_ONLY" not in b and "minifier" not in b],
        "advice": list(DYNAMIC_SHAPE_ADVICE),
    }


def suggest_buckets(lengths: Sequence[int], count: int = 4, multiple: int = 8) -> list[int]:
    """Bucket sizes for the observed ``lengths``: ``count`` quantiles, rounded up to ``multiple``, the last one
    covering the longest length. Fewer buckets mean fewer compiled graphs and more padding."""
    if count < 1 or multiple < 1:
        raise ValueError("count and multiple must be >= 1")
    values = sorted(int(n) for n in lengths)
    if not values:
        raise ValueError("no lengths to bucket")
    if values[0] < 0:
        raise ValueError("lengths must be >= 0")
    picks = {values[min(len(values) - 1, -(-(i * len(values)) // count) - 1)] for i in range(1, count + 1)}
    return sorted({max(multiple, -(-n // multiple) * multiple) for n in picks})


class ShapeBucketer:
    """Pad a tensor along ``dim`` up to the next bucket size, so compiled graphs see few distinct shapes.

    ``pad(x)`` returns the padded tensor (``pad(x, dim=1)`` pads another dim than the bucketer's). ``pad_with_mask(x)``
    returns ``(padded, mask)``: ``mask`` has ``x.shape[: dim + 1]`` with the padded length at ``dim``, True (or 1)
    over real data and False (0) over padding, the convention of Hugging Face attention masks.
    ``unpad(y, length_or_mask)`` cuts a result back to the original length.

    Lengths above the last bucket: ``overflow="error"`` (default) raises ValueError; ``overflow="multiple"`` pads to
    the next multiple of the last bucket (each such length is one more compiled shape, counted in ``stats()``).
    Thread-safe; statistics are per instance.
    """

    def __init__(
        self,
        buckets: Sequence[int],
        dim: int = -1,
        pad_value: Union[int, float, bool] = 0,
        overflow: str = "error",
        mask_dtype: Any = None,
    ) -> None:
        sizes = list(buckets)
        if not sizes:
            raise ValueError("ShapeBucketer needs at least one bucket size")
        for size in sizes:
            if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
                raise ValueError(f"bucket sizes must be positive integers, got {size!r}")
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"bucket sizes must be distinct, got {sizes}")
        if overflow not in ("error", "multiple"):
            raise ValueError(f"overflow must be 'error' or 'multiple', got {overflow!r}")
        self.buckets: tuple[int, ...] = tuple(sorted(sizes))
        self.dim = dim
        self.pad_value = pad_value
        self.overflow = overflow
        self.mask_dtype = mask_dtype
        self._lock = threading.Lock()
        self.reset_stats()

    def reset_stats(self) -> None:
        with self._lock:
            self._calls = 0
            self._per_bucket: dict[int, int] = {}
            self._lengths: set[int] = set()
            self._overflows = 0

    def bucket_for(self, length: int) -> int:
        """The padded size for ``length`` (ValueError above the last bucket unless ``overflow='multiple'``)."""
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        for size in self.buckets:
            if length <= size:
                return size
        largest = self.buckets[-1]
        if self.overflow == "multiple":
            return -(-length // largest) * largest
        raise ValueError(
            f"length {length} is larger than the largest bucket ({largest}); add a bucket, truncate the input, "
            f"or use overflow='multiple'"
        )

    def _dim(self, ndim: int, dim: Optional[int] = None) -> int:
        use = self.dim if dim is None else dim
        if ndim == 0:
            raise ValueError("cannot bucket a 0-dimensional tensor")
        if isinstance(use, bool) or not isinstance(use, int):
            raise TypeError(f"dim must be an int, got {type(use).__name__}")
        if not -ndim <= use < ndim:
            raise ValueError(f"dim {use} is out of range for a {ndim}-dimensional tensor")
        return use % ndim

    def pad(self, x: Any, *, dim: Optional[int] = None) -> Any:
        """Return ``x`` padded along ``dim`` (default: the bucketer's) up to its bucket size, ready for the model.

        Use :meth:`pad_with_mask` for the attention mask of the padding as well."""
        dim = self._dim(x.dim(), dim)
        return self._pad(x, dim, self._record(x.shape[dim]))

    def pad_with_mask(self, x: Any, attention_mask: Any = None, *, dim: Optional[int] = None) -> tuple[Any, Any]:
        """Return ``(padded, mask)``; an existing ``attention_mask`` (same leading shape) is padded with zeros."""
        import torch

        dim = self._dim(x.dim(), dim)
        length = x.shape[dim]
        if attention_mask is not None and tuple(attention_mask.shape) != tuple(x.shape[: dim + 1]):
            raise ValueError(
                f"attention_mask shape {tuple(attention_mask.shape)} does not match the input's leading shape "
                f"{tuple(x.shape[: dim + 1])}"
            )
        size = self._record(length)
        padded = self._pad(x, dim, size)
        mask_dtype = self.mask_dtype if self.mask_dtype is not None else torch.bool
        mask_shape = list(x.shape[: dim + 1])
        mask_shape[dim] = size
        if attention_mask is not None:
            mask = attention_mask.new_zeros(mask_shape)
            mask.narrow(dim, 0, length).copy_(attention_mask)
        else:
            mask = torch.zeros(mask_shape, dtype=mask_dtype, device=x.device)
            mask.narrow(dim, 0, length).fill_(1)
        return padded, mask

    def _record(self, length: int) -> int:
        """The bucket size for ``length``, counted in the statistics."""
        size = self.bucket_for(length)
        with self._lock:
            self._calls += 1
            self._per_bucket[size] = self._per_bucket.get(size, 0) + 1
            self._lengths.add(length)
            if size > self.buckets[-1]:
                self._overflows += 1
        return size

    def _pad(self, x: Any, dim: int, size: int) -> Any:
        length = x.shape[dim]
        if size == length:
            return x
        shape = list(x.shape)
        shape[dim] = size
        padded = x.new_full(shape, self.pad_value)
        padded.narrow(dim, 0, length).copy_(x)
        return padded

    def unpad(self, y: Any, length_or_mask: Any, dim: Optional[int] = None) -> Any:
        """Cut ``y`` back to the original length along ``dim`` (default: the bucketer's dim).

        ``length_or_mask`` is the original length, or the mask ``pad`` returned: padding is always appended, so the
        original length is one past the last nonzero position (the maximum over rows, as a caller's own mask may
        have zeros inside the real data).
        """
        if isinstance(length_or_mask, int):
            length = length_or_mask
        else:
            mask = length_or_mask
            flat = mask.reshape(-1, mask.shape[-1]) if mask.dim() > 1 else mask.reshape(1, -1)
            # Position of the last real element + 1, per row; the max is the original length.
            positions = (flat != 0).int().cumsum(-1).argmax(-1) + 1
            length = int(positions.max()) if flat.shape[0] else 0
            if flat.numel() and not bool((flat != 0).any()):
                length = 0
        use_dim = self.dim if dim is None else dim
        ndim = y.dim()
        if not -ndim <= use_dim < ndim:
            raise ValueError(f"dim {use_dim} is out of range for a {ndim}-dimensional tensor")
        use_dim %= ndim
        if length > y.shape[use_dim]:
            raise ValueError(f"length {length} is larger than the tensor's size {y.shape[use_dim]} at dim {use_dim}")
        return y.narrow(use_dim, 0, length)

    def stats(self) -> dict[str, Any]:
        """Calls, per-bucket counts, distinct input lengths and how many compiled shapes bucketing avoided."""
        with self._lock:
            distinct_out = len(self._per_bucket)
            return {
                "calls": self._calls,
                "per_bucket": {str(k): v for k, v in sorted(self._per_bucket.items())},
                "distinct_input_lengths": len(self._lengths),
                "distinct_padded_lengths": distinct_out,
                "shapes_avoided": len(self._lengths) - distinct_out,
                "overflows": self._overflows,
            }
