"""``ascend-compat explain [LOGFILE|-] [--json]``: find and explain every error code in a traceback or log."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers
    from ascend_compat.doctor.errors import Finding, Omitted

EXIT_UNEXPLAINED = 1  # no code found, or a code that is not in the table
EXIT_USAGE = 2  # the log cannot be read


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("explain", help="find every CANN/torch_npu error code in a log and explain it, root cause first")
    p.add_argument("logfile", nargs="?", default="-", metavar="LOGFILE",
                   help="log or traceback to read; '-' or nothing reads standard input")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def _read(path: str) -> tuple[str, str]:
    if path == "-":
        if sys.stdin.isatty():
            print("reading the log from standard input (end with Ctrl-D)...", file=sys.stderr)
        return sys.stdin.buffer.read().decode("utf-8", errors="replace"), "<stdin>"
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace"), path


def render(findings: list[Finding], source: str, color: bool, omitted: Optional[Omitted] = None) -> str:
    from ascend_compat._style import paint
    from ascend_compat.cli.error import format_explanation, format_header
    from ascend_compat.doctor import errors

    if not findings:
        return (f"No CANN / torch_npu error code found in {source}.\n"
                "Looked for 'error code is N' lines, E-codes (EZ9999, EL0004 ...) and ERR codes (ERR00100 ...).\n")
    out = [f"{len(findings)} error code(s) in {source}, most likely root cause first:", ""]
    for i, f in enumerate(findings, 1):
        exp = f.explanation.to_dict() if f.explanation else None
        where = f"line {f.line}" + (f" (+{f.count - 1} more)" if f.count > 1 else "")
        out.append(f"{i}. {format_header(f.code, exp, f.family, f.component, color)}  {where}")
        if f.api:
            out.append(f"   failing call: {f.api}")
        out.append(f"   > {f.text}")
        if exp:
            out.extend(format_explanation(exp, color, indent="   "))
        elif f.family:
            out.append(f"   unknown code; family (from its {'range' if f.code.isdigit() else 'prefix'}): "
                       f"{errors.families()[f.family]}")
        out.append("")
    unknown = [f.code for f in findings if not f.known]
    if unknown:
        out.append(paint(f"{len(unknown)} code(s) not in ascend-compat's table: {', '.join(unknown)}", "warn", color))
    if omitted is not None and omitted.codes:
        more = f"{omitted.codes}" if omitted.exact else f"at least {omitted.codes}"
        out.append(paint(f"... and {more} more distinct unknown code(s) ({omitted.occurrences} occurrence(s)) not "
                         f"listed: only the first {errors.MAX_UNKNOWN} unknown codes are shown", "warn", color))
    return "\n".join(out).rstrip() + "\n"


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import use_color
    from ascend_compat.doctor import errors

    try:
        text, source = _read(args.logfile)
    except OSError as exc:
        print(f"ascend-compat explain: cannot read {args.logfile}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    findings, omitted = errors.explain_log(text)
    del text
    if args.json:
        print(json.dumps(errors.report(findings, source, omitted), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(render(findings, source, use_color(sys.stdout), omitted))
    if not findings or any(not f.known for f in findings):
        return EXIT_UNEXPLAINED
    return 0
