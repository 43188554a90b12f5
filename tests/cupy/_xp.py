"""Shared fixture helpers for the ascend_compat.cupy core tests: run each test on the CPU and the simulated NPU."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(params=["cpu", "npu"])
def dev(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device kind new arrays go to; "npu" is the simulated NPU (session fixture ``sim``)."""
    from ascend_compat.cupy._core import use_device_kind

    if request.param == "npu":
        request.getfixturevalue("sim")
    with use_device_kind(request.param):
        yield request.param
