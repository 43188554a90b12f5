"""``ascend-compat audit [--torch-npu LINE] [--json] [--simulate npu] script.py [args...]``: every aten op a
script used, and its status on the NPU."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING

from ascend_compat import settings

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "audit",
        help="run a script once and list every aten op it used with its NPU status (native, falls back, ...)",
        description="Run a script (like `ascend-compat run`) under an op recorder, then classify every aten "
        "operator it used against the published torch_npu support lists and the simulated chip's limits.",
    )
    p.add_argument("--torch-npu", default=None, metavar="LINE",
                   help="torch_npu line whose support lists to use (2.1, 2.6, 2.7, 2.8; default: newest)")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout (script output to stderr)")
    p.add_argument("--simulate", choices=["npu"], help="run on the simulated NPU (sets ASCEND_COMPAT_SIMULATE)")
    p.add_argument("--chip", help="chip profile for dtype limits (910B, 910B4, 310P; with --simulate: the chip)")
    p.add_argument("--backend", help="target backend for the shim (npu, cpu, ...); default: detected")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a library module instead of a script")
    p.add_argument("target", nargs="?", help="script path (when -m is not given)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import use_color
    from ascend_compat.migrate import apidb

    if args.module is None and args.target is None:
        print("ascend-compat audit: give a script path or -m MODULE", file=sys.stderr)
        return 2
    try:
        line = apidb.normalize_line(args.torch_npu) if args.torch_npu else apidb.DEFAULT_LINE
    except ValueError as exc:
        print(f"ascend-compat audit: {exc}", file=sys.stderr)
        return 2
    from ascend_compat.simulate import _state

    if args.chip and args.chip not in _state.chip_profiles():
        print(f"ascend-compat audit: unknown chip {args.chip!r}; known: {', '.join(sorted(_state.chip_profiles()))}",
              file=sys.stderr)
        return 2
    if args.simulate:
        os.environ[settings.SIMULATE.name] = args.simulate
        if args.chip:
            os.environ[settings.SIM_CHIP.name] = args.chip
    from ascend_compat import runner
    from ascend_compat.doctor.audit import OpRecorder, report_from_recorder

    problem = runner.script_problem(args.target) if args.module is None else None
    if problem is not None:  # nothing ran: an error, not a report of zero operators
        print(f"ascend-compat audit: {problem[0]}", file=sys.stderr)
        return problem[1]
    try:
        runner._prepare(args.backend, False)
    except Exception as exc:  # bad chip name, broken simulator: a clear message, not a traceback
        print(f"ascend-compat audit: cannot prepare the run: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    # With --json the report owns stdout; the script's own prints go to stderr.
    redirect = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    with redirect, OpRecorder() as rec:
        code = runner._run(args.target, args.module, list(args.args))
    report = report_from_recorder(rec, line=line, chip=args.chip)
    if args.json:
        data = {**report.to_dict(), "script_exit_code": code}
        print(json.dumps(data, indent=2), file=out)
    else:
        note = apidb.line_note(args.torch_npu) if args.torch_npu else None
        if note:
            print(f"note: {note}", file=out)
        print(report.format(color=use_color(out)), file=out)
        if code:
            print(f"(the script exited with code {code}: only the operators it reached are listed)", file=out)
    return code
