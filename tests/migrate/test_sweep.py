"""``port`` over a sample of real code (torch and transformers): every output parses and re-ports to itself.

The full sweep is ``python benchmarks/sweep_port.py`` (figures in the README).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from sweep_port import package_files, sweep_file


@pytest.mark.slow
@pytest.mark.parametrize("package,every", [("torch", 40), ("transformers", 40)])
def test_port_sample_parses_and_is_idempotent(package: str, every: int) -> None:
    files = package_files(package, every)
    assert len(files) > 40
    problems = []
    changed = 0
    for path in files:
        r = sweep_file(path)
        changed += "native_changed" in r
        if any(k.endswith(("_failed", "_broken", "_not_idempotent")) for k in r):
            problems.append(r)
    assert problems == []
    assert changed > 0  # the sample has CUDA code to port, so the sweep tests something
