"""Errors raised by the simulator."""

from __future__ import annotations


class SimulationError(RuntimeError):
    """The simulated NPU cannot be installed here (real torch_npu present, torch too old, no compiler...)."""
