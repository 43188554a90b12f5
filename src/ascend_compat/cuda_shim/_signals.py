"""Deferring SIGINT across a critical section: the ledger's atomic steps and ``activate()`` / ``deactivate()``.

:func:`signals_deferred` swaps the SIGINT handler for one that only remembers the signal and delivers it to the
program's own handler when the block ends, so a Ctrl-C never lands between two steps of a change; the block may
take back what it did first (:attr:`SignalGuard.rollback`).
"""

from __future__ import annotations

import signal
import threading

try:  # signal's own C functions: the module's wrappers look each handler up in an enum first (~0.1 ms cold)
    from _signal import getsignal as _getsignal  # type: ignore[import-not-found]
    from _signal import signal as _setsignal  # type: ignore[import-not-found]
except ImportError:  # another Python implementation
    _getsignal, _setsignal = signal.getsignal, signal.signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, Optional

__all__ = ["SignalGuard", "signals_deferred"]


class _Deferred:
    """A SIGINT handler that only remembers the signal (delivered when the critical section ends)."""

    __slots__ = ("hit",)

    def __init__(self) -> None:
        self.hit: Optional[tuple[int, Any]] = None

    def __call__(self, signum: int, frame: Any) -> None:
        if self.hit is None:
            self.hit = (signum, frame)


class SignalGuard:
    """What :func:`signals_deferred` yields: ``pending`` says a SIGINT arrived inside the block; ``rollback``, when
    set, is called (signals still deferred) before a pending SIGINT is delivered, so that the interrupted call can
    take back what it did and raise having done nothing."""

    __slots__ = ("handler", "rollback")

    def __init__(self, handler: Optional[_Deferred]) -> None:
        self.handler = handler
        self.rollback: Optional[Callable[[], Any]] = None

    @property
    def pending(self) -> bool:
        return self.handler is not None and self.handler.hit is not None


_NO_GUARD = SignalGuard(None)


@contextmanager
def signals_deferred() -> Iterator[SignalGuard]:
    """Run the block with SIGINT deferred: a Ctrl-C inside it reaches the program's own handler (by default,
    ``KeyboardInterrupt``) right after the block, never between two steps of it.

    Only the main thread receives signals and may change handlers; elsewhere, and when SIGINT is ignored, left to
    the system's default or handled in C, the block runs as it is. Nested blocks defer to the outermost one.
    """
    if threading.current_thread() is not threading.main_thread():
        yield _NO_GUARD
        return
    try:
        previous = _getsignal(signal.SIGINT)
    except (ValueError, AttributeError):  # no signal support here
        previous = None
    if isinstance(previous, _Deferred):  # an enclosing block defers already
        yield SignalGuard(previous)
        return
    if not callable(previous):  # SIG_IGN, SIG_DFL or a C handler: nothing can be raised in Python
        yield _NO_GUARD
        return
    deferred = _Deferred()
    _setsignal(signal.SIGINT, deferred)
    guard = SignalGuard(deferred)
    try:
        yield guard
    finally:
        try:
            if deferred.hit is not None and guard.rollback is not None:
                guard.rollback()
        finally:
            _setsignal(signal.SIGINT, previous)
            if deferred.hit is not None:
                previous(*deferred.hit)  # the program's handler, now (the default raises KeyboardInterrupt)
