"""The CPU-fallback monitor: which operators the NPU ran on the CPU, how often, and for how long.

torch_npu runs an operator it has no NPU kernel for on the CPU and says so once per operator::

    CAUTION: The operator 'aten::X' is not currently supported on the NPU backend and will fall back to run on
    the CPU. This may have performance implications.

While a :class:`FallbackMonitor` is active (``with fallback_monitor() as m:``, or ``ascend-compat run --report``)
it collects these events from three places: the ``warnings`` machinery (the message as Python sees it), the
``logging`` tree (the same text logged by a library) and, on the simulated NPU, ``simulate.on_fallback`` (one call
per fallback, so exact counts). Counts from messages alone are lower bounds: torch_npu warns once per operator.

Time: where the set of falling-back operators is known (the simulator's configuration, or operators already seen),
a ``TorchDispatchMode`` times each call of those operators (wall time of the whole call, copies included). The
mode sees every operator, which costs about 20 us per operator call (measured on the simulator), so it is on by
default only when the simulator has unsupported operators configured (``timing=True/False`` or
``ASCEND_COMPAT_FALLBACK_TIMING=1/0`` override); otherwise time is "not measured".
Limits: dispatch modes are per thread (ops in threads the monitor did not start in are counted by the simulator
hook but not timed); warnings printed by C++ straight to stderr (no Python frame on the stack) are not seen;
a ``warnings.catch_warnings(record=True)`` block in user code hides its warnings from the monitor.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO, TypedDict, Union

if TYPE_CHECKING:
    from torch.utils._python_dispatch import TorchDispatchMode

    from ascend_compat.cuda_shim.ledger import Ledger

__all__ = ["FALLBACK_MESSAGE", "FallbackMonitor", "FallbackSummary", "OpFallback", "fallback_monitor", "parse_message"]

#: torch_npu's wording (torch_npu/csrc/aten/common/...: npu_cpu_fallback); the simulator uses the same text.
FALLBACK_MESSAGE = re.compile(
    r"The operator '(?P<op>[A-Za-z0-9_]+::[A-Za-z0-9_.]+)' is not currently supported on the NPU backend and will "
    r"fall back to run on the CPU"
)
SCHEMA_VERSION = 1


def parse_message(text: str) -> Optional[str]:
    """The operator named by a CPU-fallback message (``"aten::nonzero"``), or None for any other text."""
    m = FALLBACK_MESSAGE.search(str(text))
    return m.group("op") if m else None


@dataclass(frozen=True)
class OpFallback:
    """One operator that fell back to the CPU."""

    op: str
    count: int  # calls seen; a lower bound when ``exact`` is False
    exact: bool  # True when every call was observed (simulator hook or timed dispatch)
    timed_calls: int
    seconds: float  # wall time of the timed calls
    sources: tuple[str, ...]  # "simulator", "warning", "log", "dispatch"

    def to_dict(self) -> OpFallbackDict:
        return {
            "op": self.op,
            "count": self.count,
            "exact": self.exact,
            "timed_calls": self.timed_calls,
            "seconds": round(self.seconds, 6) if self.timed_calls else None,
            "sources": list(self.sources),
        }


class OpFallbackDict(TypedDict):
    """:meth:`OpFallback.to_dict`."""

    op: str
    count: int
    exact: bool
    timed_calls: int
    seconds: Optional[float]  # None when no call was timed
    sources: list[str]


@dataclass(frozen=True)
class FallbackSummary:
    """What a monitor saw, most frequent operator first."""

    ops: tuple[OpFallback, ...]
    timing: bool  # whether calls were timed at all

    @property
    def total_calls(self) -> int:
        return sum(o.count for o in self.ops)

    @property
    def total_seconds(self) -> Optional[float]:
        return sum(o.seconds for o in self.ops) if self.timing else None

    def counts(self) -> dict[str, int]:
        return {o.op: o.count for o in self.ops}

    def to_dict(self) -> FallbackSummaryDict:
        return {
            "schema_version": SCHEMA_VERSION,
            "timing": "measured" if self.timing else "not measured",
            "total_calls": self.total_calls,
            "total_seconds": None if self.total_seconds is None else round(self.total_seconds, 6),
            "ops": [o.to_dict() for o in self.ops],
        }

    def format(self) -> str:
        lines = ["ascend-compat CPU fallbacks (operators the NPU ran on the CPU):"]
        if not self.ops:
            lines.append("  (none)")
            return "\n".join(lines)
        for o in self.ops:
            count = f"{o.count}" if o.exact else f">={o.count}"
            if o.timed_calls:
                spent = f"{o.seconds * 1e3:.3f} ms" + ("" if o.timed_calls == o.count else f" ({o.timed_calls} timed)")
            else:
                spent = "not measured"
            lines.append(f"  {count:>8}  {spent:>14}  {o.op}  [{', '.join(o.sources)}]")
        if self.timing:
            lines.append(f"  time: wall time of the calls, {self.total_seconds * 1e3:.3f} ms in all")  # type: ignore[operator]
        else:
            lines.append("  time: not measured (set ASCEND_COMPAT_FALLBACK_TIMING=1 to time known fallbacks)")
        if any(not o.exact for o in self.ops):
            lines.append("  >=N: seen only in torch_npu's message, which it prints once per operator")
        return "\n".join(lines)


class FallbackSummaryDict(TypedDict):
    """:meth:`FallbackSummary.to_dict`, the JSON form of a monitor's summary."""

    schema_version: int
    timing: str  # "measured" | "not measured"
    total_calls: int
    total_seconds: Optional[float]
    ops: list[OpFallbackDict]


@dataclass
class _Stats:
    hook: int = 0
    text: int = 0
    timed: int = 0
    seconds: float = 0.0
    sources: set[str] = field(default_factory=set)


def _wrap_log_handle(
    monitor: FallbackMonitor, original: Callable[[logging.Logger, logging.LogRecord], Any]
) -> Callable[[logging.Logger, logging.LogRecord], Any]:
    """``Logger.handle`` that looks at each record first. A wrapper rather than a handler on the root logger: adding
    a handler there would switch off logging's last-resort printing of the user's own warnings."""

    def handle(self: logging.Logger, record: logging.LogRecord) -> Any:
        try:
            op = parse_message(record.getMessage())
        except Exception:  # a malformed record is the logger's problem, never the monitor's
            op = None
        if op is not None:
            monitor._note(op, "log")
        return original(self, record)

    return handle


def _timing_default() -> bool:
    from ascend_compat import settings

    chosen = settings.FALLBACK_TIMING.get()
    if chosen is not None:
        return chosen
    if _simulated():
        from ascend_compat import simulate

        cfg = simulate.config()
        return bool(cfg and cfg.unsupported_ops)
    return False


def _simulated() -> bool:
    sim = sys.modules.get("ascend_compat.simulate")
    return bool(sim is not None and sim.is_installed())


def _base(op: str) -> str:
    return op.split(".", 1)[0]


class FallbackMonitor:
    """Collects CPU-fallback events between :meth:`start` and :meth:`stop` (or as a context manager)."""

    def __init__(self, timing: Optional[bool] = None) -> None:
        self._requested_timing = timing
        self._lock = threading.Lock()
        self._stats: dict[str, _Stats] = {}
        self._known: dict[str, str] = {}  # full and base names -> the name the op is reported under
        self._active = False
        self._timing = False
        self._ledger: Optional[Ledger] = None

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> FallbackMonitor:
        """Begin collecting (idempotent). Its changes (``warnings.showwarning``, ``logging.Logger.handle``, the
        simulator hook, the timing mode) are a scope of the package's ledger: atomic, and restored exactly by
        :meth:`stop` whatever the shim did meanwhile."""
        if self._active:
            return self
        from ascend_compat import cuda_shim

        ledger = cuda_shim.package_ledger().child()
        with ledger.transaction():
            self._patch(ledger)
            self._timing = _timing_default() if self._requested_timing is None else bool(self._requested_timing)
            if self._timing:
                self._timing = self._enter_timing(ledger)
        self._ledger = ledger
        self._active = True
        return self

    def _patch(self, ledger: Ledger) -> None:
        original = warnings.showwarning

        def showwarning(message: Union[Warning, str], category: type[Warning], filename: str, lineno: int,
                        file: Optional[TextIO] = None, line: Optional[str] = None) -> None:  # fmt: skip
            op = parse_message(str(message))
            if op is not None:
                self._note(op, "warning")
            original(message, category, filename, lineno, file, line)

        ledger.setattr(warnings, "showwarning", showwarning, label="fallback monitor: warnings.showwarning")
        ledger.setattr(logging.Logger, "handle", _wrap_log_handle(self, logging.Logger.handle),
                       label="fallback monitor: logging.Logger.handle")  # fmt: skip
        if _simulated():
            from ascend_compat import simulate

            remove: list[Any] = []
            ledger.call(lambda: remove.append(simulate.on_fallback(self._on_sim_fallback)),
                        lambda: remove and remove.pop()(), "fallback monitor: simulator hook")  # fmt: skip
            cfg = simulate.config()
            for op in cfg.unsupported_ops if cfg else ():
                self._learn(op if "::" in op else f"aten::{op}")

    def _enter_timing(self, ledger: Ledger) -> bool:
        """Enter the timing mode through ``ledger``; False (with a warning) when it cannot be."""
        entered: list[TorchDispatchMode] = []
        try:
            mode = _timing_mode(self)

            def leave() -> None:
                if entered:
                    _exit_mode(mode)

            ledger.call(lambda: entered.append(mode.__enter__()), leave, "fallback monitor: dispatch mode")
        except Exception as exc:  # timing is a bonus: without it the counts still work
            warnings.warn(f"ascend-compat fallback monitor: cannot time fallbacks ({exc})", stacklevel=3)
            return False
        return True

    def stop(self) -> FallbackSummary:
        """Stop collecting and return the summary (idempotent)."""
        if self._active:
            self._active = False
            try:
                if self._ledger is not None:
                    self._ledger.restore()
            except Exception as exc:  # e.g. user code left its own dispatch mode on top of ours
                warnings.warn(f"ascend-compat fallback monitor: incomplete clean-up ({exc})", stacklevel=2)
        return self.summary()

    def __enter__(self) -> FallbackMonitor:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def active(self) -> bool:
        return self._active

    # --- events -----------------------------------------------------------------------------------------------

    def _note(self, op: str, source: str) -> None:
        if not self._active:
            return
        with self._lock:
            st = self._stats.setdefault(op, _Stats())
            st.sources.add(source)
            if source == "simulator":
                st.hook += 1
            else:
                st.text += 1
            self._learn(op)

    def _learn(self, op: str) -> None:
        self._known[op] = op
        self._known.setdefault(_base(op), op)

    def _on_sim_fallback(self, op: str) -> None:
        self._note(op, "simulator")

    def _timed(self, op: str, seconds: float) -> None:
        with self._lock:
            st = self._stats.setdefault(op, _Stats())
            st.sources.add("dispatch")
            st.timed += 1
            st.seconds += seconds

    def known_as(self, op: str) -> Optional[str]:
        """The reported name of ``op`` if it is known to fall back (an overload matches its base name)."""
        return self._known.get(op) or self._known.get(_base(op))

    # --- results ----------------------------------------------------------------------------------------------

    def summary(self) -> FallbackSummary:
        """What was seen so far."""
        with self._lock:
            items = []
            for op, st in self._stats.items():
                count = max(st.hook, st.timed, st.text)
                exact = st.hook > 0 or st.timed > 0
                items.append(OpFallback(op, count, exact, st.timed, st.seconds, tuple(sorted(st.sources))))
        items.sort(key=lambda o: (-o.count, o.op))
        return FallbackSummary(tuple(items), self._timing)

    def counts(self) -> dict[str, int]:
        return self.summary().counts()


def _exit_mode(mode: TorchDispatchMode) -> None:
    """Leave ``mode`` only when it is the innermost dispatch mode: exiting pops the top of the stack, which would
    remove a mode the user's code left entered and keep ours."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    if _get_current_dispatch_mode() is not mode:
        raise RuntimeError("another dispatch mode was left entered above the monitor's; its timing mode stays on")
    mode.__exit__(None, None, None)


def _timing_mode(monitor: FallbackMonitor) -> TorchDispatchMode:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    clock = time.perf_counter
    known_as = monitor.known_as

    from torch.utils._pytree import tree_leaves

    def on_device(args: Any, kwargs: Any) -> bool:
        # Only calls on device tensors fall back: the same op on CPU tensors (pre-processing) is not one.
        return any(isinstance(x, torch.Tensor) and x.device.type not in ("cpu", "meta")
                   for x in tree_leaves((args, kwargs)))

    class _FallbackTimer(TorchDispatchMode):
        # Times only the device calls of operators known to fall back; everything else passes straight through.
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            t0 = clock()
            out = func(*args, **(kwargs or {}))
            name = known_as(func.name())
            # Checked after the call: a first fallback names its op during the call.
            if name is not None and on_device(args, kwargs):
                monitor._timed(name, clock() - t0)
            return out

    return _FallbackTimer()


@contextmanager
def fallback_monitor(timing: Optional[bool] = None) -> Iterator[FallbackMonitor]:
    """``with fallback_monitor() as m: ...`` then ``m.summary()`` (also valid after the block)."""
    monitor = FallbackMonitor(timing=timing)
    monitor.start()
    try:
        yield monitor
    finally:
        monitor.stop()
