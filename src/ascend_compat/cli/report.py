"""``ascend-compat report PATH [--format markdown|html] [--output FILE|DIR] [--json]``."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    from ascend_compat.cli.check import add_common

    p = sub.add_parser("report", help="write the GPU→NPU review report (CodeReview_Results_YYYY-MM-DD.md)")
    add_common(p)
    p.add_argument("--format", choices=("markdown", "html"), default="markdown")
    p.add_argument("--output", "-o", metavar="FILE|DIR", help="report file, or the directory to put it in (default: .)")
    p.add_argument("--json", action="store_true", help="print the data behind the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli.check import run_check
    from ascend_compat.migrate.port import planned_changes, write_atomic
    from ascend_compat.migrate.report import build_report, report_filename

    args.paths = args.paths or ["."]  # the repository you are in
    try:
        result = run_check(args)
    except ValueError as exc:
        print(f"ascend-compat report: {exc}", file=sys.stderr)
        return 2
    changes = planned_changes(result)
    today = datetime.date.today()
    root = args.paths[0] if os.path.isdir(args.paths[0]) else os.path.dirname(os.path.abspath(args.paths[0]))
    text = build_report(result, changes, root, today, args.format)
    target = args.output or "."
    # A directory (existing, or named with a trailing slash or without a file suffix) gets the dated file name.
    if os.path.isdir(target) or target.endswith(("/", os.sep)) or not os.path.splitext(target)[1]:
        os.makedirs(target, exist_ok=True)
        target = os.path.join(target, report_filename(today, args.format))
    write_atomic(target, text)
    if args.json:
        data = result.to_dict()
        data["changes"] = [c.to_dict() for c in changes]
        data["report"] = target
        print(json.dumps(data, indent=2))
    else:
        print(f"wrote {target}")
    # The report is the product here: findings do not fail the command, an incomplete scan does.
    return 3 if result.failed else 0
