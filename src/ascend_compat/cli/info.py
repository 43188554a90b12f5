"""``ascend-compat info [--backend B] [--json]``."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("info", help="detected backends, the chosen one and why, versions")
    p.add_argument("--backend", help="pretend this backend was requested (as ASCEND_COMPAT_BACKEND)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat import info

    data = info.collect(args.backend)
    print(json.dumps(data, indent=2) if args.json else info.render(data))
    return 0
