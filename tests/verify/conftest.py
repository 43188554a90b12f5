"""Helpers for injecting faults into the simulated NPU: one aten op computes differently there."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Callable

import pytest


@pytest.fixture
def npu_kernel(sim) -> Callable[..., contextlib.AbstractContextManager]:
    """``with npu_kernel("gelu", fn): ...`` replaces one aten op's kernel on the simulated npu, then restores it."""
    import warnings

    torch = sim

    @contextlib.contextmanager
    def override(op: str, fn: Callable) -> Iterator[None]:
        lib = torch.library.Library("aten", "IMPL")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "overriding a previously registered kernel"
                lib.impl(op, fn, "PrivateUse1")
            yield
        finally:
            lib._destroy()

    return override
