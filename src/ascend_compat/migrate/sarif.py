"""``check --format sarif``: one SARIF 2.1.0 run for code-scanning tools (GitHub code scanning and the like):
the rules the findings use, the findings with ``port``'s rewrites as fixes, and the files not scanned."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Optional
from urllib.parse import quote

from ascend_compat import __version__
from ascend_compat.migrate.model import RULES, Finding, Rule, ScanResult

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"
#: Where SARIF viewers send people who want to know more about the tool.
INFORMATION_URI = "https://pypi.org/project/ascend-compat/"


def _sarif_location(path: str, base: str) -> dict:
    """An artifactLocation: relative to SRCROOT when the file lies under ``base``, else an absolute file URI."""
    full = os.path.normpath(os.path.join(base, path))
    rel = os.path.relpath(full, base) if os.path.splitdrive(full)[0] == os.path.splitdrive(base)[0] else full
    if not os.path.isabs(rel) and rel != os.pardir and not rel.startswith(os.pardir + os.sep):
        return {"uri": quote(PurePath(rel).as_posix(), safe="/"), "uriBaseId": "SRCROOT"}
    return {"uri": Path(full).as_uri()}


def _region(line: int, col: int, end_line: int, end_col: int) -> Optional[dict]:
    """A SARIF region with only valid positive values (and an end that does not precede the start)."""
    if line < 1:
        return None
    region = {"startLine": line}
    if col >= 1:
        region["startColumn"] = col
    if end_line >= line:
        region["endLine"] = end_line
        if end_col >= 1 and col >= 1 and (end_line > line or end_col >= col):
            region["endColumn"] = end_col
    return region


def _offset_to_position(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based (line, column in code points) of a character offset, given each line's starting offset."""
    lo, hi = 0, len(starts) - 1
    while lo < hi:  # last line start <= offset
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1, offset - starts[lo] + 1


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _sarif_rule(rule: Rule) -> dict:
    alt = rule.alternative
    full = f"{rule.message}. NPU alternative: {alt}." if alt else f"{rule.message}."
    handling = []
    if rule.shim_handles:
        handling.append("The ascend-compat shim handles it at runtime (`ascend-compat run`).")
    if rule.fixable:
        handling.append("`ascend-compat port` can rewrite it.")
    if not handling:
        handling.append("It needs a manual change.")
    help_text = f"{full} {' '.join(handling)} Difficulty: {rule.difficulty}."
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": help_text},
        "defaultConfiguration": {"level": rule.level},
        "properties": {
            "category": rule.category,
            "difficulty": rule.difficulty,
            "fixable": rule.fixable,
            "shim_handles": rule.shim_handles,
            "effort_days": rule.effort_days,
            "language": rule.language,
            "tags": ["ascend", "npu-migration", rule.category],
        },
    }


def _fixes(x: Finding, starts: list[int], loc: dict) -> list[dict]:
    """port's edits of one finding as a SARIF fix (character offsets turned into line/column regions)."""
    replacements = []
    for e in sorted(x.edits, key=lambda e: (e.start, e.end)):
        sl, sc = _offset_to_position(starts, e.start)
        el, ec = _offset_to_position(starts, e.end)
        replacements.append({
            "deletedRegion": {"startLine": sl, "startColumn": sc, "endLine": el, "endColumn": ec},
            "insertedContent": {"text": e.replacement},
        })
    alt = x.effective_alternative
    return [{
        "description": {"text": f"Use {alt}" if alt else "Apply the ascend-compat rewrite"},
        "artifactChanges": [{"artifactLocation": loc, "replacements": replacements}],
    }]


def _result(x: Finding, rule_index: int, base: str) -> dict:
    loc = _sarif_location(x.path, base)
    physical: dict = {"artifactLocation": loc}
    region = _region(x.line, x.col, x.end_line or x.line, x.end_col or x.col)
    if region:
        physical["region"] = region
    alt = x.effective_alternative
    return {
        "ruleId": x.code,
        "ruleIndex": rule_index,
        "level": x.effective_level,
        "message": {"text": f"{x.message} (NPU: {alt})" if alt else x.message},
        "locations": [{"physicalLocation": physical}],
        "properties": {
            "category": x.category,
            "api": x.api,
            "alternative": alt,
            "fixable": x.is_fixable,
            "shim_handles": x.rule.shim_handles,
            "difficulty": x.rule.difficulty,
            "effort_days": x.effort_days,
        },
    }


def _notifications(result: ScanResult, base: str) -> list[dict]:
    def note(level: str, text: str, path: str) -> dict:
        return {"level": level, "message": {"text": text},
                "locations": [{"physicalLocation": {"artifactLocation": _sarif_location(path, base)}}]}

    return ([note("error", f"not scanned: {f.error}", f.path) for f in result.failed]
            + [note("note", f"skipped: {f.reason}", f.path) for f in result.skipped])


def render_sarif(
    result: ScanResult, base: Optional[str] = None, texts: Optional[Mapping[str, str]] = None
) -> str:
    """One SARIF 2.1.0 run: the rules the findings use, the findings, and the files that failed.

    Paths are made relative to ``base`` (default: the working directory, which the scanner's paths are
    relative to) under the ``SRCROOT`` base id. Edits become SARIF ``fixes`` only for files whose text is in
    ``texts`` (path -> decoded text): edits are character offsets, SARIF fixes need line/column regions.
    """
    from ascend_compat.migrate.render import scanned_findings

    base = os.path.abspath(base or os.getcwd())
    data = result.to_dict()
    findings = scanned_findings(result)
    codes = sorted({x.code for x in findings})
    rule_index = {code: i for i, code in enumerate(codes)}
    starts_cache: dict[str, list[int]] = {}
    results = []
    for x in findings:
        res = _result(x, rule_index[x.code], base)
        text = texts.get(x.path) if texts is not None and x.edits else None
        if text is not None:
            if x.path not in starts_cache:
                starts_cache[x.path] = _line_starts(text)
            res["fixes"] = _fixes(x, starts_cache[x.path], _sarif_location(x.path, base))
        results.append(res)
    notifications = _notifications(result, base)
    invocation: dict = {"executionSuccessful": not result.failed}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run = {
        "tool": {
            "driver": {
                "name": "ascend-compat",
                "informationUri": INFORMATION_URI,
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_sarif_rule(RULES[c]) for c in codes],
            }
        },
        "invocations": [invocation],
        "originalUriBaseIds": {"SRCROOT": {"uri": Path(base).as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {"torch_npu": result.torch_npu, "summary": data["summary"],
                       "first_party": data["first_party"], "extensions": data["extensions"],
                       "effort": {k: data["effort"][k] for k in ("low", "high", "by_section")}},
    }
    doc = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(doc, indent=2, ensure_ascii=False)


__all__ = ["INFORMATION_URI", "SARIF_SCHEMA", "SARIF_VERSION", "render_sarif"]
