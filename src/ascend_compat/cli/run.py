"""``ascend-compat run [--simulate npu] script.py args...`` / ``run -m module args...``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ascend-compat run",
        description="Run a Python script or module like `python`, on the simulated NPU if asked.",
    )
    p.add_argument("--simulate", choices=["npu"], help="run on the simulated NPU (sets ASCEND_COMPAT_SIMULATE)")
    p.add_argument("--backend", help="target backend (npu, mlu, musa, xpu, mps, cpu); default: detected")
    p.add_argument("--report", action="store_true",
                   help="print at exit which CUDA calls were redirected, dtype substitutions and CPU fallbacks")
    p.add_argument("--dtype-policy", choices=["keep", "warn", "substitute"],
                   help="dtypes the device lacks (float64, bf16 on 310P): keep (default), warn, or substitute")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script")
    p.add_argument("target", nargs="?", help="script path, or - for standard input (when -m is not given)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    return p


def add_parser(sub: Subparsers) -> None:
    sp = sub.add_parser("run", help="run a script or module (like python), optionally on the simulated NPU")
    sp.set_defaults(func=lambda ns: 0)


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split our options from the target and its arguments (the first positional or -m MODULE ends ours)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            return argv[: i + 2], argv[i + 2 :]
        if a in ("--simulate", "--backend", "--dtype-policy"):
            i += 2
            continue
        if a.startswith(("--simulate=", "--backend=", "--dtype-policy=")) or a == "--report":
            i += 1
            continue
        if a in ("-h", "--help"):
            return argv[: i + 1], []
        return argv[: i + 1], argv[i + 1 :]
    return argv, []


def main(argv: list[str], script_args: Sequence[str] = ()) -> int:
    """``run``'s command line ``argv``; ``script_args`` go first among the script's arguments (a launcher's
    ``--local_rank=N``, see ``cli.main``)."""
    ours, rest = _split(argv)
    rest = [*script_args, *rest]
    ns = _parser().parse_args(ours)
    if ns.module is None and ns.target is None:
        _parser().error("give a script path or -m MODULE")
    from ascend_compat.cli._common import backend_problem

    problem = backend_problem(ns.backend)
    if problem:
        print(f"ascend-compat run: {problem}", file=sys.stderr)
        return 2
    if ns.simulate:
        os.environ["ASCEND_COMPAT_SIMULATE"] = ns.simulate
    from ascend_compat.runner import EXIT_INTERRUPTED, run_target
    from ascend_compat.simulate.errors import SimulationError

    try:
        return run_target(script=ns.target, module=ns.module, args=rest, backend=ns.backend, report=ns.report,
                          dtype_policy=ns.dtype_policy)
    except KeyboardInterrupt:  # outside the script (while preparing or reporting): no traceback of ours
        print("ascend-compat run: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SimulationError as exc:  # a bad ASCEND_COMPAT_SIM_* setting, no compiler...: the script never started
        print(f"ascend-compat run: {exc}", file=sys.stderr)
        return 2
