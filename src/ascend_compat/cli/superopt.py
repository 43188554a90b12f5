"""``ascend-compat superopt FILE.py:FUNC [--backend B] [--target T] [--out DIR] [--json]``: superoptimize a graph.

FUNC is a function of FILE that takes no arguments and returns an ``ascend_compat.superopt`` kernel graph. The
command prints the plan (``explain()``), writes one Triton file per kernel and ``plan.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ascend_compat._factories import python_file_problem
from ascend_compat.cli._common import use_color

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("superopt", help="superoptimize a kernel graph into verified Triton kernels (Ascend or CUDA)")
    p.add_argument("spec", metavar="FILE.py:FUNC", help="a function returning an ascend_compat.superopt graph")
    p.add_argument("--backend", default="ascend", choices=("ascend", "triton", "torch"))
    p.add_argument("--target", help="target profile (ascend-910b, ascend-910b4, ascend-310p, nvidia-h100, ...)")
    p.add_argument("--out", help="directory for the kernels and plan.json (default: ./superopt-FUNC)")
    p.add_argument("--no-cache", action="store_true", help="search again even if a cached plan exists")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def _load(spec: str) -> Any:
    """The graph built by FILE.py:FUNC, or a usage error (ValueError)."""
    file, _, func = spec.rpartition(":")
    if not file or not func:
        raise ValueError(f"expected FILE.py:FUNC, got {spec!r}")
    path = Path(file)
    if not path.exists():
        raise ValueError(f"no such file: {file}")
    problem = python_file_problem(file)
    if problem is not None:  # a folder, a FIFO (never opened: it would wait for a writer), an unreadable file
        raise ValueError(f"{file}: {problem}")
    mod_spec = importlib.util.spec_from_file_location(f"_superopt_user_{path.stem}", path)
    if mod_spec is None or mod_spec.loader is None:
        raise ValueError(f"cannot import {file}")
    module = importlib.util.module_from_spec(mod_spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        mod_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    fn = getattr(module, func, None)
    if not callable(fn):
        raise ValueError(f"{file} has no function {func!r}")
    from ascend_compat.superopt import KernelGraph

    graph = fn()
    if not isinstance(graph, KernelGraph):
        raise ValueError(f"{func}() returned {type(graph).__name__}, not a kernel graph (yr.new_kernel_graph())")
    return graph


def main(args: argparse.Namespace) -> int:
    try:
        graph = _load(args.spec)
    except ValueError as e:
        print(f"ascend-compat superopt: {e}", file=sys.stderr)
        return 2
    from ascend_compat.superopt import BackendUnavailableError, GraphError

    try:
        opt = graph.superoptimize(backend=args.backend, target=args.target, use_cache=not args.no_cache)
    except (GraphError, BackendUnavailableError, ValueError) as e:
        print(f"ascend-compat superopt: {e}", file=sys.stderr)
        return 1
    out = Path(args.out or f"superopt-{args.spec.rpartition(':')[2]}")
    files = opt.save(str(out))
    if args.json:
        rec = {k: v for k, v in opt.record.items() if k != "kernels"}
        rec["files"] = [str(f) for f in files]
        rec["kernels"] = [{k: v for k, v in kern.items() if k != "source"} for kern in opt.kernels]
        print(json.dumps(rec, indent=2))
        return 0
    bold, reset = ("\033[1m", "\033[0m") if use_color(sys.stdout) else ("", "")
    print(f"{bold}superopt {args.spec}{reset}")
    print(opt.explain())
    print(f"wrote {', '.join(str(f) for f in files)}")
    return 0
