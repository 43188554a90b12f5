"""The kernel_helper data files: unique keys, valid enums, every entry sourced."""

from __future__ import annotations

import re
from string import Template

from ascend_compat._data import load
from ascend_compat.kernel_helper.spec import PATTERNS, computations, dtypes


def _placeholders(text: str) -> set[str]:
    return {m.group("named") or m.group("braced") for m in Template.pattern.finditer(text)
            if m.group("named") or m.group("braced")}


def test_dtypes_are_unique_sourced_and_consistent():
    entries = load("dtypes")["dtypes"]
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names))
    for entry in entries:
        assert entry["source"].strip()
        assert entry["bytes"] in (1, 2, 4)
        assert re.fullmatch(r"ge::DT_[A-Z0-9]+", entry["ge"])
        assert entry["kernel"] and entry["msopgen"] and entry["torch"]


def test_computations_are_unique_sourced_and_well_formed():
    entries = load("computations")["computations"]
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names))
    known_dtypes = set(dtypes())
    allowed_call = {"dst", "in0", "in1", "count", "T", "work"}
    for entry in entries:
        assert entry["source"].strip()
        assert entry["pattern"] in PATTERNS
        assert entry["inputs"] in (1, 2)
        assert entry["dtypes"] and set(entry["dtypes"]) <= known_dtypes
        attrs = {a["name"] for a in entry["attrs"]}
        assert _placeholders(entry["call"]) <= allowed_call
        assert _placeholders(entry["torch"]) <= {f"x{i}" for i in range(entry["inputs"])} | attrs
        for attr in entry["attrs"]:
            assert attr["type"] in ("float", "int", "bool")


def test_every_pattern_has_a_default_computation():
    from ascend_compat.kernel_helper.spec import DEFAULT_COMPUTE

    for pattern in PATTERNS:
        assert computations()[DEFAULT_COMPUTE[pattern]]["pattern"] == pattern


def test_builtin_op_types_are_unique_sourced_and_refused():
    from ascend_compat.kernel_helper import SpecError, default_spec
    from ascend_compat.kernel_helper.spec import builtin_ops

    entries = load("builtin_ops")["operators"]
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names)) and {"Add", "MatMul", "ReduceSum"} <= set(names)
    for entry in entries:
        assert entry["source"].startswith("https://") and re.fullmatch(r"[A-Z][A-Za-z0-9]*", entry["name"])
    assert builtin_ops() == frozenset(names)
    for clash in ("add_", "Add", "reduce_sum", "mat_mul"):
        try:
            default_spec(clash).validate()
        except SpecError as exc:
            assert "built-in" in str(exc)
        else:
            raise AssertionError(f"{clash} was accepted")
