"""``cupy.cuda.Device`` on the backend's devices (``npu:N`` on Ascend, ``cuda:N``, or the one CPU device)."""

from __future__ import annotations

import operator
import threading
from typing import Any, Optional

from ascend_compat.cupy.cuda import _backend
from ascend_compat.cupy.cuda.runtime import CUDARuntimeError, getDeviceCount

_STACK = threading.local()  # per thread: device ids to restore when nested `with Device(n)` blocks exit


def _set_current(index: int) -> None:
    _backend.call("set_device", index)


def get_device_id() -> int:
    """The current device's ordinal."""
    return _backend.current_index()


class Device:
    """A device of the backend; ``with Device(1):`` makes it current inside the block (as in CuPy)."""

    def __init__(self, device: Any = None) -> None:
        if device is None:
            index = get_device_id()
        elif isinstance(device, Device):
            index = device.id
        else:
            try:
                index = operator.index(device)
            except TypeError:
                raise TypeError(f"Device id must be an int or a Device, not {type(device).__name__}") from None
        count = getDeviceCount()
        if not 0 <= index < count:
            raise CUDARuntimeError(
                101, f"invalid device ordinal {index}: the {_backend.device_type()} backend has {count} device(s)"
            )
        self._id = index

    @property
    def id(self) -> int:
        return self._id

    def use(self) -> None:
        """Make this device current (until changed again)."""
        _set_current(self._id)

    def synchronize(self) -> None:
        """Wait for all work queued on this device."""
        if _backend.module() is not None:
            _backend.call("synchronize", self._id)

    @property
    def compute_capability(self) -> str:
        if _backend.device_type() != "cuda":
            from ascend_compat.cupy.cuda._cuda_only import refuse

            refuse("Device.compute_capability")
        major, minor = _backend.call("get_device_capability", self._id)
        return f"{major}{minor}"

    @property
    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes on this device."""
        info: Optional[tuple[int, int]] = _backend.call("mem_get_info", self._id)
        if info is None:
            raise RuntimeError("the CPU backend reports no device memory information")
        return int(info[0]), int(info[1])

    @property
    def name(self) -> str:
        name = _backend.call("get_device_name", self._id)
        return "cpu" if name is None else str(name)

    def __enter__(self) -> Device:
        stack = getattr(_STACK, "ids", None)
        if stack is None:
            stack = _STACK.ids = []
        stack.append(get_device_id())
        if self._id != stack[-1]:
            _set_current(self._id)
        return self

    def __exit__(self, *exc: Any) -> None:
        prev = _STACK.ids.pop()
        if prev != get_device_id():
            _set_current(prev)

    def __int__(self) -> int:
        return self._id

    __index__ = __int__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other._id == self._id

    def __hash__(self) -> int:
        return hash(("Device", self._id))

    def __repr__(self) -> str:
        return f"<CUDA Device {self._id}>"


def get_compute_capability() -> str:
    """CUDA compute capability of the current device (CUDA only)."""
    return Device().compute_capability
