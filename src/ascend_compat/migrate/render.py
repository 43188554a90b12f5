"""``check``'s output formats: text (for people), JSON, Markdown and SARIF 2.1.0 (for code-scanning tools).

Every renderer is a pure function of the :class:`ScanResult` (plus, for SARIF, the working directory the
relative paths hang off), so two renders of one result are equal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Optional
from urllib.parse import quote

from ascend_compat import __version__
from ascend_compat._style import paint
from ascend_compat.migrate.model import LEVELS, RULES, FileScanned, Finding, Rule, ScanResult

FORMATS = ("text", "json", "markdown", "sarif")

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"
#: Where SARIF viewers send people who want to know more about the tool.
INFORMATION_URI = "https://pypi.org/project/ascend-compat/"



# --------------------------------------------------------------------------------------------- shared helpers


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_days(x: float) -> str:
    """Person-days with at most two decimals and no trailing zeros."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def handled_by(f: Finding) -> str:
    """What takes care of a finding, compactly: the shim at runtime, ``port`` in the source, or a person."""
    parts = []
    if f.rule.shim_handles:
        parts.append("shim handles")
    if f.is_fixable:
        parts.append("port fixes")
    return ", ".join(parts) if parts else "manual"


def _by_position(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda x: (x.line, x.col, x.code))


def _scanned_in_order(result: ScanResult) -> list[FileScanned]:
    """Scanned files by path, so hand-built and parallel results print alike."""
    return sorted((f for f in result.files if isinstance(f, FileScanned)), key=lambda f: f.path)


def inventory_counts(result: ScanResult) -> dict[str, dict[str, int]]:
    """Distinct torch APIs and their uses, per support status on the chosen torch_npu line."""
    out = {s: {"apis": 0, "uses": 0} for s in ("supported", "unsupported", "unknown")}
    for entry in result.api_inventory.values():
        status = entry.get("status", "unknown")
        bucket = out.setdefault(status, {"apis": 0, "uses": 0})
        bucket["apis"] += 1
        bucket["uses"] += int(entry.get("count", 0))
    return out


# ------------------------------------------------------------------------------------------------------- text


def render_text(result: ScanResult, color: bool = False) -> str:
    """Findings grouped by file as ``path:line:col: CODE message``, then a summary footer.

    ANSI colour only when ``color`` (the CLI decides: a terminal and no NO_COLOR). Plain ASCII besides the
    findings' own text, so that no console encoding chokes on it.
    """
    out: list[str] = []
    for f in _scanned_in_order(result):
        if not f.findings:
            continue
        head = f"{f.path} ({f.language}, {_plural(f.lines, 'line')}, {_plural(len(f.findings), 'finding')})"
        out.append(paint(head, "path", color))
        for x in _by_position(f.findings):
            level = x.effective_level
            out.append(
                f"{x.path}:{x.line}:{x.col}: {paint(x.code, level, color)} "
                f"{paint(level, level, color)}: {x.message}"
            )
            alt = x.effective_alternative
            hint = f"    -> {alt} [{handled_by(x)}]" if alt else f"    [{handled_by(x)}]"
            out.append(paint(hint, "dim", color))
        out.append("")
    if result.failed:
        out.append(paint(f"Not scanned ({_plural(len(result.failed), 'file')} failed):", "error", color))
        out.extend(f"  {f.path}: {f.error}" for f in result.failed)
        out.append("")
    if result.skipped:
        out.append(paint(f"Skipped ({_plural(len(result.skipped), 'file')}):", "note", color))
        out.extend(f"  {f.path}: {f.reason}" for f in result.skipped)
        out.append("")
    out.extend(_text_summary(result, color))
    return "\n".join(out) + "\n"


def _text_summary(result: ScanResult, color: bool) -> list[str]:
    s = result.to_dict()["summary"]
    by_level = ", ".join(
        paint(f"{s['by_level'][lv]} {lv}", lv, color and s["by_level"][lv] > 0) for lv in reversed(LEVELS)
    )
    cats = ", ".join(f"{c} {n}" for c, n in s["by_category"].items() if n) or "none"
    manual = sum(1 for x in result.findings if not x.is_fixable and not x.rule.shim_handles)
    inv = inventory_counts(result)
    n_apis = sum(b["apis"] for b in inv.values())
    n_uses = sum(b["uses"] for b in inv.values())
    inv_line = (
        f"{n_apis} distinct / {n_uses} uses on torch_npu {result.torch_npu}: "
        + ", ".join(f"{b['apis']} {st}" for st, b in inv.items())
    )
    unsupported = sorted(
        (api for api, e in result.api_inventory.items() if e.get("status") == "unsupported"),
        key=lambda a: (-int(result.api_inventory[a].get("count", 0)), a),
    )
    rows = [
        ("files", f"{s['scanned']} scanned, {s['failed']} failed, {s['skipped']} skipped "
                  f"({s['files']} total), {_plural(s['lines'], 'line')}"),
        ("findings", f"{s['findings']}: {by_level}"),
        ("categories", cats),
        ("port", f"{s['fixable']} auto-fixable (`ascend-compat port`)"),
        ("shim", f"{s['shim_handles']} handled at runtime (`ascend-compat run`)"),
        ("manual", f"{manual} need a person; estimated effort {format_days(s['effort_range'][0])}-"
                   f"{format_days(s['effort_range'][1])} person-days (per unit of work; `ascend-compat report`)"),
        ("torch APIs", inv_line),
    ]
    if unsupported:
        more = f" (+{len(unsupported) - 5} more)" if len(unsupported) > 5 else ""
        rows.append(("unsupported", ", ".join(unsupported[:5]) + more))
    rows.append(("elapsed", f"{result.elapsed_s:.2f} s"))
    width = max(len(k) for k, _ in rows)
    title = paint("Summary", "path", color)
    if result.failed:
        title += paint(" (incomplete: some files could not be scanned)", "error", color)
    elif not result.findings:
        title += paint(" (no CUDA-specific code found)", "ok", color)
    return [title] + [f"  {k.ljust(width)}  {v}" for k, v in rows]


# ------------------------------------------------------------------------------------------------------- json


def render_json(result: ScanResult) -> str:
    """The result's :meth:`~ScanResult.to_dict`, as indented JSON."""
    return json.dumps(result.to_dict(), indent=2, sort_keys=False)


# --------------------------------------------------------------------------------------------------- markdown


def md_cell(text: object) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped (GFM honours ``\\|`` even in code)."""
    return str(text).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def md_code(text: str) -> str:
    """``text`` as an inline code span, with a fence longer than any run of backticks inside it."""
    text = text.replace("\r", " ").replace("\n", " ")
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table; cells must already be escaped with :func:`md_cell`."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out.extend("| " + " | ".join(r) + " |" for r in rows)
    return out


def md_code_cell(text: str) -> str:
    """An inline code span for a table cell (empty text gives an empty cell)."""
    return md_cell(md_code(text)) if text else ""


def render_markdown(result: ScanResult) -> str:
    """A summary table and a findings table (plus the files that were not scanned)."""
    s = result.to_dict()["summary"]
    inv = inventory_counts(result)
    manual = sum(1 for x in result.findings if not x.is_fixable and not x.rule.shim_handles)
    out = [
        "# ascend-compat check",
        "",
        f"Roots: {', '.join(md_code(r) for r in result.roots) or '(none)'}; torch APIs classified against "
        f"torch_npu {result.torch_npu}.",
        "",
        "## Summary",
        "",
    ]
    rows = [
        ["Files", f"{s['scanned']} scanned, {s['failed']} failed, {s['skipped']} skipped"],
        ["Lines", str(s["lines"])],
        ["Findings", str(s["findings"])],
        *[[f"Level: {lv}", str(s["by_level"][lv])] for lv in reversed(LEVELS)],
        *[[f"Category: {c}", str(n)] for c, n in s["by_category"].items() if n],
        ["Auto-fixable (`port`)", str(s["fixable"])],
        ["Handled by the shim", str(s["shim_handles"])],
        ["Manual", str(manual)],
        ["Effort (person-days)", f"{format_days(s['effort_range'][0])}-{format_days(s['effort_range'][1])}"],
        *[[f"torch APIs: {st}", f"{b['apis']} ({b['uses']} uses)"] for st, b in inv.items()],
        ["Elapsed", f"{result.elapsed_s:.2f} s"],
    ]
    out.extend(md_table(["Metric", "Value"], [[md_cell(a), md_cell(b)] for a, b in rows]))
    out += ["", "## Findings", ""]
    findings = [x for f in _scanned_in_order(result) for x in _by_position(f.findings)]
    if findings:
        out.extend(md_table(
            ["Location", "Code", "Level", "Category", "Message", "NPU alternative", "Handled by"],
            [
                [
                    md_code_cell(f"{x.path}:{x.line}:{x.col}"), x.code, x.effective_level, x.category,
                    md_cell(x.message), md_cell(x.effective_alternative), handled_by(x),
                ]
                for x in findings
            ],
        ))
    else:
        out.append("No findings.")
    problems = [[md_code_cell(f.path), "failed", md_cell(f.error)] for f in result.failed]
    problems += [[md_code_cell(f.path), "skipped", md_cell(f.reason)] for f in result.skipped]
    if problems:
        out += ["", "## Files not scanned", ""]
        out.extend(md_table(["File", "Status", "Reason"], problems))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------------ SARIF


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


def render_sarif(
    result: ScanResult, base: Optional[str] = None, texts: Optional[Mapping[str, str]] = None
) -> str:
    """One SARIF 2.1.0 run: the rules the findings use, the findings, and the files that failed.

    Paths are made relative to ``base`` (default: the working directory, which the scanner's paths are
    relative to) under the ``SRCROOT`` base id. Edits become SARIF ``fixes`` only for files whose text is in
    ``texts`` (path -> decoded text): edits are character offsets, SARIF fixes need line/column regions.
    """
    base = os.path.abspath(base or os.getcwd())
    data = result.to_dict()
    findings = [x for f in _scanned_in_order(result) for x in _by_position(f.findings)]
    codes = sorted({x.code for x in findings})
    rule_index = {code: i for i, code in enumerate(codes)}
    starts_cache: dict[str, list[int]] = {}
    results = []
    for x in findings:
        loc = _sarif_location(x.path, base)
        physical: dict = {"artifactLocation": loc}
        region = _region(x.line, x.col, x.end_line or x.line, x.end_col or x.col)
        if region:
            physical["region"] = region
        alt = x.effective_alternative
        res: dict = {
            "ruleId": x.code,
            "ruleIndex": rule_index[x.code],
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
        text = texts.get(x.path) if texts is not None and x.edits else None
        if text is not None:
            starts = starts_cache.get(x.path)
            if starts is None:
                starts = starts_cache[x.path] = _line_starts(text)
            replacements = []
            for e in sorted(x.edits, key=lambda e: (e.start, e.end)):
                sl, sc = _offset_to_position(starts, e.start)
                el, ec = _offset_to_position(starts, e.end)
                replacements.append({
                    "deletedRegion": {"startLine": sl, "startColumn": sc, "endLine": el, "endColumn": ec},
                    "insertedContent": {"text": e.replacement},
                })
            res["fixes"] = [{
                "description": {"text": f"Use {alt}" if alt else "Apply the ascend-compat rewrite"},
                "artifactChanges": [{"artifactLocation": loc, "replacements": replacements}],
            }]
        results.append(res)
    notifications = [
        {
            "level": "error",
            "message": {"text": f"not scanned: {f.error}"},
            "locations": [{"physicalLocation": {"artifactLocation": _sarif_location(f.path, base)}}],
        }
        for f in result.failed
    ] + [
        {
            "level": "note",
            "message": {"text": f"skipped: {f.reason}"},
            "locations": [{"physicalLocation": {"artifactLocation": _sarif_location(f.path, base)}}],
        }
        for f in result.skipped
    ]
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


# --------------------------------------------------------------------------------------------------- dispatch


def render(result: ScanResult, fmt: str, color: bool = False) -> str:
    """Render ``result`` as ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "text":
        return render_text(result, color)
    if fmt == "json":
        return render_json(result)
    if fmt == "markdown":
        return render_markdown(result)
    if fmt == "sarif":
        return render_sarif(result)
    raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
