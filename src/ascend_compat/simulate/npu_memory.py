"""The simulated ``torch.npu`` memory functions (re-exported by :mod:`ascend_compat.simulate.npu_module`):
torch_npu's allocator statistics and limits, answered from the extension's per-device accounting."""

from __future__ import annotations

import warnings

from ascend_compat.simulate.npu_module import DeviceLike, _ext, _index, get_device_name


def memory_stats(device: DeviceLike = None) -> dict[str, int]:
    """A subset of torch_npu's allocator statistics with the same key names as torch.cuda.memory_stats."""
    s = _ext().stats(_index(device))
    allocated, peak, cached = int(s["allocated"]), int(s["peak"]), int(s["cached"])
    stats: dict[str, int] = {}
    for pool in ("all", "large_pool", "small_pool"):
        for key, current, top in (("allocated_bytes", allocated, peak), ("reserved_bytes", allocated + cached, peak)):
            stats[f"{key}.{pool}.current"] = current if pool != "small_pool" else 0
            stats[f"{key}.{pool}.peak"] = top if pool != "small_pool" else 0
    stats["allocation.all.allocated"] = int(s["num_allocs"])
    stats["allocation.all.freed"] = int(s["num_frees"])
    stats["num_ooms"] = int(s["num_ooms"])
    stats["num_alloc_retries"] = 0
    return stats


def memory_allocated(device: DeviceLike = None) -> int:
    return int(_ext().stats(_index(device))["allocated"])


def max_memory_allocated(device: DeviceLike = None) -> int:
    return int(_ext().stats(_index(device))["peak"])


def memory_reserved(device: DeviceLike = None) -> int:
    """Allocated bytes plus the freed blocks the simulated device's cache keeps for reuse (``empty_cache``)."""
    s = _ext().stats(_index(device))
    return int(s["allocated"]) + int(s["cached"])


def max_memory_reserved(device: DeviceLike = None) -> int:
    # The cache's own peak is not tracked: the allocation peak is a lower bound, as reserved >= allocated.
    s = _ext().stats(_index(device))
    return max(int(s["peak"]), int(s["allocated"]) + int(s["cached"]))


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    _ext().reset_peak(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats
reset_max_memory_cached = reset_peak_memory_stats


def memory_cached(device: DeviceLike = None) -> int:
    """Deprecated name of ``memory_reserved``, kept by torch_npu (with this warning) and called by DeepSpeed."""
    warnings.warn(
        "torch_npu.npu.memory_cached has been renamed to torch_npu.npu.memory_reserved",
        DeprecationWarning,
        stacklevel=2,
    )
    return memory_reserved(device)


def max_memory_cached(device: DeviceLike = None) -> int:
    """Deprecated name of ``max_memory_reserved`` (as in torch_npu)."""
    warnings.warn(
        "torch_npu.npu.max_memory_cached has been renamed to torch_npu.npu.max_memory_reserved",
        DeprecationWarning,
        stacklevel=2,
    )
    return max_memory_reserved(device)


def reset_accumulated_memory_stats(device: DeviceLike = None) -> None:
    _ext().reset_counters(_index(device))


def empty_cache() -> None:
    """Return every device's cached free blocks to the host (as torch_npu's does to the device)."""
    ext = _ext()
    for idx in range(ext.device_count()):
        ext.empty_cache(idx)


def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """(free, total) bytes; a limit set by set_per_process_memory_fraction or install(memory_limit=) counts."""
    s = _ext().stats(_index(device))
    total = int(s["total"])
    cap = int(s["limit"]) if int(s["limit"]) >= 0 else total
    return max(cap - int(s["allocated"]), 0), total


def set_per_process_memory_fraction(fraction: float, device: DeviceLike = None) -> None:
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    idx = _index(device)
    _ext().set_limit(idx, int(int(_ext().stats(idx)["total"]) * fraction))


def memory_summary(device: DeviceLike = None, abbreviated: bool = False) -> str:
    idx = _index(device)
    s = _ext().stats(idx)
    return (
        f"Simulated NPU {idx} ({get_device_name(idx)}) memory summary\n"
        f"  allocated: {s['allocated']} bytes (peak {s['peak']})\n"
        f"  allocations: {s['num_allocs']}, frees: {s['num_frees']}, OOMs: {s['num_ooms']}\n"
        f"  capacity: {s['total']} bytes, limit: {'none' if s['limit'] < 0 else s['limit']}\n"
    )
