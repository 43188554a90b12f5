"""The ledger: exact restore, refused doubles, atomic transactions, mapping entries."""

from __future__ import annotations

import os
import types

import pytest

from ascend_compat.cuda_shim.ledger import Ledger, PatchConflictError


def test_restore_is_exact_and_reverse_ordered():
    class Owner:
        @staticmethod
        def s():
            return 1

    mod = types.SimpleNamespace(f=len)
    raw = Owner.__dict__["s"]
    ledger = Ledger()
    ledger.setattr(Owner, "s", staticmethod(lambda: 2))
    ledger.setattr(mod, "f", max)
    ledger.setattr(mod, "new", 1)
    assert Owner.s() == 2 and mod.f is max and mod.new == 1
    ledger.restore()
    assert Owner.__dict__["s"] is raw and mod.f is len and not hasattr(mod, "new")
    assert len(ledger) == 0


def test_refuses_double_patch():
    mod = types.SimpleNamespace(f=1)
    ledger = Ledger()
    ledger.setattr(mod, "f", 2)
    with pytest.raises(PatchConflictError):
        ledger.setattr(mod, "f", 3)
    ledger.restore()
    assert mod.f == 1


def test_transaction_rolls_back_on_failure():
    mod = types.SimpleNamespace(a=1, b=2)
    ledger = Ledger()
    with pytest.raises(RuntimeError, match="boom"), ledger.transaction():
        ledger.setattr(mod, "a", 10)
        ledger.setattr(mod, "b", 20)
        raise RuntimeError("boom")
    assert (mod.a, mod.b) == (1, 2) and len(ledger) == 0


def test_mapping_entries_restore(monkeypatch):
    monkeypatch.delenv("ASCEND_COMPAT_TEST_VAR", raising=False)
    monkeypatch.setenv("ASCEND_COMPAT_TEST_OTHER", "x")
    ledger = Ledger()
    ledger.setitem(os.environ, "ASCEND_COMPAT_TEST_VAR", "1")
    ledger.setitem(os.environ, "ASCEND_COMPAT_TEST_OTHER", None)
    assert os.environ["ASCEND_COMPAT_TEST_VAR"] == "1" and "ASCEND_COMPAT_TEST_OTHER" not in os.environ
    ledger.restore()
    assert "ASCEND_COMPAT_TEST_VAR" not in os.environ and os.environ["ASCEND_COMPAT_TEST_OTHER"] == "x"


def test_list_insert_and_undo_callbacks_restore_in_reverse_order():
    ledger = Ledger()
    items = ["a", "b"]
    finder = object()
    events: list[str] = []
    ledger.on_restore(lambda: events.append(f"callback saw {len(items)} items"), "cb")
    ledger.insert(items, finder, 0, label="finder")
    items.append("added later by someone else")  # must survive the restore
    assert items[0] is finder
    with pytest.raises(PatchConflictError):
        ledger.insert(items, finder)
    ledger.restore()
    assert items == ["a", "b", "added later by someone else"]
    assert events == ["callback saw 3 items"]  # ran after the newer record (the insert) was undone


def test_savepoint_undoes_only_its_own_block():
    mod = types.SimpleNamespace(x=1, y=2)
    ledger = Ledger()
    ledger.setattr(mod, "x", 10)
    with pytest.raises(RuntimeError), ledger.savepoint():
        ledger.setattr(mod, "y", 20)
        raise RuntimeError("library patch failed half-way")
    assert mod.x == 10 and mod.y == 2 and len(ledger) == 1
    ledger.setattr(mod, "y", 30)  # the failed block released its claim
    ledger.restore()
    assert (mod.x, mod.y) == (1, 2)


def test_child_scopes_share_one_claim_table_and_end_in_any_order():
    mod = types.SimpleNamespace(f=len, g=min, h=abs)
    root = Ledger()
    first, second = root.child(), root.child()
    wrapper = object()
    first.setattr(mod, "f", wrapper)
    with pytest.raises(PatchConflictError):
        second.setattr(mod, "f", object())  # a second, different wrapper of the same place is refused everywhere
    second.setattr(mod, "f", wrapper)  # the very same change: shared, one record
    second.setattr(mod, "g", max)
    root.setattr(mod, "h", round)
    assert [r.kind for r in second.records] == ["share", "attr"] and len(root.claimed()) == 3
    first.restore()  # ends first: its record passes to the scope still sharing it
    assert mod.f is wrapper and [r.kind for r in second.records] == ["attr", "attr"]
    root.restore()  # out of order with the child: exact, the places differ
    assert mod.h is abs and mod.g is max
    second.restore()
    assert (mod.f, mod.g, mod.h) == (len, min, abs) and root.claimed() == ()


def test_hand_over_merges_a_scope_into_another():
    mod = types.SimpleNamespace(f=len, g=min)
    root = Ledger()
    child = root.child()
    wrapper = object()
    root.setattr(mod, "f", wrapper)
    child.setattr(mod, "f", wrapper)
    child.setattr(mod, "g", max)
    child.hand_over(root)
    assert len(child) == 0 and [r.kind for r in root.records] == ["attr", "attr"]  # the share merged away
    child.restore()
    assert mod.g is max
    root.restore()
    assert (mod.f, mod.g) == (len, min)


def test_a_fault_injecting_ledger_reaches_its_child_scopes():
    class Faulty(Ledger):
        def _step(self, stage, label):
            if label == "bad":
                raise KeyboardInterrupt(label)

    mod = types.SimpleNamespace(a=1, b=2)
    child = Faulty().child()
    with pytest.raises(KeyboardInterrupt), child.transaction():
        child.setattr(mod, "a", 10, "good")
        child.setattr(mod, "b", 20, "bad")
    assert (mod.a, mod.b) == (1, 2) and len(child) == 0 and child.claimed() == ()


def test_objects_without_a_dict_are_recorded_and_restored_exactly():
    # devices.TARGET has slots: reading an instance's __dict__ (as the ledger does to record a raw original)
    # materialises it, and CPython 3.11 then reads that instance's attributes unspecialised, on every wrapper call.
    class Slotted:
        __slots__ = ("a", "b")

        def __init__(self) -> None:
            self.a, self.b = "x", None

    obj = Slotted()
    a = obj.a
    ledger = Ledger()
    assert ledger.setattr(obj, "a", "y") is a
    assert ledger.setattr(obj, "b", 1) is None
    assert (obj.a, obj.b) == ("y", 1)
    ledger.restore()
    assert obj.a is a and obj.b is None and not hasattr(obj, "__dict__")
