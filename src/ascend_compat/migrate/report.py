"""``ascend-compat report``: the GPU→NPU adaptation review report of the review workflow (``CodeReview_Results_
YYYY-MM-DD.md``).

Sections: 1 executive summary, 2 original code analysis (structure, every dependency, the compiled-extension
boundary), 3 bottlenecks by category (every occurrence, plan, before/after, workload, status), 4 adaptation code
list, 5 verification results, 6 adaptation guide and troubleshooting, 7 follow-up, then appendices. The report
is one document tree written as Markdown, HTML or JSON (the same content); given the same scan, changes, date,
adaptation and verification it is the same text.
"""

from __future__ import annotations

import datetime
import os
from typing import Optional

from ascend_compat import __version__
from ascend_compat.migrate import report_tail
from ascend_compat.migrate.model import Change, ScanResult
from ascend_compat.migrate.project import analyze
from ascend_compat.migrate.render import cxx_warning, md_code
from ascend_compat.migrate.report_bottlenecks import bottlenecks
from ascend_compat.migrate.report_doc import Doc
from ascend_compat.migrate.report_sections import (
    Ctx,
    code_structure,
    dependencies,
    executive_summary,
    extension_inventory,
)

REPORT_FORMATS = ("markdown", "html", "json")

SECTION_TITLES = (
    "1. Executive Summary",
    "2. Original Code Analysis",
    "3. Detailed Analysis of Migration Bottlenecks",
    "4. Adaptation Code List",
    "5. Verification Results",
    "6. Adaptation Guide",
    "7. Follow-Up Work Suggestions",
    "Appendix A. Files not scanned",
    "Appendix B. torch API inventory",
    "Appendix C. Effort model",
)


def build_document(
    result: ScanResult,
    changes: Optional[list[Change]],
    project_root: str,
    date: Optional[datetime.date] = None,
    adaptation: Optional[dict] = None,
    verification: Optional[dict] = None,
) -> Doc:
    """The report as a document tree (see :func:`build_report` for the arguments)."""
    date = date or datetime.date.today()
    root = os.path.abspath(project_root)
    ctx = Ctx(result, analyze(result), changes, root, date, adaptation, verification)
    name = os.path.basename(root) or root
    title = f"GPU to Ascend NPU Adaptation Review Report: {name}"
    doc = Doc(title)
    doc.h(1, title)
    doc.p(f"CodeReview_Results_{date.isoformat()} · ascend-compat {__version__} · target torch_npu "
          f"{result.torch_npu} · root {md_code(root)}")
    warning = cxx_warning(result)
    if warning:
        doc.p(f"⚠️ **{warning}**")
    executive_summary(doc, ctx, SECTION_TITLES[0])
    code_structure(doc, ctx, SECTION_TITLES[1])
    dependencies(doc, ctx)
    extension_inventory(doc, ctx)
    bottlenecks(doc, ctx, SECTION_TITLES[2])
    report_tail.adaptation_list(doc, ctx, SECTION_TITLES[3])
    report_tail.verification(doc, ctx, SECTION_TITLES[4])
    report_tail.guide(doc, ctx, SECTION_TITLES[5])
    report_tail.follow_up(doc, ctx, SECTION_TITLES[6])
    report_tail.appendices(doc, ctx, SECTION_TITLES[7:10])
    doc.p(f"Report generated: {date.isoformat()} · Adaptation engineer: ascend-compat {__version__} "
          "(NPU adapter reviewer) · Report version: v1.0")
    return doc


def report_data(doc: Doc, result: ScanResult) -> dict:
    """The report's JSON: the same sections and blocks as the Markdown, plus the analysis behind them."""
    data = doc.to_json()
    data["analysis"] = analyze(result).to_dict()
    data["schema_version"] = 2
    return data


def build_report(
    result: ScanResult,
    changes: Optional[list[Change]],
    project_root: str,
    date: Optional[datetime.date] = None,
    fmt: str = "markdown",
    adaptation: Optional[dict] = None,
    verification: Optional[dict] = None,
) -> str:
    """The review report as Markdown (default), self-contained HTML or JSON.

    ``changes`` is what ``port`` changes (:func:`ascend_compat.migrate.port.planned_changes`; None: port was not
    run); ``adaptation`` what :func:`ascend_compat.migrate.adaptation.write_adaptation` wrote; ``verification``
    what :func:`ascend_compat.migrate.report_verify.run_verification` measured.
    """
    if fmt not in REPORT_FORMATS:
        raise ValueError(f"unknown report format {fmt!r} (expected one of {', '.join(REPORT_FORMATS)})")
    doc = build_document(result, changes, project_root, date, adaptation, verification)
    if fmt == "json":
        import json

        return json.dumps(report_data(doc, result), indent=2, ensure_ascii=False) + "\n"
    return doc.to_html() if fmt == "html" else doc.to_markdown()


def report_filename(date: datetime.date, fmt: str = "markdown") -> str:
    """``CodeReview_Results_YYYY-MM-DD.md`` (``.html`` / ``.json`` for those formats)."""
    ext = {"html": "html", "json": "json"}.get(fmt, "md")
    return f"CodeReview_Results_{date.isoformat()}.{ext}"


__all__ = ["REPORT_FORMATS", "SECTION_TITLES", "build_document", "build_report", "report_data", "report_filename"]
