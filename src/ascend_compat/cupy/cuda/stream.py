"""``cupy.cuda.Stream`` / ``Event`` on the backend's streams (``torch.npu.Stream``...); host no-ops on the CPU.

The CPU executes each op before returning, so there a stream is always complete and an event times host work.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

from ascend_compat.cupy.cuda import _backend

_LOCAL = threading.local()  # per thread: stack of streams made current by `with stream:`


class Event:
    """A point in a stream's work; ``cupy.cuda.get_elapsed_time(start, end)`` gives milliseconds between two."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        mod = _backend.module()
        self._timing = not disable_timing
        self._host_time: Optional[float] = None
        self._event = None if mod is None else mod.Event(enable_timing=self._timing, blocking=block)

    def record(self, stream: Optional[Stream] = None) -> None:
        stream = stream if stream is not None else get_current_stream()
        if self._event is not None:
            self._event.record(stream._stream)
        self._host_time = time.perf_counter()

    def synchronize(self) -> None:
        if self._event is not None:
            self._event.synchronize()

    @property
    def done(self) -> bool:
        return True if self._event is None else bool(self._event.query())

    def _elapsed_to(self, end: Event) -> float:
        if not (self._timing and end._timing):
            raise RuntimeError("Both events must be created with timing enabled (disable_timing=False)")
        if self._host_time is None or end._host_time is None:
            raise RuntimeError("Both events must be recorded before reading the elapsed time")
        if self._event is not None and end._event is not None:
            return float(self._event.elapsed_time(end._event))
        return (end._host_time - self._host_time) * 1000.0


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """Milliseconds between two recorded events (synchronize on ``end_event`` first, as in CuPy)."""
    end_event.synchronize()
    return start_event._elapsed_to(end_event)


class Stream:
    """A queue of device work on the current device. ``Stream.null`` is the default stream."""

    null: Stream
    ptds: Stream
    _ptds = False

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False, priority: int = 0) -> None:
        mod = _backend.module()
        self._null = bool(null or ptds)  # ``ptds`` (and not ``null``): the per-thread default stream, as in CuPy
        self._ptds = bool(ptds and not null)
        self.device_id = _backend.current_index()
        if mod is None:
            self._stream = None
        elif self._null:
            self._stream = mod.default_stream(self.device_id)
        else:
            self._stream = mod.Stream(device=self.device_id, priority=priority)

    @property
    def ptr(self) -> int:
        """The backend's stream handle (0 for the default stream and on the CPU; CuPy's 2,
        ``runtime.streamPerThread``, for the per-thread default stream)."""
        s = self._stream
        if self._ptds:
            return 2
        if s is None or self._null:
            return 0
        for attr in ("npu_stream", "cuda_stream", "stream_id"):
            if hasattr(s, attr):
                return int(getattr(s, attr))
        return 0

    def synchronize(self) -> None:
        if self._stream is not None:
            self._stream.synchronize()

    @property
    def done(self) -> bool:
        return True if self._stream is None else bool(self._stream.query())

    def record(self, event: Optional[Event] = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def add_callback(self, callback: Callable[[Stream, int, Any], None], arg: Any) -> None:
        """Call ``callback(stream, status, arg)`` once the work queued so far is done (status 0: success).

        The backends have no host-callback queue here: this waits for the stream and calls it in this thread, so
        the callback still runs after the queued work, and before this method returns."""
        self.synchronize()
        callback(self, 0, arg)

    def launch_host_func(self, callback: Callable[[Any], None], arg: Any) -> None:
        """Call ``callback(arg)`` once the work queued so far is done (as :meth:`add_callback`)."""
        self.synchronize()
        callback(arg)

    def wait_event(self, event: Event) -> None:
        if self._stream is not None and event._event is not None:
            self._stream.wait_event(event._event)

    def use(self) -> Stream:
        """Make this the current stream of its device."""
        if self._stream is not None:
            _backend.call("set_stream", self._stream)
        _LOCAL.current = self
        return self

    def __enter__(self) -> Stream:
        stack = getattr(_LOCAL, "stack", None)
        if stack is None:
            stack = _LOCAL.stack = []
        stack.append(get_current_stream())
        return self.use()

    def __exit__(self, *exc: Any) -> None:
        _LOCAL.stack.pop().use()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return False
        if self._null or other._null:
            return self._null == other._null and self._ptds == other._ptds and self.device_id == other.device_id
        return self._stream == other._stream if self._stream is not None else self is other

    def __hash__(self) -> int:
        return hash((self._null, self._ptds, self.device_id, self.ptr))

    def __repr__(self) -> str:
        return f"<Stream {self.ptr} (device {self.device_id})>"


class _NullStream(Stream):
    """The default stream, resolved on the device current when it is used.

    ``ptds``: CuPy's per-thread default stream. torch backends have no per-thread default stream, so it is the
    backend's default stream too: work on it is ordered with the null stream's (more ordering than CUDA's
    per-thread stream gives, never less), and it differs from ``Stream.null`` in identity and ``ptr`` only.
    """

    def __init__(self, ptds: bool = False) -> None:
        self._null = True
        self._ptds = ptds

    @property
    def device_id(self) -> int:  # type: ignore[override]
        return _backend.current_index()

    @device_id.setter
    def device_id(self, value: int) -> None:
        pass

    @property
    def _stream(self) -> Any:  # type: ignore[override]
        mod = _backend.module()
        return None if mod is None else mod.default_stream(self.device_id)


Stream.null = _NullStream()
Stream.ptds = _NullStream(ptds=True)


def get_current_stream(device_id: Optional[int] = None) -> Stream:
    """The stream work is queued on now (``Stream.null`` unless one was made current)."""
    current = getattr(_LOCAL, "current", None)
    mod = _backend.module()
    if current is None or mod is None:
        return current if current is not None else Stream.null
    active = mod.current_stream(current.device_id)
    return current if current._stream == active else Stream.null


ExternalStream = Stream
