"""``ascend-compat check PATH... [--format text|json|sarif|markdown] [--fail-on LEVEL]``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers
    from ascend_compat.migrate.model import ScanResult

FORMATS = ("text", "json", "sarif", "markdown")
#: Exit codes: findings at or above --fail-on, and files that could not be scanned (the scan is incomplete).
EXIT_FINDINGS = 1
EXIT_INCOMPLETE = 3


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="files and directories (git-aware)")
    p.add_argument("--torch-npu", default=None, metavar="LINE",
                   help="torch_npu line to classify torch APIs against (2.1, 2.6, 2.7, 2.8; default: newest)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--no-git", action="store_true", help="walk directories instead of asking git for the file list")


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("check", help="scan code for CUDA-only constructs and NPU support (the migration effort)")
    add_common(p)
    p.add_argument("--format", "-f", choices=FORMATS, default="text")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--fail-on", choices=("note", "warning", "error", "never"), default="error",
                   help=f"exit {EXIT_FINDINGS} when a finding of this level or higher exists (default: error)")
    p.add_argument("--select", metavar="CODES", help="only these rule codes or prefixes, comma-separated (AC1,AC301)")
    p.add_argument("--ignore", metavar="CODES", help="leave out these rule codes or prefixes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list-rules", action="store_true", help="print every rule (code, category, level, fix) and exit")
    p.set_defaults(func=main)


def _codes(spec: str | None) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in spec.split(",") if c.strip()) if spec else ()


def _unknown_codes(codes: tuple[str, ...]) -> list[str]:
    """The codes or prefixes among ``codes`` that no registered rule starts with."""
    if not codes:
        return []
    from ascend_compat.migrate import scan  # noqa: F401  (registers every language's rules)
    from ascend_compat.migrate.model import RULES

    return [c for c in codes if not any(code.startswith(c) for code in RULES)]


def exit_code(result: Any, fail_on: str) -> int:
    from ascend_compat.migrate.model import level_rank
    from ascend_compat.migrate.render import cxx_not_analysed

    if result.failed or cxx_not_analysed(result):  # unparsed C/C++/CUDA hides kernels: never a clean pass
        return EXIT_INCOMPLETE
    if fail_on != "never" and any(level_rank(f.effective_level) >= level_rank(fail_on) for f in result.findings):
        return EXIT_FINDINGS
    return 0


def run_check(args: argparse.Namespace) -> ScanResult:
    from ascend_compat.cli._common import progress_bar
    from ascend_compat.migrate import apidb
    from ascend_compat.migrate.model import FileScanned
    from ascend_compat.migrate.scan import check

    line = apidb.normalize_line(args.torch_npu) if args.torch_npu else apidb.DEFAULT_LINE
    missing = [p for p in args.paths if not os.path.lexists(p)]
    if missing:  # a usage error (exit 2), not an incomplete scan (3)
        raise ValueError(f"no such file or directory: {', '.join(missing)}")
    select, ignore = _codes(getattr(args, "select", None)), _codes(getattr(args, "ignore", None))
    unknown = _unknown_codes(select + ignore)
    if unknown:  # a typo would select nothing and pass, or ignore nothing: refused before the scan
        raise ValueError(f"unknown rule code or prefix {', '.join(unknown)} (see --list-rules)")
    many = any(os.path.isdir(p) for p in args.paths)
    progress = progress_bar(many and not getattr(args, "no_progress", False))
    result = check(args.paths, torch_npu=line, jobs=args.jobs, progress=progress, use_git=not args.no_git)
    if select or ignore:
        for f in result.files:
            if isinstance(f, FileScanned):
                f.findings = [
                    x for x in f.findings
                    if (not select or x.code.startswith(select)) and not (ignore and x.code.startswith(ignore))
                ]
    return result


def list_rules(as_json: bool) -> int:
    import json

    from ascend_compat.migrate import scan  # noqa: F401  (registers every language's rules)
    from ascend_compat.migrate.model import RULES

    rules = [RULES[c] for c in sorted(RULES)]
    if as_json:
        print(json.dumps([r.__dict__ for r in rules], indent=2))
        return 0
    for r in rules:
        how = ", ".join(x for x, on in (("port fixes", r.fixable), ("shim handles", r.shim_handles)) if on) or "manual"
        print(f"{r.code}  {r.language:6}  {r.category:13}  {r.level:7}  {r.name}: {r.message} [{how}]")
    return 0


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import use_color
    from ascend_compat.migrate.render import render

    if args.list_rules:
        return list_rules(args.json or args.format == "json")
    if not args.paths:
        print("ascend-compat check: give at least one PATH (or --list-rules)", file=sys.stderr)
        return 2
    try:
        result = run_check(args)
    except ValueError as exc:
        print(f"ascend-compat check: {exc}", file=sys.stderr)
        return 2
    fmt = "json" if args.json else args.format
    from ascend_compat.migrate.render import cxx_warning

    if cxx_warning(result) and (fmt != "text" or args.output):  # the text output starts with it already
        print(f"ascend-compat check: {cxx_warning(result)}", file=sys.stderr)
    if result.own_output_skipped:  # its files are in no count: say why, or the numbers puzzle
        print(f"ascend-compat check: left out ascend-compat's own output (report's adaptation folder; its files "
              f"are in no count): {', '.join(result.own_output_skipped)}", file=sys.stderr)
    if fmt == "sarif":
        # SARIF carries port's fixes as text replacements, which need the files' text.
        from ascend_compat.migrate.port import texts_with_fixes
        from ascend_compat.migrate.render import render_sarif

        text = render_sarif(result, texts=texts_with_fixes(result))
    else:
        text = render(result, fmt, fmt == "text" and not args.output and use_color(sys.stdout))
    if args.output:
        from ascend_compat.cli._common import scanned_file_at
        from ascend_compat.migrate.atomic import write_atomic

        clash = scanned_file_at(args.output, result.files)
        if clash:
            print(f"ascend-compat check: -o {args.output} is {clash}, a file this check scanned: not replacing it "
                  "with the report", file=sys.stderr)
            return 2

        try:
            write_atomic(args.output, text if text.endswith("\n") else text + "\n")
        except OSError as exc:  # -o naming a directory, a device, or an unwritable place
            print(f"ascend-compat check: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return exit_code(result, args.fail_on)
