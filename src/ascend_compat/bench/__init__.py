"""Benchmarks: the shim's true cost per call, op latency on a device, and model throughput shim on vs off.

Each function returns a report (a plain dict with ``schema_version``, ``kind``, ``fingerprint``, ``settings`` and
its rows); :mod:`ascend_compat.bench.output` renders it as a table, CSV or PNG. Nothing here imports torch until a
benchmark runs, and every benchmark leaves the shim as it found it (off).

- :func:`run_overhead`: ns per call of each CUDA spelling with the shim on, against the native spelling on the target,
  interleaved, plus the first activation in a fresh process (:func:`first_activation`).
- :func:`run_ops`: p50/p95/p99 latency of matmul, add, softmax, layer_norm, conv2d and sdpa over sizes
  (:class:`OpLatencyBench` is the same as an object: ``OpLatencyBench(device="npu").run().report()``).
- :func:`run_model`: samples/s and latency of a model (GPT-2 tiny by default), shim on vs off on one device.
"""

from __future__ import annotations

from typing import Any

from ascend_compat.bench._common import SCHEMA_VERSION, BenchError

__all__ = [
    "SCHEMA_VERSION",
    "BenchError",
    "OpLatencyBench",
    "OpLatencyReport",
    "first_activation",
    "run_model",
    "run_ops",
    "run_overhead",
]

_LAZY = {
    "OpLatencyBench": "ascend_compat.bench.ops",
    "OpLatencyReport": "ascend_compat.bench.ops",
    "first_activation": "ascend_compat.bench.startup",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the package stays cheap (the benchmarks import torch only when they run).
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ascend_compat.bench' has no attribute {name!r}")


def run_overhead(**kwargs: Any) -> dict[str, Any]:
    """See :func:`ascend_compat.bench.overhead.run`."""
    from ascend_compat.bench.overhead import run

    return run(**kwargs)


def run_ops(**kwargs: Any) -> dict[str, Any]:
    """See :func:`ascend_compat.bench.ops.run`."""
    from ascend_compat.bench.ops import run

    return run(**kwargs)


def run_model(**kwargs: Any) -> dict[str, Any]:
    """See :func:`ascend_compat.bench.model.run`."""
    from ascend_compat.bench.model import run

    return run(**kwargs)
