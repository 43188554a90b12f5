"""The device-module surface on CPU fallback: what ``torch.cuda.*`` means when the target is the CPU.

One device (index 0); work is synchronous; memory figures describe the host; RNG is torch's CPU generator.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import torch

from ascend_compat import _FieldValue as FieldValue  # ascend_compat._value's class (one module less)


def _check(device: Any = None) -> None:
    # Every CUDA ordinal maps to the one CPU (torchrun ranks call set_device(local_rank)): accept any index.
    idx = device.index if isinstance(device, torch.device) else device
    if isinstance(idx, int) and idx < -1:
        raise RuntimeError(f"Invalid device ordinal {idx}")


def current_device() -> int:
    return 0


def device_count() -> int:
    """1, or under torchrun (or the deepspeed launcher) the node's worker count: scripts gate on "enough GPUs for
    my ranks", and every rank addresses the one CPU as its own device (``set_device(local_rank)``)."""
    from ascend_compat import settings

    try:
        return settings.local_processes() or 1
    except settings.SettingError:  # the launcher's variable, not ours: an unreadable one means one device
        return 1


def set_device(device: Any) -> None:
    _check(device)


def synchronize(device: Any = None) -> None:
    if device is not None:
        _check(device)


def init() -> None:
    """Nothing to initialise."""


def is_initialized() -> bool:
    return True


class _CPUProperties(FieldValue):
    """Read-only device properties (a plain class: a dataclass costs ~0.5 ms at import, on ``activate()``'s path)."""

    # Declaration order (repr, equality, positional arguments).
    _FIELDS = ("name", "total_memory", "multi_processor_count", "major", "minor")
    __slots__ = _FIELDS
    name: str
    total_memory: int
    multi_processor_count: int
    major: int
    minor: int

    def __init__(self, name: str, total_memory: int, multi_processor_count: int, major: int = 0, minor: int = 0):
        for field, value in zip(self._FIELDS, (name, total_memory, multi_processor_count, major, minor)):
            object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __hash__(self) -> int:
        return hash(self._fields())


def _host_memory() -> tuple[int, int]:
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
    except (ValueError, OSError, AttributeError):
        return 0, 0


def get_device_properties(device: Any = None) -> _CPUProperties:
    _check(device)
    return _CPUProperties("CPU (ascend-compat fallback)", _host_memory()[1], os.cpu_count() or 1)


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def mem_get_info(device: Any = None) -> tuple[int, int]:
    _check(device)
    return _host_memory()


def _zero(device: Any = None) -> int:
    _check(device)
    return 0


memory_allocated = memory_reserved = max_memory_allocated = max_memory_reserved = _zero


def _nothing(device: Any = None) -> None:
    _check(device)


reset_peak_memory_stats = reset_max_memory_allocated = reset_accumulated_memory_stats = _nothing


def empty_cache() -> None:
    """Nothing cached."""


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    _check(device)


def memory_stats(device: Any = None) -> dict[str, int]:
    _check(device)
    return {"allocated_bytes.all.current": 0, "allocated_bytes.all.peak": 0, "reserved_bytes.all.current": 0}


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    return "CPU fallback: device memory is host memory and is not tracked.\n"


# torch.manual_seed itself calls torch.cuda.manual_seed_all: seed the generator directly, never re-enter it.
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


manual_seed_all = manual_seed


def seed() -> None:
    torch.default_generator.seed()


seed_all = seed


def initial_seed() -> int:
    return torch.initial_seed()


def get_rng_state(device: Any = "cpu") -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "cpu") -> None:
    torch.set_rng_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [torch.get_rng_state()]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    torch.set_rng_state(next(iter(new_states)))


class Stream:
    """A CPU 'stream': work is synchronous, so it is always complete."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device("cpu")
        self.priority = priority

    def synchronize(self) -> None:
        """Nothing pending."""

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: Any) -> None:
        """Nothing to wait for."""

    def wait_event(self, event: Any) -> None:
        """Nothing to wait for."""

    def record_event(self, event: Any = None) -> Event:
        event = event or Event()
        event.record(self)
        return event


_DEFAULT_STREAM = Stream()


class Event:
    """A host-timed event."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, external: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self._t: float | None = None

    def record(self, stream: Any = None) -> None:
        self._t = time.perf_counter()

    def synchronize(self) -> None:
        """Recorded work is done."""

    def query(self) -> bool:
        return True

    def wait(self, stream: Any = None) -> None:
        """Nothing to wait for."""

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._t is None or end_event._t is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._t - self._t) * 1000.0


def current_stream(device: Any = None) -> Stream:
    return _DEFAULT_STREAM


default_stream = current_stream


def set_stream(stream: Any) -> None:
    """Single stream."""


@contextlib.contextmanager
def stream(stream: Any) -> Iterator[None]:  # CUDA's parameter name: torch.cuda.stream(stream=s) works
    yield


class device:  # noqa: N801 - mirrors torch.cuda.device
    def __init__(self, device: Any) -> None:
        if not (isinstance(device, int) and device < 0):  # a negative int is a no-op, as in torch.cuda.device
            _check(device)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class device_of(device):  # noqa: N801
    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(None)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True
