"""``torch.cuda.get_device_properties()`` under the shim: every field CUDA's ``_CudaDeviceProperties`` has.

Code written for CUDA reads fields the NPU's properties lack (``multi_processor_count``, ``warp_size``,
``gcnArchName``, ``regs_per_multiprocessor``...), torch.compile among it. Each field is taken from the target's own
properties when it has that field, mapped when an equivalent exists, and otherwise a documented placeholder:

- mapped: ``name``, ``total_memory``, ``L2_cache_size`` (the NPU's own), ``multi_processor_count`` (the AI-core
  count, ``cube_core_num`` on Ascend; the CPU count on CPU fallback), ``major``/``minor`` (the configured
  capability, ``ASCEND_COMPAT_CUDA_CAPABILITY``, as ``get_device_capability()`` answers);
- placeholders: the values of the reference GPU of the default capability 8.0 (an A100: warp size 32, 2048
  threads and 65536 registers per SM, 48 KiB shared memory per block...), ``gcnArchName`` empty (not ROCm), PCI
  ids 0, a stable name-based ``uuid``. ``placeholders`` lists which fields are placeholders.

The target's own extra fields (``cube_core_num``, ``vector_core_num``) stay readable.
"""

from __future__ import annotations

from typing import Any

#: CUDA's ``_CudaDeviceProperties`` fields (torch 2.x), in its declaration order.
CUDA_FIELDS = (
    "name", "major", "minor", "total_memory", "multi_processor_count", "is_integrated", "is_multi_gpu_board",
    "max_threads_per_multi_processor", "max_threads_per_block", "warp_size", "regs_per_multiprocessor",
    "shared_memory_per_block", "shared_memory_per_block_optin", "shared_memory_per_multiprocessor", "gcnArchName",
    "uuid", "L2_cache_size", "clock_rate", "memory_clock_rate", "memory_bus_width", "pci_bus_id", "pci_device_id",
    "pci_domain_id",
)  # fmt: skip

#: Placeholders: an sm_80 (A100) reference, matching the default capability 8.0.
PLACEHOLDERS: dict[str, Any] = {
    "is_integrated": 0,
    "is_multi_gpu_board": 0,
    "max_threads_per_multi_processor": 2048,
    "max_threads_per_block": 1024,
    "warp_size": 32,
    "regs_per_multiprocessor": 65536,
    "shared_memory_per_block": 49152,
    "shared_memory_per_block_optin": 166912,
    "shared_memory_per_multiprocessor": 167936,
    "gcnArchName": "",
    "L2_cache_size": 40 << 20,
    "clock_rate": 1410000,
    "memory_clock_rate": 1215000,
    "memory_bus_width": 5120,
    "pci_bus_id": 0,
    "pci_device_id": 0,
    "pci_domain_id": 0,
}


class CudaStyleProperties:
    """The target's device properties under CUDA's field names (read-only)."""

    def __init__(self, inner: Any, values: dict[str, Any], placeholders: tuple[str, ...]) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "placeholders", placeholders)
        for field in CUDA_FIELDS:
            object.__setattr__(self, field, values[field])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __getattr__(self, item: str) -> Any:  # the target's own fields (cube_core_num, ...)
        if item.startswith("__"):
            raise AttributeError(item)
        return getattr(object.__getattribute__(self, "_inner"), item)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self._inner)))

    def __repr__(self) -> str:
        mib = 1 << 20
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // mib}MB, multi_processor_count={self.multi_processor_count}, "
            f"uuid={self.uuid}, L2_cache_size={self.L2_cache_size // mib}MB) (ascend-compat view of {self._inner!r})"
        )


def _index(device: Any) -> int:
    if isinstance(device, int):
        return device
    return int(getattr(device, "index", None) or 0)


def _present(inner: Any, field: str) -> bool:
    value = getattr(inner, field, None)
    return value is not None and value != "" and not (field != "is_integrated" and value == 0)


def cuda_style_properties(inner: Any, cap: tuple[int, ...], device: Any = None) -> CudaStyleProperties:
    """Wrap the target's properties ``inner``; ``cap`` is the configured CUDA capability."""
    import uuid

    values: dict[str, Any] = {}
    placeholders = []
    for field in CUDA_FIELDS:
        if _present(inner, field):
            values[field] = getattr(inner, field)
        elif field in PLACEHOLDERS:
            values[field] = PLACEHOLDERS[field]
            placeholders.append(field)
    values["major"], values["minor"] = (*cap, 0)[:2]
    values.setdefault("name", str(getattr(inner, "name", "unknown")))
    values.setdefault("total_memory", int(getattr(inner, "total_memory", 0) or 0))
    cores = getattr(inner, "multi_processor_count", None) or getattr(inner, "cube_core_num", None)
    values["multi_processor_count"] = int(cores or 1)
    if "uuid" not in values:
        values["uuid"] = str(uuid.uuid5(uuid.NAMESPACE_OID, f"ascend-compat:{values['name']}:{_index(device)}"))
        placeholders.append("uuid")
    return CudaStyleProperties(inner, values, tuple(placeholders))
