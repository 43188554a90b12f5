"""Targets and numeric tolerances from ``superopt/data/targets.json`` (read by the package's one loader)."""

from __future__ import annotations

from typing import Any

from ascend_compat import _data

ALIASES = {"910b": "ascend-910b", "910b4": "ascend-910b4", "310p": "ascend-310p", "h100": "nvidia-h100",
           "a100": "nvidia-a100", "ascend": "ascend-910b", "nvidia": "nvidia-h100"}


def load() -> dict[str, Any]:
    return _data.load("superopt_targets")


def target(name: str) -> dict[str, Any]:
    """A target profile by name (``ascend-910b``, ``910B4``, ``nvidia-h100``...), with its ``name`` filled in."""
    targets = load()["targets"]
    key = ALIASES.get(name.lower(), name.lower())
    if key not in targets:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(sorted(targets))}")
    return {"name": key, **targets[key]}


def tolerance(dtype: str) -> dict[str, float]:
    tol = load()["tolerances"].get(dtype)
    if tol is None:
        raise ValueError(f"no numeric tolerance for dtype {dtype!r}")
    return tol


def elem_bytes(dtype: str) -> int:
    return {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1}[dtype]
