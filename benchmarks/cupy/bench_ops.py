"""The seed's workloads (add, cos, sum, matmul) on ``ascend_compat.cupy`` vs NumPy on the same CPU.

    python benchmarks/cupy/bench_ops.py [--device cpu|npu] [--sizes 1e3 1e5 1e7] [--repeat 5] [--threads N] [--json]

Every timing synchronizes the device before reading the clock (the numpy-ascend benchmark timed kernel launches
only). Elementwise ops run with and without ``out=``; matmul runs on 1024x1024 and 4096x4096 float32 (``--matmul``).
Reported: median seconds per call and the ratio ascend_compat.cupy / NumPy (one run; lower is better), and the
per-call overhead of a 16-element op over NumPy's own call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any, Callable

import numpy


def _sync(cp: Any) -> None:
    import torch

    dev = cp.current_torch_device()
    if dev.type != "cpu":
        getattr(torch, dev.type).synchronize()


def _time(fn: Callable[[], Any], repeat: int, sync: Callable[[], None]) -> float:
    fn()
    sync()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _per_call(fn: Callable[[], Any], sync: Callable[[], None], n: int = 2000) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def _elementwise(cp: Any, n: int, row: Callable[..., None]) -> None:
    xh = numpy.random.default_rng(0).random(n, dtype=numpy.float32)
    yh = xh[::-1].copy()
    x, y = cp.asarray(xh), cp.asarray(yh)
    oh, o = numpy.empty_like(xh), cp.empty_like(x)
    row("add", n, False, lambda: numpy.add(xh, yh), lambda: cp.add(x, y))
    row("add", n, True, lambda: numpy.add(xh, yh, out=oh), lambda: cp.add(x, y, out=o))
    row("cos", n, False, lambda: numpy.cos(xh), lambda: cp.cos(x))
    row("cos", n, True, lambda: numpy.cos(xh, out=oh), lambda: cp.cos(x, out=o))
    row("sum", n, False, lambda: xh.sum(), lambda: x.sum())


def run(device: str, sizes: list[int], repeat: int, matmul: list[int]) -> list[dict[str, Any]]:
    """Rows of {op, size, out, numpy_s, cupy_s, ratio}."""
    if device == "npu":
        from ascend_compat import simulate

        if not simulate.is_installed():
            simulate.install()
    import ascend_compat.cupy as cp
    from ascend_compat.cupy._core import use_device_kind

    rows: list[dict[str, Any]] = []
    with use_device_kind(device):
        def sync() -> None:
            _sync(cp)

        def row(op: str, size: int, out: bool, np_fn: Callable[[], Any], cp_fn: Callable[[], Any]) -> None:
            ns, cs = _time(np_fn, repeat, lambda: None), _time(cp_fn, repeat, sync)
            rows.append({"op": op, "size": size, "out": out, "numpy_s": ns, "cupy_s": cs, "ratio": cs / ns})

        small_h = numpy.ones(16, numpy.float32)
        small_d = cp.asarray(small_h)
        for op, np_fn, cp_fn in (("add", lambda: numpy.add(small_h, small_h), lambda: cp.add(small_d, small_d)),
                                 ("cos", lambda: numpy.cos(small_h), lambda: cp.cos(small_d)),
                                 ("sum", lambda: small_h.sum(), lambda: small_d.sum())):
            ns, cs = _per_call(np_fn, lambda: None), _per_call(cp_fn, sync)
            rows.append({"op": f"{op} (16 elements, per call)", "size": 16, "out": False, "numpy_s": ns,
                         "cupy_s": cs, "ratio": cs / ns, "overhead_us": (cs - ns) * 1e6})
        for n in sizes:
            _elementwise(cp, n, row)
        for m in matmul:
            ah = numpy.random.default_rng(1).random((m, m), dtype=numpy.float32)
            a = cp.asarray(ah)
            row("matmul", m * m, False, lambda ah=ah: ah @ ah, lambda a=a: a @ a)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "npu"), default="cpu", help="cpu, or the simulated npu")
    p.add_argument("--sizes", nargs="+", type=float, default=[1e3, 1e5, 1e7])
    p.add_argument("--matmul", nargs="*", type=int, default=[1024], help="square matmul sizes (e.g. 1024 4096)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    args = p.parse_args(argv)
    if args.repeat < 1 or any(s < 1 for s in args.sizes):
        print("error: --repeat and --sizes must be positive", file=sys.stderr)
        return 2
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    rows = run(args.device, [int(s) for s in args.sizes], args.repeat, args.matmul)
    if args.json:
        print(json.dumps({"device": args.device, "rows": rows}, indent=1))
        return 0
    print(f"{'op':34} {'size':>10} {'out=':>5} {'numpy':>11} {'cupy':>11} {'ratio':>7}")
    for r in rows:
        print(f"{r['op']:34} {r['size']:>10} {'yes' if r['out'] else 'no':>5} {r['numpy_s'] * 1e6:>9.1f}us "
              f"{r['cupy_s'] * 1e6:>9.1f}us {r['ratio']:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
