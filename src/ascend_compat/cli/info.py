"""``ascend-compat info [--backend B] [--patches] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("info", help="detected backends, the chosen one and why, versions")
    p.add_argument("--backend", help="pretend this backend was requested (as ASCEND_COMPAT_BACKEND)")
    p.add_argument("--patches", action="store_true",
                   help="list every patch the shim applies (core torch patches and library patches): what, why, "
                   "versions tested, upstream issue, backends")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat import info

    if getattr(args, "patches", False):
        listed = info.patches()
        print(json.dumps(listed, indent=2) if args.json else info.render_patches(listed))
        return 0
    from ascend_compat.cli._common import backend_problem

    problem = backend_problem(args.backend)
    if problem:
        print(f"ascend-compat info: {problem}", file=sys.stderr)
        return 2
    data = info.collect(args.backend)
    print(json.dumps(data, indent=2) if args.json else info.render(data))
    return 0
