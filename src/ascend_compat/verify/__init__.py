"""Numerical parity across devices.

- :func:`run_ops` (``ascend-compat verify ops``): a suite of ops on the target device against a float64 CPU
  golden of the same inputs, with per-dtype tolerances from ``data/tolerances.json``.
- :func:`compare` (``ascend-compat verify model``): one model on a reference and a target device, every
  submodule's outputs (and gradients) compared, and the first diverging module named.

Importing this package imports no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazily loaded names, for type checkers
    from ascend_compat.verify.model import compare
    from ascend_compat.verify.model_report import ComparisonReport
    from ascend_compat.verify.ops import OpSuiteReport, run_ops

__all__ = ["ComparisonReport", "OpSuiteReport", "compare", "run_ops"]

_LAZY = {
    "compare": "ascend_compat.verify.model",
    "ComparisonReport": "ascend_compat.verify.model_report",
    "run_ops": "ascend_compat.verify.ops",
    "OpSuiteReport": "ascend_compat.verify.ops",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ascend_compat.verify' has no attribute {name!r}")
