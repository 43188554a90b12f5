"""One ledger for all monkey-patching.

Every attribute or mapping entry the shim changes goes through a :class:`Ledger`: it records the owner, the
name and the exact original (the raw class ``__dict__`` entry for classes, so descriptors come back as they were),
refuses to patch the same place twice, applies a plan atomically (a failure restores everything applied so far)
and restores in reverse order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from ascend_compat._value import FieldValue

_MISSING = object()


class PatchConflictError(RuntimeError):
    """The same attribute was patched twice in one ledger."""


class RestoreError(RuntimeError):
    """Some originals could not be put back; the message lists them."""


class PatchRecord(FieldValue):
    """What was changed, and what to put back.

    A plain class rather than a dataclass: building a dataclass costs about half a millisecond at import, and this
    module is on ``activate()``'s path (see :mod:`ascend_compat._value`).
    """

    # Declaration order (repr, equality, positional arguments).
    _FIELDS = ("owner", "name", "original", "replacement", "is_item", "label", "kind")
    __slots__ = _FIELDS
    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as a dataclass

    def __init__(
        self, owner: Any, name: str, original: Any, replacement: Any, is_item: bool, label: str, kind: str = "attr"
    ) -> None:
        self.owner = owner
        self.name = name
        self.original = original
        self.replacement = replacement
        self.is_item = is_item  # a mapping entry (os.environ, copyreg.dispatch_table) rather than an attribute
        self.label = label
        self.kind = kind  # "attr", "item", "list" (an element put into a list) or "call" (an undo callback)

    def describe(self) -> str:
        owner = getattr(self.owner, "__name__", type(self.owner).__name__)
        if self.kind in ("list", "call"):
            return f"{self.kind}:{self.label}"
        return f"{owner}[{self.name!r}]" if self.is_item else f"{owner}.{self.name}"


class Ledger:
    """Records patches; thread-safe; restores in reverse order."""

    def __init__(self) -> None:
        self._records: list[PatchRecord] = []
        self._keys: set[tuple[int, str, bool]] = set()
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> tuple[PatchRecord, ...]:
        return tuple(self._records)

    def _claim(self, owner: Any, name: str, is_item: bool) -> None:
        key = (id(owner), name, is_item)
        if key in self._keys:
            raise PatchConflictError(f"{getattr(owner, '__name__', owner)!s}.{name} is already patched by this ledger")
        self._keys.add(key)

    def setattr(self, owner: Any, name: str, value: Any, label: str = "") -> Any:
        """``setattr(owner, name, value)``, recording the exact original; returns the original (or None)."""
        with self._lock:
            self._claim(owner, name, False)
            original = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
            try:
                setattr(owner, name, value)
            except BaseException:
                self._keys.discard((id(owner), name, False))
                raise
            self._records.append(PatchRecord(owner, name, original, value, False, label or name))
            return None if original is _MISSING else original

    def setitem(self, mapping: MutableMapping[Any, Any], key: Any, value: Any, label: str = "") -> None:
        """``mapping[key] = value`` (or delete when value is None for os.environ-like maps), recorded."""
        with self._lock:
            self._claim(mapping, str(key), True)
            original = mapping.get(key, _MISSING)
            try:
                if value is None:
                    mapping.pop(key, None)
                else:
                    mapping[key] = value
            except BaseException:
                self._keys.discard((id(mapping), str(key), True))
                raise
            self._records.append(PatchRecord(mapping, key, original, value, True, label or str(key), "item"))

    def insert(self, items: list[Any], value: Any, index: int = 0, label: str = "") -> None:
        """``items.insert(index, value)`` (e.g. a finder into ``sys.meta_path``); restore removes that element."""
        with self._lock:
            self._claim(items, f"list:{id(value)}", False)
            items.insert(index, value)
            self._records.append(PatchRecord(items, f"list:{id(value)}", _MISSING, value, False, label, "list"))

    def on_restore(self, undo: Any, label: str) -> None:
        """Run ``undo()`` when the ledger restores (in reverse order with the other records)."""
        with self._lock:
            self._records.append(PatchRecord(None, f"call:{id(undo)}", _MISSING, undo, False, label, "call"))

    def restore(self) -> None:
        """Put every original back, newest first. Keeps going past failures and reports them together."""
        self._restore_to(0)

    def _restore_to(self, mark: int) -> None:
        with self._lock:
            failures = []
            while len(self._records) > mark:
                rec = self._records.pop()
                self._keys.discard((id(rec.owner), str(rec.name), rec.is_item))
                try:
                    if rec.kind == "call":
                        rec.replacement()
                    elif rec.kind == "list":
                        rec.owner[:] = [x for x in rec.owner if x is not rec.replacement]
                    elif rec.is_item:
                        if rec.original is _MISSING:
                            rec.owner.pop(rec.name, None)
                        else:
                            rec.owner[rec.name] = rec.original
                    elif rec.original is _MISSING:
                        delattr(rec.owner, rec.name)
                    else:
                        setattr(rec.owner, rec.name, rec.original)
                except Exception as exc:
                    failures.append(f"{rec.describe()}: {exc}")
            if failures:
                raise RestoreError("could not restore: " + "; ".join(failures))

    @contextmanager
    def transaction(self) -> Iterator[Ledger]:
        """Apply patches atomically: if the block raises, everything patched in it (and before) is restored."""
        with self._lock:
            try:
                yield self
            except BaseException:
                self.restore()
                raise

    @contextmanager
    def savepoint(self) -> Iterator[Ledger]:
        """If the block raises, undo only what it patched (one library's patch), keeping earlier records."""
        with self._lock:
            mark = len(self._records)
            try:
                yield self
            except BaseException:
                self._restore_to(mark)
                raise
