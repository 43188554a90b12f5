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
