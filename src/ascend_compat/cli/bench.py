"""``ascend-compat bench overhead|ops|model [--simulate npu] [--json] [--csv FILE] [--plot FILE.png]``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, Union

from ascend_compat import settings

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers

#: Exit codes: some cases failed (the report still printed), the benchmark could not run at all.
EXIT_CASES_FAILED = 1
EXIT_ERROR = 2


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(p) for p in text.replace(",", " ").split())
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be integers, got {text!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError("sizes must be positive integers")
    return sizes


def _threads(text: str) -> Union[str, int]:
    if text in ("auto", "torch"):
        return text
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--threads takes auto, torch or a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("--threads must be at least 1")
    return n


_THREADS_HELP = (
    "torch threads: auto (default: 1 on a shared machine, i.e. <= 4 usable cores or 1-minute load >= half of "
    "them, else torch's default), torch (torch's default), or N"
)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--simulate", choices=["npu"], help="run on the simulated NPU (sets ASCEND_COMPAT_SIMULATE)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (with schema_version)")
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV to FILE")
    p.add_argument("--plot", metavar="FILE.png", help="also draw a PNG chart (needs the 'plot' extra: matplotlib)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="measure the shim's cost per call, op latency and model throughput")
    bsub = p.add_subparsers(dest="bench_command", metavar="BENCHMARK")
    p.set_defaults(func=main, bench_command=None, _bench_parser=p)

    o = bsub.add_parser("overhead", help="ns per call of each CUDA spelling, shim on vs the native call")
    _common(o)
    o.add_argument("--repeats", type=int, default=7, help="samples per call and side (default: 7)")
    o.add_argument("--min-time", type=float, default=0.05, help="seconds per sample; loops auto-range to it")
    o.add_argument("--backend", help="target this backend (as ASCEND_COMPAT_BACKEND)")
    o.add_argument("--startup-repeats", type=int, default=None, metavar="N",
                   help="fresh interpreters timing the first activation (default: --repeats; 0: skip)")  # fmt: skip

    q = bsub.add_parser("ops", help="p50/p95/p99 latency of common ops over sizes on one device")
    _common(q)
    q.add_argument("--device", default="auto", help="device to time (default: the accelerator, else cpu)")
    q.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    q.add_argument("--sizes", type=_sizes, default=None, help="sizes n, e.g. 64,256,512 (default)")
    q.add_argument("--ops", default=None, help="comma-separated subset of matmul,add,softmax,layer_norm,conv2d,sdpa")
    q.add_argument("--min-time", type=float, default=0.2, help="seconds per op and size (default: 0.2)")
    q.add_argument("--min-iters", type=int, default=5, help="at least this many calls per op and size (default: 5)")
    q.add_argument("--max-iters", type=int, default=1000, help="at most this many calls per op and size")
    q.add_argument("--threads", type=_threads, default="auto", help=_THREADS_HELP)

    m = bsub.add_parser("model", help="samples/s and p50/p95/p99 latency of a model, shim on vs off")
    _common(m)
    m.add_argument("--factory", metavar="MODULE:FN", help="fn(batch_size) -> (model, inputs); default GPT-2 tiny")
    m.add_argument("--batch", type=int, default=4)
    m.add_argument("--seq-len", type=int, default=32, help="tokens per sample of the default model")
    m.add_argument("--steps", type=int, default=50, help="timed steps per side (default: 50)")
    m.add_argument("--warmup", type=int, default=3, help="untimed steps per side first (default: 3)")
    m.add_argument("--rounds", type=int, default=4, help="alternate shim off/on in this many rounds (default: 4)")
    m.add_argument("--train", action="store_true", help="time a training step (forward, backward, AdamW)")
    m.add_argument("--threads", type=_threads, default="auto", help=_THREADS_HELP)
    m.add_argument("--backend", help="target this backend (as ASCEND_COMPAT_BACKEND)")


def main(args: argparse.Namespace) -> int:
    if args.bench_command is None:
        args._bench_parser.print_help(sys.stderr)
        return EXIT_ERROR
    from ascend_compat.bench import BenchError, output, run_model, run_ops, run_overhead
    from ascend_compat.cli._common import backend_problem, progress_bar, use_color
    from ascend_compat.simulate.errors import SimulationError

    problem = backend_problem(args.backend) if args.bench_command in ("overhead", "model") else None
    if problem:
        print(f"ascend-compat bench: error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    if args.simulate:
        os.environ[settings.SIMULATE.name] = args.simulate
    progress = progress_bar(not (args.no_progress or args.json), label=f"bench {args.bench_command}", unit="steps")
    try:
        # Fail before a long run, not after it.
        for path in (args.csv, args.plot):
            if path:
                output.check_target(path)
        if args.plot:
            output.require_matplotlib()
        if args.bench_command == "overhead":
            report = run_overhead(
                repeats=args.repeats,
                min_time=args.min_time,
                simulate=args.simulate,
                backend=args.backend,
                startup_repeats=args.startup_repeats,
                progress=progress,
            )
        elif args.bench_command == "ops":
            kwargs: dict[str, Any] = {
                "device": args.device,
                "dtype": args.dtype,
                "min_time": args.min_time,
                "min_iters": args.min_iters,
                "max_iters": args.max_iters,
                "threads": args.threads,
                "simulate": args.simulate,
            }
            if args.sizes:
                kwargs["sizes"] = args.sizes
            if args.ops:
                kwargs["ops"] = tuple(o.strip() for o in args.ops.split(",") if o.strip())
            report = run_ops(progress=progress, **kwargs)
        else:
            report = run_model(
                factory=args.factory,
                batch=args.batch,
                seq_len=args.seq_len,
                steps=args.steps,
                warmup=args.warmup,
                rounds=args.rounds,
                train=args.train,
                threads=args.threads,
                simulate=args.simulate,
                backend=args.backend,
                progress=progress,
            )
    except (BenchError, SimulationError) as exc:
        print(f"ascend-compat bench: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"ascend-compat bench: error: cannot write output: {exc}", file=sys.stderr)
        return EXIT_ERROR
    # The report first: a file that cannot be written after a long run (a full disk) must not lose the figures.
    print(output.to_json(report) if args.json else output.render(report, color=use_color(sys.stdout)), flush=True)
    try:
        if args.csv:
            output.write_csv(report, args.csv)
        if args.plot:
            output.plot(report, args.plot)
    except BenchError as exc:
        print(f"ascend-compat bench: error: {exc} (the report is above)", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"ascend-compat bench: error: cannot write output: {exc} (the report is above)", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_CASES_FAILED if report.get("failed") else 0
