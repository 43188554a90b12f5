"""Timing primitives shared by the benchmarks: auto-ranged timeit loops and order statistics."""

from __future__ import annotations

import math
import timeit
from collections.abc import Sequence
from typing import Any


def autorange(timer: timeit.Timer, min_time: float, max_number: int = 10_000_000) -> int:
    """The loop count whose run lasts at least ``min_time`` seconds (timeit's autorange, with a chosen target)."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= min_time or number >= max_number:
            return number
        # Jump close to the target instead of doubling all the way (fewer calibration runs on slow calls).
        guess = int(number * min_time / max(elapsed, 1e-9) * 1.2) if elapsed > 0 else number * 10
        number = min(max_number, max(number * 2, guess))


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method) of already sorted values."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summary(samples: Sequence[float]) -> dict[str, Any]:
    """Median, quartiles, IQR, min, max and mean of ``samples`` (one unit throughout)."""
    s = sorted(samples)
    q1, q3 = quantile(s, 0.25), quantile(s, 0.75)
    return {
        "median": quantile(s, 0.5),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "min": s[0] if s else math.nan,
        "max": s[-1] if s else math.nan,
        "mean": sum(s) / len(s) if s else math.nan,
        "n": len(s),
    }


def latency_summary(samples: Sequence[float]) -> dict[str, Any]:
    """Tail latencies (p50/p95/p99) plus min, max, mean of per-iteration samples."""
    s = sorted(samples)
    return {
        "p50": quantile(s, 0.5),
        "p95": quantile(s, 0.95),
        "p99": quantile(s, 0.99),
        "min": s[0] if s else math.nan,
        "max": s[-1] if s else math.nan,
        "mean": sum(s) / len(s) if s else math.nan,
        "n": len(s),
    }


def synchronizer(torch: Any, device_type: str) -> Any:
    """A function that waits for the device's queued work (no-op on the CPU, whose ops are synchronous)."""
    if device_type == "cpu":
        return lambda: None
    module = getattr(torch, device_type, None)
    if module is not None and hasattr(module, "synchronize"):
        return module.synchronize
    accel = getattr(torch, "accelerator", None)
    if accel is not None and hasattr(accel, "synchronize"):
        return accel.synchronize
    raise RuntimeError(f"no synchronize() for device type {device_type!r}")
