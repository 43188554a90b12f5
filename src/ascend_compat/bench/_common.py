"""What every benchmark does first: the simulated NPU when asked, and a shim that is not already active."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, Optional, Union

from ascend_compat import settings

SCHEMA_VERSION = 1

#: ``threads="auto"`` (the default of ``bench ops`` / ``bench model``): one torch thread per process when the
#: machine is shared, i.e. it has at most ``SHARED_MAX_CORES`` usable cores, or its 1-minute load average is at
#: least ``SHARED_LOAD_FRACTION`` of them; otherwise torch's own default. On a shared machine torch's intra-op
#: threads wait for cores that other processes hold, and multi-threaded ops stall unpredictably.
SHARED_MAX_CORES = 4
SHARED_LOAD_FRACTION = 0.5

Threads = Union[int, str, None]

Progress = Optional[Callable[[int, int], None]]


class BenchError(RuntimeError):
    """A benchmark that cannot run at all (bad input, missing dependency, shim already active)."""


def prepare(simulate: Optional[str]) -> Any:
    """Install the simulated NPU when ``simulate`` is ``"npu"`` (or ASCEND_COMPAT_SIMULATE says so); return torch."""
    from ascend_compat import simulate as sim

    if simulate is not None:
        if simulate != "npu":
            raise BenchError(f"--simulate {simulate!r}: only 'npu' can be simulated")
        if not sim.is_installed():
            sim.install_from_env(default=True)
    elif settings.SIMULATE.is_set():
        sim.install_from_env()
    import torch

    return torch


def require_inactive_shim() -> None:
    """Shim-on versus shim-off needs the shim off to begin with (its activations are reference counted)."""
    from ascend_compat import cuda_shim

    if cuda_shim.is_activated():
        raise BenchError(
            "the shim is already active in this process (ASCEND_COMPAT_AUTO_ACTIVATE or activate()): the native "
            "side cannot be measured; run the benchmark in a process where the shim is off"
        )


def activate_or_fail(backend: Optional[str]) -> str:
    """Activate the shim and return its target device type; a no-op activation is an error here."""
    from ascend_compat import cuda_shim

    target = cuda_shim.activate(backend)
    if target is None:
        reason = cuda_shim.noop_reason()
        cuda_shim.deactivate()
        raise BenchError(f"the shim does not activate here ({reason}): nothing to measure")
    return target


def backend_name() -> Optional[str]:
    from ascend_compat import cuda_shim

    chosen = cuda_shim.active_backend()
    return None if chosen is None else str(getattr(chosen, "name", chosen.__name__))  # a Backend class


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resolve_threads(spec: Threads) -> tuple[Optional[int], str]:
    """(threads to set or None for torch's default, why): ``"auto"``, ``"torch"``/None, or a count."""
    if spec is None or spec == "torch":
        return None, "torch's default (--threads torch)"
    if spec == "auto":
        cores = usable_cores()
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
        if cores <= SHARED_MAX_CORES:
            return 1, f"auto: shared machine ({cores} usable cores <= {SHARED_MAX_CORES}); --threads N to override"
        if load >= SHARED_LOAD_FRACTION * cores:
            why = f"load {load:.2f} >= {SHARED_LOAD_FRACTION:g} x {cores} usable cores"
            return 1, f"auto: shared machine ({why}); --threads N to override"
        return None, f"auto: torch's default ({cores} usable cores, load {load:.2f})"
    if isinstance(spec, str):
        try:
            spec = int(spec)
        except ValueError:
            raise BenchError(f"--threads must be auto, torch or a positive integer, got {spec!r}") from None
    if spec < 1:
        raise BenchError("--threads must be at least 1")
    return spec, "requested (--threads)"


@contextmanager
def torch_threads(n: Optional[int]) -> Iterator[None]:
    """``torch.set_num_threads(n)`` for the block only (a benchmark leaves the process as it found it)."""
    if n is None:
        yield
        return
    if n < 1:
        raise BenchError("--threads must be at least 1")
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
