"""Shared helpers: the benchmark workloads (benchmarks/superopt/workloads.py) at small shapes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = {
    "gated_mlp": {"m": 8, "k": 64, "n": 48},
    "rmsnorm_linear": {"m": 8, "k": 64, "n": 48},
    "lora": {"m": 8, "k": 64, "n": 48, "r": 16},
    "gqa_decode": {"batch": 1, "kv_heads": 2, "group": 4, "head_dim": 32, "kv_len": 64},
}


def _workloads() -> ModuleType:
    spec = importlib.util.spec_from_file_location("superopt_workloads", ROOT / "benchmarks/superopt/workloads.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


WORKLOADS = _workloads()


@pytest.fixture
def cache(tmp_path: Path) -> str:
    return str(tmp_path / "cache")


def small(name: str, **kw: object):  # type: ignore[no-untyped-def]
    return WORKLOADS.WORKLOADS[name](**{**SMALL[name], **kw})
