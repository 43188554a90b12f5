"""The other half of :class:`~ascend_compat.cuda_shim.ledger.Ledger`: putting originals back, and the scopes'
sharing of records.

Apart so that ``activate()`` does not load it: activation only records and applies. Deactivation, a failed
change, a scope sharing another's record (the dtype policy and the fallback monitor) and a scope handing its
records over come here; the ``Ledger`` methods of the same names call these functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ascend_compat.cuda_shim.ledger import (
    _MISSING,
    PatchConflictError,
    PatchRecord,
    RestoreError,
    _raw,
    signals_deferred,
)

if TYPE_CHECKING:
    from ascend_compat.cuda_shim.ledger import Ledger

__all__ = ["forget", "hand_over", "restore_to", "share", "undo"]


def undo(rec: PatchRecord) -> None:
    """Put one original back; harmless when the change was never made (a record is written before it)."""
    if rec.kind == "share":
        return  # the shared record stays with the scope it belongs to
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
        if _raw(rec.owner, rec.name) is not _MISSING:
            delattr(rec.owner, rec.name)
    elif _raw(rec.owner, rec.name) is not rec.original:
        setattr(rec.owner, rec.name, rec.original)


def _unclaim(ledger: Ledger, rec: PatchRecord) -> None:
    if rec.kind == "share":
        sharers = ledger._shares.get(id(rec.original), [])
        sharers[:] = [s for s in sharers if s is not rec]
        if not sharers:
            ledger._shares.pop(id(rec.original), None)
        return
    key = rec.key()
    if ledger._keys.get(key) is rec:
        del ledger._keys[key]


def forget(ledger: Ledger, rec: PatchRecord) -> None:
    """``rec``'s change failed (the lock being held, ``rec`` the scope's newest record): undo it, drop the record."""
    undo(rec)
    if ledger._records and ledger._records[-1] is rec:
        ledger._records.pop()
    _unclaim(ledger, rec)


def share(ledger: Ledger, held: PatchRecord, label: str) -> object:
    """Record that ``ledger`` also needs the change ``held`` (another scope's) made; returns its original."""
    if any(r is held or r.original is held for r in ledger._records):
        raise PatchConflictError(f"{held.describe()} is already patched by this scope")
    if ledger._step is not None:
        ledger._step("record", label or held.label)
    rec = PatchRecord(ledger, held.name, held, held.replacement, False, label or held.label, "share")
    ledger._records.append(rec)
    ledger._shares.setdefault(id(held), []).append(rec)
    return None if held.original is _MISSING else held.original


def _pass_on(ledger: Ledger, rec: PatchRecord) -> bool:
    """``rec`` is shared by another scope: it becomes that scope's record, in place of its share."""
    sharers = ledger._shares.get(id(rec))
    if not sharers:
        return False
    first = sharers.pop(0)
    if not sharers:
        del ledger._shares[id(rec)]
    scope: Ledger = first.owner
    scope._records = [rec if r is first else r for r in scope._records]
    return True


def restore_to(ledger: Ledger, mark: int) -> None:
    """Undo ``ledger``'s records newer than the first ``mark``, newest first, past failures; the records that
    failed stay (a later restore retries them) and are reported together in one :class:`RestoreError`."""
    with signals_deferred(), ledger._lock:
        failures: list[str] = []
        kept: list[PatchRecord] = []
        step = ledger._step
        records = ledger._records
        try:
            while len(records) > mark:
                rec = records[-1]
                if step is not None:
                    step("undo", rec.label)
                try:
                    if not (ledger._shares and _pass_on(ledger, rec)):
                        undo(rec)
                        _unclaim(ledger, rec)
                except Exception as exc:
                    kept.append(rec)
                    failures.append(f"{rec.describe()}: {exc}")
                records.pop()
        finally:
            records.extend(reversed(kept))
        if failures:
            raise RestoreError("could not restore: " + "; ".join(failures))


def hand_over(ledger: Ledger, other: Ledger) -> None:
    """Make every record of ``ledger`` ``other``'s (restored with it); shares between the two merge."""
    with ledger._lock:
        moved, ledger._records = ledger._records, []
        theirs = {id(r) for r in other._records}
        for rec in moved:
            if rec.kind == "share" and id(rec.original) in theirs:
                _unclaim(ledger, rec)  # other holds the record itself
                continue
            if rec.kind == "share":
                rec.owner = other
            other._records.append(rec)
        mine = {id(r) for r in moved}
        for rec in [r for r in other._records if r.kind == "share" and id(r.original) in mine]:
            other._records.remove(rec)
            _unclaim(ledger, rec)
