"""The seed's workloads (add, cos, sum, matmul) on ``ascend_compat.cupy`` vs NumPy on the same CPU.

    python benchmarks/cupy/bench_ops.py [--device cpu|npu] [--sizes 1e3 1e5 1e7] [--matmul 1024 4096]
                                        [--repeat 5] [--threads N] [--no-memory] [--json]

Every timing synchronizes the device before reading the clock (the numpy-ascend benchmark timed kernel launches
only). NumPy's and our samples are taken in turn (one NumPy call, one of ours, ...) so that load from other
processes falls on both; the medians are reported, with their ratio (ours / NumPy; lower is better), the
ratio of the fastest samples (``min``), which bursts of load from other processes disturb less, and the ratio of
the median process CPU times (``cpu``: all threads' work, which waiting for a busy core does not inflate). Elementwise
ops and matmul (square float32 matrices) run with and without ``out=``. Peak memory (Linux): the growth of the
process's peak resident size during one steady-state call, after ``/proc/self/clear_refs`` reset the peak; the
simulated NPU's memory is host memory, so it counts too. Also reported: the per-call overhead of a 16-element op
over NumPy's own call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable, Optional


def _pin_blas_threads(argv: list[str]) -> None:
    """``--threads N`` limits NumPy's BLAS too (matmul): its thread count is read when NumPy loads."""
    if "--threads" in argv[:-1]:
        n = argv[argv.index("--threads") + 1]
        if n.isdigit() and int(n) > 0:
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ.setdefault(var, n)


if __name__ == "__main__":
    _pin_blas_threads(sys.argv)

import numpy  # noqa: E402  (after the BLAS thread count is set)

Fn = Callable[[], Any]


def _syncer(cp: Any) -> Callable[[], None]:
    """The current device's ``synchronize`` (a no-op on the CPU), looked up once: every timed call still runs it
    before the clock is read, but the lookup (~2 us of Python) is not charged to the op."""
    import torch

    dev = cp.current_torch_device()
    if dev.type == "cpu":
        return lambda: None
    sync: Callable[[], None] = getattr(torch, dev.type).synchronize
    return sync


def _interleaved(np_fn: Fn, cp_fn: Fn, repeat: int, sync: Callable[[], None]) -> tuple[list[float], ...]:
    """Seconds per call of ``np_fn`` and ``cp_fn``, sampled alternately after one warm-up call each: wall-clock
    times, then process CPU times (all threads; the share of the machine each call took, less exposed to load)."""
    np_fn()
    cp_fn()
    sync()
    ns, cs, ncpu, ccpu = [], [], [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        np_fn()
        ns.append(time.perf_counter() - t0)
        ncpu.append(time.process_time() - c0)
        c0, t0 = time.process_time(), time.perf_counter()
        cp_fn()
        sync()
        cs.append(time.perf_counter() - t0)
        ccpu.append(time.process_time() - c0)
    return ns, cs, ncpu, ccpu


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    raise KeyError(field)


def _peak_growth(fn: Fn, sync: Callable[[], None]) -> Optional[int]:
    """Bytes the peak resident size grew by during one ``fn()`` (None where the peak cannot be reset)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # reset VmHWM to the current resident size
        before = _status_kib("VmRSS")
        fn()
        sync()
        return max(_status_kib("VmHWM") - before, 0) * 1024
    except (OSError, KeyError):
        return None


def _per_call(fn: Fn, sync: Callable[[], None], n: int = 2000) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def _workloads(cp: Any, n: int) -> list[tuple[str, bool, Fn, Fn]]:
    """(op, out=, NumPy call, our call) for ``n`` float32 elements."""
    xh = numpy.random.default_rng(0).random(n, dtype=numpy.float32)
    yh = xh[::-1].copy()
    x, y = cp.asarray(xh), cp.asarray(yh)
    oh, o = numpy.empty_like(xh), cp.empty_like(x)
    return [
        ("add", False, lambda: numpy.add(xh, yh), lambda: cp.add(x, y)),
        ("add", True, lambda: numpy.add(xh, yh, out=oh), lambda: cp.add(x, y, out=o)),
        ("cos", False, lambda: numpy.cos(xh), lambda: cp.cos(x)),
        ("cos", True, lambda: numpy.cos(xh, out=oh), lambda: cp.cos(x, out=o)),
        ("sum", False, lambda: xh.sum(), lambda: x.sum()),
    ]


def _small_rows(cp: Any, sync: Callable[[], None]) -> list[dict[str, Any]]:
    small_h = numpy.ones(16, numpy.float32)
    small_d = cp.asarray(small_h)
    rows = []
    for op, np_fn, cp_fn in (("add", lambda: numpy.add(small_h, small_h), lambda: cp.add(small_d, small_d)),
                             ("cos", lambda: numpy.cos(small_h), lambda: cp.cos(small_d)),
                             ("sum", lambda: small_h.sum(), lambda: small_d.sum())):
        ns, cs = _per_call(np_fn, lambda: None), _per_call(cp_fn, sync)
        rows.append({"op": f"{op} (16 elements, per call)", "size": 16, "out": False, "numpy_s": ns,
                     "cupy_s": cs, "ratio": cs / ns, "overhead_us": (cs - ns) * 1e6})
    return rows


def run(device: str, sizes: list[int], repeat: int, matmul: list[int], memory: bool = True) -> list[dict[str, Any]]:
    """Rows of {op, size, out, numpy_s, cupy_s, ratio[, numpy_peak_bytes, cupy_peak_bytes]}."""
    if device == "npu":
        from ascend_compat import simulate

        if not simulate.is_installed():
            simulate.install()
    import ascend_compat.cupy as cp
    from ascend_compat.cupy._core import use_device_kind

    rows: list[dict[str, Any]] = []
    with use_device_kind(device):
        sync = _syncer(cp)

        def measure(op: str, size: int, out: bool, np_fn: Fn, cp_fn: Fn, reps: int) -> None:
            ns, cs, ncpu, ccpu = _interleaved(np_fn, cp_fn, reps, sync)
            row = {"op": op, "size": size, "out": out, "numpy_s": statistics.median(ns),
                   "cupy_s": statistics.median(cs), "ratio": statistics.median(cs) / statistics.median(ns),
                   "min_ratio": min(cs) / min(ns),  # the fastest of each: robust to bursts of load elsewhere
                   "numpy_cpu_s": statistics.median(ncpu), "cupy_cpu_s": statistics.median(ccpu),
                   "cpu_ratio": statistics.median(ccpu) / max(statistics.median(ncpu), 1e-9)}
            if memory:
                row["numpy_peak_bytes"] = _peak_growth(np_fn, lambda: None)
                row["cupy_peak_bytes"] = _peak_growth(cp_fn, sync)
            rows.append(row)

        rows += _small_rows(cp, sync)
        for n in sizes:
            for op, out, np_fn, cp_fn in _workloads(cp, n):
                measure(op, n, out, np_fn, cp_fn, repeat)
        for m in matmul:
            ah = numpy.random.default_rng(1).random((m, m), dtype=numpy.float32)
            a = cp.asarray(ah)

            oh, o = numpy.empty_like(ah), cp.empty_like(a)

            def np_mm(ah: Any = ah) -> Any:  # (bound now: the loop rebinds ah and a)
                return ah @ ah

            def cp_mm(a: Any = a) -> Any:
                return a @ a

            def np_mm_out(ah: Any = ah, oh: Any = oh) -> Any:
                return numpy.matmul(ah, ah, out=oh)

            def cp_mm_out(a: Any = a, o: Any = o) -> Any:
                return cp.matmul(a, a, out=o)

            measure("matmul", m * m, False, np_mm, cp_mm, max(1, min(repeat, 3)))
            measure("matmul", m * m, True, np_mm_out, cp_mm_out, max(1, min(repeat, 3)))
            del a, o
    return rows


def _mib(value: Optional[int]) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'op':34} {'size':>10} {'out=':>5} {'numpy':>12} {'ours':>12} {'ratio':>7} {'min':>7} {'cpu':>7} "
          f"{'peak MiB np/ours':>17}")
    for r in rows:
        peak = f"{_mib(r['numpy_peak_bytes'])}/{_mib(r['cupy_peak_bytes'])}" if "numpy_peak_bytes" in r else ""
        best = f"{r['min_ratio']:>6.2f}x" if "min_ratio" in r else ""
        cpu = f"{r['cpu_ratio']:>6.2f}x" if "cpu_ratio" in r else ""
        print(f"{r['op']:34} {r['size']:>10} {'yes' if r['out'] else 'no':>5} {r['numpy_s'] * 1e3:>10.4f}ms "
              f"{r['cupy_s'] * 1e3:>10.4f}ms {r['ratio']:>6.2f}x {best:>7} {cpu:>7} {peak:>17}")


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--device", choices=("cpu", "npu"), default="cpu", help="cpu, or the simulated npu")
    p.add_argument("--sizes", nargs="+", type=float, default=[1e3, 1e5, 1e7])
    p.add_argument("--matmul", nargs="*", type=int, default=[1024], help="square matmul sizes (e.g. 1024 4096)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch's and NumPy's BLAS threads (0: their defaults)")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    args = p.parse_args(argv)
    if args.repeat < 1 or any(s < 1 for s in args.sizes) or any(m < 1 for m in args.matmul):
        print("error: --repeat, --sizes and --matmul must be positive", file=sys.stderr)
        return 2
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    rows = run(args.device, [int(s) for s in args.sizes], args.repeat, args.matmul, memory=not args.no_memory)
    if args.json:
        print(json.dumps({"device": args.device, "threads": args.threads, "rows": rows}, indent=1))
        return 0
    _print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
