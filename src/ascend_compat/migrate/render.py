"""``check``'s output formats: text (for people), JSON, Markdown and SARIF 2.1.0 (for code-scanning tools).

Every renderer is a pure function of the :class:`ScanResult` (plus, for SARIF, the working directory the
relative paths hang off), so two renders of one result are equal.
"""

from __future__ import annotations

import json
import os

from ascend_compat._style import paint
from ascend_compat.migrate.model import LEVELS, FileScanned, FileSkipped, Finding, ScanResult
from ascend_compat.migrate.sarif import INFORMATION_URI, SARIF_SCHEMA, SARIF_VERSION, render_sarif

FORMATS = ("text", "json", "markdown", "sarif")




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


def cxx_not_analysed(result: ScanResult) -> list[FileSkipped]:
    """The C/C++/CUDA files left unparsed because tree-sitter (or its CUDA grammar) is missing or broken."""
    from ascend_compat.migrate.cxx import SKIP_REASON

    return [f for f in result.skipped if f.reason == SKIP_REASON]


def cxx_warning(result: ScanResult) -> str:
    """One loud sentence when C/C++/CUDA files went unparsed ("" otherwise): kernels, extension exports and
    their effort are then missing from every figure."""
    missing = cxx_not_analysed(result)
    if not missing:
        return ""
    from ascend_compat.migrate.cxx import SKIP_REASON

    return (f"INCOMPLETE: {_plural(len(missing), 'C/C++/CUDA file')} NOT analysed, so every kernel, extension "
            f"export and their effort are missing from this result. {SKIP_REASON.split(': ', 1)[-1]}")


def scanned_findings(result: ScanResult) -> list[Finding]:
    """Every finding, by file path then position."""
    return [x for f in _scanned_in_order(result) for x in _by_position(f.findings)]


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
    warning = cxx_warning(result)
    if warning:
        out += [paint(warning, "error", color), ""]
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
        folders = sum(f.path.endswith(("/", os.sep)) for f in result.failed)  # a folder that could not be listed
        files = len(result.failed) - folders
        what = [f"{_plural(files, 'file')} failed"] if files else []
        what += [f"{_plural(folders, 'folder')} not listed"] if folders else []
        out.append(paint(f"Not scanned ({', '.join(what)}):", "error", color))
        out.extend(f"  {f.path}: {f.error}" for f in result.failed)
        out.append("")
    if result.skipped:
        unparsed = cxx_not_analysed(result)
        out.append(paint(f"Skipped ({_plural(len(result.skipped), 'file')}):", "note", color))
        out.extend(f"  {f.path}: {f.reason}" for f in result.skipped if f not in unparsed)
        if unparsed:  # one reason, said once (it is in the banner above)
            out.append("  C/C++/CUDA not analysed: " + ", ".join(f.path for f in unparsed))
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
    elif cxx_not_analysed(result):
        title += paint(" (incomplete: C/C++/CUDA files not analysed, see the top)", "error", color)
    elif not result.findings:
        title += paint(" (no CUDA-specific code found)", "ok", color)
    return [title] + [f"  {k.ljust(width)}  {v}" for k, v in rows]


# ------------------------------------------------------------------------------------------------------- json


def render_json(result: ScanResult) -> str:
    """The result's :meth:`~ScanResult.to_dict`, as indented JSON (with ``cxx_not_analysed`` when C/C++/CUDA
    files could not be parsed)."""
    data = result.to_dict()
    unparsed = cxx_not_analysed(result)
    if unparsed:
        data["cxx_not_analysed"] = {"files": [f.path for f in unparsed], "message": cxx_warning(result)}
    return json.dumps(data, indent=2, sort_keys=False)


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
        *([f"> **{cxx_warning(result)}**", ""] if cxx_not_analysed(result) else []),
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
    findings = scanned_findings(result)
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


__all__ = ["FORMATS", "INFORMATION_URI", "SARIF_SCHEMA", "SARIF_VERSION", "cxx_not_analysed", "cxx_warning",
           "format_days", "handled_by", "inventory_counts", "md_cell", "md_code", "md_code_cell", "md_table", "render",
           "render_json", "render_markdown", "render_sarif", "render_text", "scanned_findings"]
