"""One ledger for all monkey-patching.

Every global change the package makes goes through the package's :class:`Ledger` (``cuda_shim._LEDGER``):
attributes (the raw ``__dict__`` entry is recorded, so descriptors come back as they were and a name that was absent
is deleted again), mapping entries (``os.environ``, ``copyreg.dispatch_table``), list elements (finders in
``sys.meta_path``) and undo callbacks (``atexit`` registrations, dispatch modes). It refuses to patch the same place
twice, applies a plan atomically (a failure restores everything applied so far) and restores in reverse order.
Restoring, and the scopes' sharing of records, is :mod:`~ascend_compat.cuda_shim.ledger_restore` (loaded when
first needed: activation only applies).

Scopes: the shim's activation is the ledger itself; the dtype policy's checks and the fallback monitor are
:meth:`Ledger.child` scopes of it, with lifetimes of their own. Every scope's records claim places in one shared
table, so no two scopes patch the same place differently (one wrapper per attribute). Two scopes that need the *same*
change share its one record (:meth:`Ledger.setattr` with the value already there): it is undone when the last of
them ends. A scope restores its own records newest first; as no two records hold the same place, scopes may end in
any order and every restore is exact.

Atomic with respect to exceptions and signals:

- the record is written *before* the change it describes, and removed again if the change fails, so an exception
  at any point leaves either nothing or a record that restoring handles (restoring a change that never happened
  puts back what is already there);
- the claims that refuse double patches are kept with the records, added and dropped in the same step;
- a record whose restore fails stays in the ledger (a later ``restore()`` retries it);
- ``transaction()``, ``savepoint()`` and ``restore()`` run with SIGINT deferred (:func:`signals_deferred`, also
  what ``activate()`` / ``deactivate()`` use): a Ctrl-C arriving in the middle is delivered when the ledger is
  consistent again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Optional

from ascend_compat import _FieldValue as FieldValue  # ascend_compat._value's class (one module less to import)

try:  # signal's own C functions: the module's wrappers look each handler up in an enum first (~0.1 ms cold)
    from _signal import getsignal as _getsignal  # type: ignore[import-not-found]
    from _signal import signal as _setsignal  # type: ignore[import-not-found]
except ImportError:  # another Python implementation
    _getsignal, _setsignal = signal.getsignal, signal.signal

__all__ = ["Ledger", "PatchConflictError", "PatchRecord", "RestoreError", "SignalGuard", "signals_deferred"]

_MISSING = object()


class PatchConflictError(RuntimeError):
    """The same attribute was patched twice in one ledger."""


class RestoreError(RuntimeError):
    """Some originals could not be put back; the message lists them (their records stay in the ledger)."""


class PatchRecord(FieldValue):
    """What was changed, and what to put back (a plain class: see :mod:`ascend_compat._value`)."""

    # Declaration order (repr, equality, positional arguments).
    _FIELDS = ("owner", "name", "original", "replacement", "is_item", "label", "kind")
    __slots__ = _FIELDS
    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as a dataclass

    def __init__(
        self, owner: Any, name: Any, original: Any, replacement: Any, is_item: bool, label: str, kind: str = "attr"
    ) -> None:
        self.owner = owner
        self.name = name
        self.original = original
        self.replacement = replacement
        self.is_item = is_item  # a mapping entry (os.environ, copyreg.dispatch_table) rather than an attribute
        self.label = label
        # "attr", "item", "list" (an element put into a list), "call" (an undo callback) or "share" (another
        # scope's record this scope also needs: ``original`` is that record, ``owner`` this scope)
        self.kind = kind

    def key(self) -> tuple[int, str, bool]:
        """What a second patch of the same place would collide with."""
        return (id(self.owner), str(self.name), self.is_item)

    def describe(self) -> str:
        owner = getattr(self.owner, "__name__", type(self.owner).__name__)
        if self.kind in ("list", "call", "share"):
            return f"{self.kind}:{self.label}"
        return f"{owner}[{self.name!r}]" if self.is_item else f"{owner}.{self.name}"


# --- SIGINT deferred across a critical section (the ledger's steps, activate() / deactivate()) ---------------------
# Here rather than in a module of its own: activate() imports this module, and every module costs ~0.1 ms there.

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


# --- the ledger -----------------------------------------------------------------------------------------------------
# Applying is here; restoring, failures and the scopes' sharing are in ledger_restore, which activation never runs.


def _restoring() -> Any:
    from ascend_compat.cuda_shim import ledger_restore

    return ledger_restore


if TYPE_CHECKING:  # a runtime alias costs a typing subscription on activate()'s path
    Step = Callable[[str, str], None]


def _raw(owner: Any, name: str) -> Any:
    """The exact current value: the ``__dict__`` entry where there is one (descriptors, and names a module's
    ``__getattr__`` supplies, come back as they were), else what ``getattr`` says."""
    d = getattr(owner, "__dict__", None)
    if d is not None and hasattr(d, "get"):
        return d.get(name, _MISSING)
    return getattr(owner, name, _MISSING)


class Ledger:
    """Records patches; thread-safe; restores in reverse order.

    ``_step`` (None here) is called as ``_step(stage, label)`` between the steps of every change when set; a
    test-only subclass uses it to inject faults (``stage`` is ``"record"``, ``"change"``, ``"done"`` or, when
    restoring, ``"undo"``); its child scopes call the same one.
    """

    _step: Optional[Step] = None

    def __init__(self, parent: Optional[Ledger] = None) -> None:
        self._records: list[PatchRecord] = []
        if parent is None:
            # Shared with every child scope: each claimed place and its record; the records other scopes share.
            self._keys: dict[tuple[int, str, bool], PatchRecord] = {}
            self._shares: dict[int, list[PatchRecord]] = {}
            self._lock = threading.RLock()
        else:
            self._keys, self._shares, self._lock = parent._keys, parent._shares, parent._lock
            if parent._step is not None:
                self._step = parent._step

    def child(self) -> Ledger:
        """A scope of this ledger with a lifetime of its own (its :meth:`restore` undoes only its records)."""
        return Ledger(self)

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> tuple[PatchRecord, ...]:
        """This scope's records, oldest first (a share's ``original`` is the record it shares)."""
        return tuple(self._records)

    def claimed(self) -> tuple[PatchRecord, ...]:
        """Every change in force, in this ledger and all its scopes: one record per patched place."""
        with self._lock:
            return tuple(self._keys.values())

    def _add(self, rec: PatchRecord) -> None:
        """Claim and record in one step: the record goes in first; the change it describes follows."""
        key = rec.key()
        if key in self._keys:
            raise PatchConflictError(
                f"{getattr(rec.owner, '__name__', rec.owner)!s}.{rec.name} is already patched by this ledger"
            )
        step = self._step
        if step is not None:
            step("record", rec.label)
        self._records.append(rec)
        self._keys[key] = rec
        if step is not None:
            step("change", rec.label)

    def setattr(self, owner: Any, name: str, value: Any, label: str = "") -> Any:
        """``setattr(owner, name, value)``, recording the exact original; returns the original (or None).

        When another scope has already set that very ``value`` there, this scope shares its record instead (the
        change stays until both have ended); any other second patch of the place raises PatchConflictError."""
        with self._lock:
            key = (id(owner), name, False)  # rec.key(), inline: activation records a few hundred of these
            held = self._keys.get(key)
            if held is not None and held.replacement is value and held.kind == "attr":
                return _restoring().share(self, held, label)
            d = getattr(owner, "__dict__", None)  # _raw(owner, name), inline (as above)
            original = d.get(name, _MISSING) if d is not None and hasattr(d, "get") else getattr(owner, name, _MISSING)
            rec = PatchRecord(owner, name, original, value, False, label or name)
            if self._step is not None or held is not None or type(name) is not str:
                self._add(rec)
            else:
                self._records.append(rec)
                self._keys[key] = rec
            try:
                setattr(owner, name, value)
                if self._step is not None:
                    self._step("done", rec.label)
            except BaseException:
                _restoring().forget(self, rec)
                raise
            return None if original is _MISSING else original

    def _apply(self, rec: PatchRecord, change: Callable[[], Any], done: bool = True) -> Any:
        """Record ``rec``, then make the change it describes; a failure undoes both."""
        with self._lock:
            self._add(rec)
            try:
                result = change()
                if done and self._step is not None:
                    self._step("done", rec.label)
                return result
            except BaseException:
                _restoring().forget(self, rec)
                raise

    def setitem(self, mapping: MutableMapping[Any, Any], key: Any, value: Any, label: str = "") -> None:
        """``mapping[key] = value`` (or delete when value is None for os.environ-like maps), recorded."""
        rec = PatchRecord(mapping, key, mapping.get(key, _MISSING), value, True, label or str(key), "item")
        self._apply(rec, lambda: mapping.pop(key, None) if value is None else mapping.__setitem__(key, value))

    def insert(self, items: list[Any], value: Any, index: int = 0, label: str = "") -> None:
        """``items.insert(index, value)`` (e.g. a finder into ``sys.meta_path``); restore removes that element."""
        self._apply(PatchRecord(items, f"list:{id(value)}", _MISSING, value, False, label, "list"),
                    lambda: items.insert(index, value))  # fmt: skip

    def on_restore(self, undo: Callable[[], Any], label: str) -> None:
        """Run ``undo()`` when the ledger restores (in reverse order with the other records). Record it right
        after the change it undoes; ``undo`` must be safe to run when that change did not complete."""
        with self._lock:
            self._add(PatchRecord(None, f"call:{id(undo)}", _MISSING, undo, False, label, "call"))

    def call(self, do: Callable[[], Any], undo: Callable[[], Any], label: str) -> Any:
        """``do()`` now and ``undo()`` on restore (an ``atexit`` registration, a dispatch mode), as one change."""
        return self._apply(PatchRecord(None, f"call:{id(undo)}", _MISSING, undo, False, label, "call"), do, False)

    def restore(self) -> None:
        """Put every original of this scope back, newest first (a change another scope shares stays, as that
        scope's). Keeps going past failures and reports them together; the records that failed stay, so a later
        ``restore()`` retries them."""
        _restoring().restore_to(self, 0)

    def hand_over(self, other: Ledger) -> None:
        """Make every record of this scope ``other``'s (restored with it); shares between the two merge."""
        _restoring().hand_over(self, other)

    @contextmanager
    def transaction(self) -> Iterator[SignalGuard]:
        """Apply patches atomically: if the block raises, everything patched in it (and before) is restored.

        SIGINT is deferred for the block; the guard it yields says whether one is pending (the caller may then
        undo what it did before the interrupt is delivered)."""
        with signals_deferred() as guard, self._lock:
            try:
                yield guard
            except BaseException:
                self.restore()
                raise

    @contextmanager
    def savepoint(self) -> Iterator[Ledger]:
        """If the block raises, undo only what it patched (one library's patch), keeping earlier records."""
        with signals_deferred(), self._lock:
            mark = len(self._records)
            try:
                yield self
            except BaseException:
                _restoring().restore_to(self, mark)
                raise
