"""``ascend-compat doctor [--full] [--json] [--strict] [--env-block]``: is this machine ready for torch_npu?"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ascend_compat._style import paint
from ascend_compat.doctor.result import STATUSES, Check

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers
    from ascend_compat.doctor.environment import Environment

SCHEMA_VERSION = 1
#: Exit codes: an error (or, with --strict, a warning) was found.
EXIT_PROBLEMS = 1


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("doctor", help="check torch, torch_npu, CANN, driver and environment; say what to fix")
    p.add_argument("--full", action="store_true",
                   help="also load the shared libraries (in a child process) and run `npu-smi info` (slower)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help=f"exit {EXIT_PROBLEMS} on warnings too")
    p.add_argument("--env-block", action="store_true", help="print only the environment block for a bug report")
    p.add_argument("--root", metavar="DIR", default="/",
                   help="look for /usr/local/Ascend/... under DIR (a mounted image or container root)")
    p.set_defaults(func=main)


def exit_code(checks: list[Check], strict: bool) -> int:
    bad = {"error", "warn"} if strict else {"error"}
    return EXIT_PROBLEMS if any(c.status in bad for c in checks) else 0


def render(checks: list[Check], env: Environment, color: bool) -> str:
    """The text report: one line per check, the why and fix under each problem, then the environment block."""
    from ascend_compat.doctor.environment import env_block

    width = max((len(c.title) for c in checks), default=10)
    lines = []
    for c in checks:
        tag = paint(f"{c.status.upper():5}", c.status, color)
        lines.append(f"{tag} {c.title:<{width}}  {c.found}")
        if c.status in ("warn", "error"):
            if c.why:
                lines.append(f"{'':6}{'':<{width}}  why: {c.why}")
            if c.fix:
                lines.append(f"{'':6}{'':<{width}}  fix: {c.fix}")
    counts = {s: sum(c.status == s for c in checks) for s in STATUSES}
    lines.append("")
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    lines.append("")
    lines.append("Environment (paste into bug reports):")
    lines.append("```text")
    lines.append(env_block(env))
    lines.append("```")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import use_color
    from ascend_compat.doctor.checks import run_checks
    from ascend_compat.doctor.environment import env_block, environment
    from ascend_compat.doctor.probe import Probe

    if not Path(args.root).is_dir():  # else every check reports "not installed" under a root that is not there
        print(f"ascend-compat doctor: --root {args.root}: not a directory", file=sys.stderr)
        return 2
    probe = Probe(root=Path(args.root))
    env = environment(probe)
    if args.env_block:
        print("```text\n" + env_block(env) + "\n```")
        return 0
    checks = run_checks(probe, full=args.full)
    code = exit_code(checks, args.strict)
    if args.json:
        summary = {s: sum(c.status == s for c in checks) for s in STATUSES}
        doc = {
            "schema_version": SCHEMA_VERSION,
            "full": bool(args.full),
            "exit_code": code,
            "summary": summary,
            "checks": [c.to_dict() for c in checks],
            "environment": env,
        }
        print(json.dumps(doc, indent=2))
    else:
        print(render(checks, env, use_color(sys.stdout)))
    return code
