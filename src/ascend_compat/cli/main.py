"""Entry point of ``ascend-compat`` / ``cuda-morph`` / ``python -m ascend_compat``."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from ascend_compat import __version__
from ascend_compat.cli import check as check_cmd
from ascend_compat.cli import info as info_cmd
from ascend_compat.cli import port as port_cmd
from ascend_compat.cli import report as report_cmd
from ascend_compat.cli import run as run_cmd


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ascend-compat",
        description="Run CUDA-assuming PyTorch code on Ascend NPUs, and measure the migration.",
    )
    parser.add_argument("--version", action="version", version=f"ascend-compat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run_cmd.add_parser(sub)
    info_cmd.add_parser(sub)
    check_cmd.add_parser(sub)
    port_cmd.add_parser(sub)
    report_cmd.add_parser(sub)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    # `run` takes the rest of the line verbatim (the script's own flags included).
    if argv and argv[0] == "run":
        return run_cmd.main(argv[1:])
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return int(args.func(args))
