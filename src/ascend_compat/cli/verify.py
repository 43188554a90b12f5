"""``ascend-compat verify ops|model``: numerical parity with a reference, and the first diverging layer."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers

#: Exit codes: 1 = an op failed / the model diverged; 2 = bad usage (unknown op, factory not found, ...).
EXIT_FAILED = 1
EXIT_USAGE = 2


SUBCOMMANDS = ("ops", "model")


def shorthand(argv: list[str]) -> list[str]:
    """``verify --device npu [OPTIONS]`` (options and no subcommand) is ``verify ops --device npu [OPTIONS]``."""
    if len(argv) > 1 and argv[0] == "verify" and argv[1].startswith("-") and argv[1] not in ("-h", "--help"):
        return [argv[0], "ops", *argv[1:]]
    return argv


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("verify", help="numerical parity: an op suite against float64 goldens, a model layer by layer",
                       epilog="`verify --device npu [OPTIONS]` (options first, no subcommand) is short for "
                       "`verify ops --device npu [OPTIONS]`.")  # fmt: skip
    vsub = p.add_subparsers(dest="verify_command", metavar="{" + ",".join(SUBCOMMANDS) + "}")

    ops = vsub.add_parser("ops", help="run the op suite on a device against a float64 CPU golden")
    ops.add_argument("--device", default=None, help="npu, cuda or cpu (optionally :index); default: the NPU, "
                     "then CUDA, then the CPU. An absent accelerator falls back to the CPU (the report says so)")
    ops.add_argument("--dtype", default="float32,float16,bfloat16", help="comma-separated dtypes (default: all three)")
    ops.add_argument("--only", metavar="NAMES", help="comma-separated op names or groups (matmul, conv, norm, ...)")
    ops.add_argument("--list", action="store_true", help="list the ops and their groups and exit")
    _common(ops)

    model = vsub.add_parser("model", help="compare a model on a reference and a target device, layer by layer")
    model.add_argument("factory", metavar="SCRIPT_OR_MODULE:FACTORY",
                       help="path/to/script.py:make_model or package.module:make_model; the factory returns a "
                       "model or (model, inputs)")  # fmt: skip
    model.add_argument("--target", default="npu", help="target device (default: npu)")
    model.add_argument("--reference", default="cpu", help="reference device (default: cpu)")
    model.add_argument("--rtol", type=float, default=None, help="relative tolerance (default: per model dtype)")
    model.add_argument("--atol", type=float, default=None, help="absolute tolerance (default: per model dtype)")
    model.add_argument("--backward", action="store_true", help="also compare gradients")
    model.add_argument("--rows", type=int, default=40, help="table rows to print (default 40; --json has all)")
    _common(model)
    p.set_defaults(func=main, verify_parser=p)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--simulate", choices=("npu",), default=None, help="run on the simulated NPU")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and inputs (default 0)")
    p.add_argument("--json", action="store_true", help="machine-readable output (schema_version 1)")


def main(args: argparse.Namespace) -> int:
    command = getattr(args, "verify_command", None)
    if command is None:
        args.verify_parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        from ascend_compat.verify.devices import prepare

        prepare(args.simulate)
    except Exception as exc:
        print(f"ascend-compat verify: cannot set up the simulated NPU: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _ops(args) if command == "ops" else _model(args)


def _names(spec: str | None) -> list[str]:
    return [s.strip() for s in (spec or "").split(",") if s.strip()]


def _ops(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import progress_bar, use_color
    from ascend_compat.verify import ops

    if args.list:
        for case in ops.build_suite():
            where = f"  (only on {', '.join(case.devices)})" if case.devices else ""
            print(f"{case.name:<22} {case.group}{where}")
        return 0
    progress = progress_bar(not args.json, label="verify ops", unit="cases")
    try:
        report = ops.run_ops(args.device, _names(args.dtype), _names(args.only) or None, args.seed, progress)
    except ValueError as exc:
        print(f"ascend-compat verify ops: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(ops.render(report, color=use_color(sys.stdout)))
    return 0 if report.ok else EXIT_FAILED


def _model(args: argparse.Namespace) -> int:
    from ascend_compat._factories import load_callable
    from ascend_compat.cli._common import use_color
    from ascend_compat.verify import model
    from ascend_compat.verify.devices import resolve

    try:  # devices first: a comparison of the CPU with itself proves nothing, so it is refused, not passed
        target, reference = resolve(args.target), resolve(args.reference)
        if reference.fallback:
            raise ValueError(f"reference {args.reference!r} is not available: {reference.fallback}")
        if target.fallback and target.device == reference.device:
            raise ValueError(f"nothing to compare: target {args.target!r}: {target.fallback}, and the reference is "
                             f"{reference.device} too")
    except ValueError as exc:
        print(f"ascend-compat verify model: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        factory = load_callable(args.factory)
    except ValueError as exc:  # our own words (a missing file, no such factory): no exception name before them
        print(f"ascend-compat verify model: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # the user's script failed while loading: its error, named, in one line
        print(f"ascend-compat verify model: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        built = model.build(factory, seed=args.seed)
    except Exception as exc:  # the user's script: any error is a usage problem, reported in one line
        print(f"ascend-compat verify model: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = model.compare(lambda: built, reference=args.reference, target=args.target, rtol=args.rtol,
                               atol=args.atol, backward=args.backward, seed=args.seed)  # fmt: skip
    except Exception as exc:  # the model failed to run on a device: that is a parity failure
        print(f"ascend-compat verify model: running the model failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(model.render(report, color=use_color(sys.stdout), limit=max(args.rows, 1)))
    return 0 if report.ok else EXIT_FAILED
