"""``ascend-compat report PATH [--format markdown|html|json] [--output FILE|DIR] [--verify] [--json]``."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers

#: Exit code when the scan is incomplete (files failed, or C/C++ could not be parsed).
EXIT_INCOMPLETE = 3


def add_parser(sub: Subparsers) -> None:
    from ascend_compat.cli.check import add_common

    p = sub.add_parser("report", help="write the GPU→NPU review report (CodeReview_Results_YYYY-MM-DD.md) and the "
                       "adaptation folder next to it")
    add_common(p)
    p.add_argument("--format", choices=("markdown", "html", "json"), default="markdown")
    p.add_argument("--output", "-o", metavar="FILE|DIR", help="report file, or the directory to put it in (default: .)")
    p.add_argument("--json", action="store_true", help="print the report's content and data as JSON on stdout")
    p.add_argument("--adapt-dir", metavar="DIR",
                   help="adaptation folder (default: ascend_adaptation next to the report); never over your files")
    p.add_argument("--no-adapt", action="store_true", help="do not write the adaptation folder")
    p.add_argument("--verify", action="store_true",
                   help="on the NPU (simulated where there is none): import every module, compare the operators "
                   "the code uses and the models it builds with the CPU, run the tests")
    p.add_argument("--budget", type=float, default=600.0, metavar="SECONDS",
                   help="time budget of --verify for imports, precision and tests together (default 600)")
    p.add_argument("--model", metavar="MODULE:FACTORY",
                   help="with --verify: also compare this model (a factory returning it, or (model, inputs)) on the "
                   "NPU and CPU")
    p.add_argument("--no-tests", action="store_true", help="with --verify: do not run the test suite")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="write the report even when C/C++/CUDA files cannot be parsed (tree-sitter missing); the "
                   "report then says so at the top, and the exit code is still 3")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=main)


def _target(args: argparse.Namespace, today: datetime.date) -> str:
    from ascend_compat.migrate.report import report_filename

    target = args.output or "."
    # A directory (existing, or named with a trailing slash or without a file suffix) gets the dated file name.
    if os.path.isdir(target) or target.endswith(("/", os.sep)) or not os.path.splitext(target)[1]:
        target = os.path.join(target, report_filename(today, args.format))
    return target


def _parser_missing(result: Any) -> bool:
    from ascend_compat.migrate.render import cxx_not_analysed

    return bool(cxx_not_analysed(result))


def main(args: argparse.Namespace) -> int:
    from ascend_compat import _atomic
    from ascend_compat.cli.check import run_check
    from ascend_compat.migrate.adaptation import write_text
    from ascend_compat.migrate.port import planned_changes
    from ascend_compat.migrate.project import analyze
    from ascend_compat.migrate.report import build_document, report_data

    if args.budget <= 0:
        print("ascend-compat report: --budget must be positive", file=sys.stderr)
        return 2
    args.paths = args.paths or ["."]  # the repository you are in
    for p in args.paths:
        if not os.path.exists(p):
            print(f"ascend-compat report: no such file or directory: {p}", file=sys.stderr)
            return 2
    today = datetime.date.today()
    target = _target(args, today)
    try:  # a FIFO, a directory, a read-only file: refused before the scan, the adaptation and --verify
        _atomic.check_target(target)
    except OSError as exc:
        print(f"ascend-compat report: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        result = run_check(args)
    except ValueError as exc:
        print(f"ascend-compat report: {exc}", file=sys.stderr)
        return 2
    from ascend_compat.cli._common import scanned_file_at

    clash = scanned_file_at(target, result.files)
    if clash:
        print(f"ascend-compat report: {target} is {clash}, a file this report scanned: not replacing it with the "
              "report", file=sys.stderr)
        return 2
    if _parser_missing(result):
        from ascend_compat.migrate.render import cxx_warning

        # A report without the kernels and extensions would understate the port: refuse unless asked for.
        print(f"ascend-compat report: {cxx_warning(result)}" + ("" if args.allow_incomplete else
              " No report written; pass --allow-incomplete to write one without them."), file=sys.stderr)
        if not args.allow_incomplete:
            return EXIT_INCOMPLETE
    analysis = analyze(result)
    root = analysis.project.root
    changes = planned_changes(result)
    adaptation = None
    if not args.no_adapt:
        adaptation = _adapt(args, target, result, analysis, root)
        if adaptation is None:
            return 2
    verification = None
    if args.verify:
        from ascend_compat.migrate.report_precision import op_groups
        from ascend_compat.migrate.report_verify import run_verification

        verification = run_verification(root, sorted(analysis.project.packages), args.budget, args.model,
                                         not args.no_tests, op_groups(result.api_inventory))
    doc = build_document(result, changes, root, today, adaptation, verification)
    data = report_data(doc, result)
    text = {"html": doc.to_html, "markdown": doc.to_markdown}.get(args.format, lambda: json.dumps(
        data, indent=2, ensure_ascii=False) + "\n")()
    try:
        write_text(target, text)
    except OSError as exc:  # changed since the check above, or a full disk
        print(f"ascend-compat report: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.json:
        data["report"] = target
        data["summary"] = result.to_dict()["summary"]
        data["changes"] = [c.to_dict() for c in changes]
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _say_written(target, adaptation)
    # The report is the product here: findings do not fail the command, an incomplete scan does.
    return EXIT_INCOMPLETE if result.failed or _parser_missing(result) else 0


def _adapt(args: argparse.Namespace, target: str, result: Any, analysis: Any, root: str) -> Optional[dict[str, Any]]:
    """Write the adaptation folder (next to the report unless ``--adapt-dir``); None after saying why it failed."""
    from ascend_compat.migrate.adaptation import FOLDER, AdaptationError, write_adaptation

    folder = args.adapt_dir or os.path.join(os.path.dirname(os.path.abspath(target)), FOLDER)
    try:
        return dict(write_adaptation(result, analysis, root, folder).to_dict())
    except AdaptationError as exc:
        print(f"ascend-compat report: {exc}", file=sys.stderr)
    except OSError as exc:  # a full disk, a folder you may not write in
        print(f"ascend-compat report: cannot write {folder}: {exc.strerror or exc}", file=sys.stderr)
    return None


def _say_written(target: str, adaptation: Optional[dict[str, Any]]) -> None:
    print(f"wrote {target}" + (f" and {adaptation['folder']}" if adaptation else ""))
    if adaptation and adaptation.get("kept"):
        print(f"kept your files in {adaptation['folder']}: {', '.join(adaptation['kept'])}")
