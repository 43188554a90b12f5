"""The simulated ``torch.npu`` module: the torch_npu surface that user code and libraries touch.

Registered as ``torch.npu`` by :func:`ascend_compat.simulate.install`. Work is synchronous on the host, so
``synchronize`` returns at once and events time host work. Besides the everyday surface it has the older names
libraries still call (DeepSpeed's ``NPU_Accelerator``): the legacy ``torch.npu.<Dtype>Tensor`` types,
``memory_cached`` / ``max_memory_cached`` and ``_lazy_call``, each modelled on torch_npu's own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable, Union

import torch

from ascend_compat.simulate import _state

DeviceLike = Union[torch.device, str, int, None]
# One generator per device, as torch.cuda.default_generators; set by simulate.install (declared for type checkers).
default_generators: tuple[torch.Generator, ...]

__all__ = [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "Event", "FloatTensor",
    "HalfTensor", "IntTensor", "LongTensor", "ShortTensor", "Stream", "amp", "current_device", "current_stream",
    "default_stream", "device", "device_count", "device_of", "empty_cache", "get_amp_supported_dtype",
    "get_device_capability", "get_device_name", "get_device_properties", "get_rng_state", "get_rng_state_all",
    "init", "initial_seed", "is_available", "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all",
    "max_memory_allocated", "max_memory_cached", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_cached", "memory_reserved", "memory_stats", "memory_summary", "random", "reset_max_memory_allocated",
    "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_per_process_memory_fraction", "set_rng_state",
    "set_rng_state_all", "set_stream", "stream", "synchronize", "utilization",
]


def _ext() -> Any:
    return _state.ext()


def _index(device: DeviceLike = None, optional: bool = True) -> int:
    """Resolve a device argument to an npu ordinal, as torch_npu's _get_device_index does."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        idx = device
    else:
        dev = torch.device(device) if isinstance(device, str) else device
        if dev.type != "npu":
            raise ValueError(f"Expected an npu device, but got: {dev}")
        idx = dev.index if dev.index is not None else current_device()
    if not 0 <= idx < device_count():
        raise RuntimeError(f"Invalid NPU device ordinal {idx}: the simulated NPU has {device_count()} device(s)")
    return idx


# --- availability and selection -------------------------------------------------------------------------------


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def init() -> None:
    """No-op: the simulated device needs no initialisation."""


def _lazy_init() -> None:
    """torch_npu's private initialiser, called by some libraries."""


def _lazy_call(callback: Callable[[], Any]) -> None:
    """Run ``callback`` once the device is initialised (DeepSpeed's ``lazy_call`` uses it for RNG state).

    torch_npu queues the callback until its lazy initialisation and calls it at once afterwards; the simulated
    device is always initialised, so it runs now.
    """
    callback()


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return int(_ext().device_count())


def current_device() -> int:
    return int(_ext().current_device())


def set_device(device: DeviceLike) -> None:
    _ext().set_device(_index(device))


def synchronize(device: DeviceLike = None) -> None:
    """Wait for all work on the device: the simulator runs synchronously, so there is nothing to wait for."""
    _index(device)


class device:  # noqa: N801 - mirrors torch.cuda.device / torch_npu.npu.device
    """Context manager that changes the current npu device; a no-op for None or a negative int (as
    ``torch.cuda.device(-1)``, which torch_npu's ``transfer_to_npu`` tests rely on)."""

    def __init__(self, device: DeviceLike) -> None:
        negative = isinstance(device, int) and not isinstance(device, bool) and device < 0
        self.idx = -1 if device is None or negative else _index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx >= 0:
            self.prev_idx = current_device()
            set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx >= 0:
            set_device(self.prev_idx)


class device_of(device):  # noqa: N801
    """Context manager selecting the device of a tensor (no-op for CPU tensors)."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == "npu" else None)


# --- properties --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _NPUDeviceProperties:
    """Field names follow torch_npu's ``_NPUDeviceProperties``."""

    name: str
    total_memory: int
    cube_core_num: int
    vector_core_num: int
    L2_cache_size: int  # torch_npu's field name

    def __repr__(self) -> str:
        return (
            f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // (1 << 20)}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, "
            f"L2_cache_size={self.L2_cache_size // (1 << 20)}MB)"
        )


def get_device_properties(device: DeviceLike = None) -> _NPUDeviceProperties:
    _index(device)
    chip = _state.chip()
    return _NPUDeviceProperties(
        name=chip["device_name"],
        total_memory=int(chip["total_memory_gib"]) << 30,
        cube_core_num=int(chip["cube_core_num"]),
        vector_core_num=int(chip["vector_core_num"]),
        L2_cache_size=int(chip["l2_cache_mb"]) << 20,
    )


def get_device_name(device: DeviceLike = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: DeviceLike = None) -> None:
    """torch_npu returns None: NPUs have no CUDA compute capability."""
    _index(device)
    return None


def utilization(device: DeviceLike = None) -> int:
    _index(device)
    return 0


def is_bf16_supported() -> bool:
    return bool(_state.chip()["bf16"])


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16] if is_bf16_supported() else [torch.float16]


# --- memory (its own module) ---------------------------------------------------------------------------------

from ascend_compat.simulate.npu_memory import (  # noqa: E402, F401  (needs _ext and _index above; re-exported)
    empty_cache,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)

# --- random numbers ----------------------------------------------------------------------------------------


def _generator(device: DeviceLike = None) -> torch.Generator:
    return _ext().default_generator(_index(device))


def manual_seed(seed: int) -> None:
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def seed_all() -> None:
    s = _generator(0).seed()
    for i in range(1, device_count()):
        _generator(i).manual_seed(s)


def initial_seed() -> int:
    return int(_generator().initial_seed())


def get_rng_state(device: DeviceLike = "npu") -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = "npu") -> None:
    _generator(device).set_state(new_state.clone())


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# --- streams and events ------------------------------------------------------------------------------------


class Stream(torch.Stream):
    """An npu stream. Work is synchronous, so every stream is always complete."""

    def __new__(cls, device: DeviceLike = None, priority: int = 0, **kwargs: Any) -> Stream:
        if "stream_id" in kwargs:  # rebuilding from (stream_id, device_index, device_type)
            return super().__new__(cls, **kwargs)
        with globals()["device"](device):
            return super().__new__(cls, device=torch.device("npu", current_device()), priority=priority)

    def wait_event(self, event: torch.Event) -> None:
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        event = Event() if event is None else event
        event.record(self)
        return event


class Event(torch.Event):
    """An npu event; ``elapsed_time`` measures host time between records (all work is synchronous)."""

    _recorded_at: float | None
    _timing: bool

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **kwargs: Any
    ) -> Event:
        event = super().__new__(cls, device="npu", enable_timing=enable_timing, blocking=blocking)
        event._recorded_at = None
        event._timing = enable_timing
        return event

    def record(self, stream: torch.Stream | None = None) -> None:
        super().record(stream) if stream is not None else super().record()
        self._recorded_at = time.perf_counter()

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds between this event's record and ``end_event``'s."""
        if not (self._timing and getattr(end_event, "_timing", False)):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        end = getattr(end_event, "_recorded_at", None)
        if self._recorded_at is None or end is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end - self._recorded_at) * 1000.0


def _as_stream(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def current_stream(device: DeviceLike = None) -> Stream:
    return _as_stream(_current_stream(_index(device)))


def _current_stream(idx: int) -> torch.Stream:
    # torch.accelerator goes through the device guard, which owns the current stream per device.
    with globals()["device"](idx):
        return torch.accelerator.current_stream(idx)


def default_stream(device: DeviceLike = None) -> Stream:
    s = _current_stream(_index(device))
    return Stream(stream_id=0, device_index=s.device_index, device_type=s.device_type)


def set_stream(stream: torch.Stream) -> None:
    if stream is not None:
        torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(s: torch.Stream | None) -> Iterator[None]:
    """Make ``s`` the current stream inside the block."""
    if s is None:
        yield
        return
    prev = _current_stream(s.device_index)
    torch.accelerator.set_stream(s)
    try:
        yield
    finally:
        torch.accelerator.set_stream(prev)


# --- amp, random and the legacy tensor types (their own modules; they need the names above) -------------------
from ascend_compat.simulate import npu_amp as amp  # noqa: E402
from ascend_compat.simulate import npu_random as random  # noqa: E402
from ascend_compat.simulate._legacy_types import (  # noqa: E402
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
