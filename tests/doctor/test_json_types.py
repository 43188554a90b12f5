"""The TypedDicts that describe the JSON documents match what ``to_dict`` really returns (mypy checks the literal
dicts; these check the ones built from data, where a type checker cannot see the keys)."""

from __future__ import annotations

from typing import get_type_hints

from ascend_compat.doctor.error_codes import ExplanationDict, all_codes, describe, lookup
from ascend_compat.doctor.errors import FindingDict, LogReport, explain_log, report


def test_every_explanation_has_the_declared_keys_and_no_other():
    declared = set(get_type_hints(ExplanationDict))
    required = set(ExplanationDict.__required_keys__)
    assert required == {"code", "family", "component", "meaning", "cause", "fix", "source", "curated"}
    seen: set[str] = set()
    for code in all_codes():
        exp = lookup(code)
        assert exp is not None, code
        keys = set(exp.to_dict())
        assert required <= keys, (code, required - keys)
        assert keys <= declared, (code, keys - declared)
        seen |= keys
    # The optional keys are all used somewhere in the table (a stale declaration would fail here).
    assert seen == declared


def test_explain_report_has_the_declared_keys():
    findings, omitted = explain_log("RuntimeError: NPU function error: aclrtMalloc, error code is 207001\n")
    doc = report(findings, "log.txt", omitted)
    assert set(doc) == set(get_type_hints(LogReport))
    assert [f["code"] for f in doc["findings"]] == ["207001"]
    assert set(doc["findings"][0]) == set(get_type_hints(FindingDict))
    assert describe("207001")["explanation"] == doc["findings"][0]["explanation"]
