"""Latency of common ops on one device: p50/p95/p99 per op and size, the device synchronized before each stop.

Sizes mean: matmul/add/softmax/layer_norm on an n x n tensor; conv2d a 1x16xnxn image, 16 3x3 filters, padding 1;
sdpa one batch, 4 heads, n tokens, head dim 64. This measures the device (on the simulated NPU: its host CPU
kernels plus the simulator's dispatch), not the shim.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from ascend_compat.bench._common import (
    SCHEMA_VERSION,
    BenchError,
    Progress,
    Threads,
    prepare,
    resolve_threads,
    torch_threads,
)
from ascend_compat.bench._timing import latency_summary, synchronizer

OPS = ("matmul", "add", "softmax", "layer_norm", "conv2d", "sdpa")
DEFAULT_SIZES = (64, 256, 512)
DTYPES = ("float32", "float16", "bfloat16")


def _make(torch: Any, op: str, n: int, device: str, dtype: Any) -> tuple[Callable[[], Any], Optional[float], str]:
    """(the call, its floating-point operations or None, the shapes in words)."""
    F = torch.nn.functional  # noqa: N806  (torch's own spelling)
    gen = torch.Generator().manual_seed(n)

    def rand(*shape: int) -> Any:
        return torch.randn(*shape, generator=gen).to(device=device, dtype=dtype)

    if op == "matmul":
        a, b = rand(n, n), rand(n, n)
        return (lambda: a @ b), 2.0 * n**3, f"{n}x{n} @ {n}x{n}"
    if op == "add":
        a, b = rand(n, n), rand(n, n)
        return (lambda: a + b), float(n * n), f"{n}x{n} + {n}x{n}"
    if op == "softmax":
        a = rand(n, n)
        return (lambda: torch.softmax(a, dim=-1)), None, f"{n}x{n}, last dim"
    if op == "layer_norm":
        a = rand(n, n)
        w, b = rand(n), rand(n)
        return (lambda: F.layer_norm(a, (n,), w, b)), None, f"{n}x{n}, last dim"
    if op == "conv2d":
        c = 16
        x, w = rand(1, c, n, n), rand(c, c, 3, 3)
        return (lambda: F.conv2d(x, w, padding=1)), 2.0 * c * c * 9 * n * n, f"1x{c}x{n}x{n} * {c}x{c}x3x3"
    if op == "sdpa":
        h, d = 4, 64
        q, k, v = rand(1, h, n, d), rand(1, h, n, d), rand(1, h, n, d)
        return (lambda: F.scaled_dot_product_attention(q, k, v)), 4.0 * h * n * n * d, f"1x{h}x{n}x{d}"
    raise BenchError(f"unknown op {op!r} (known: {', '.join(OPS)})")


def resolve_device(torch: Any, device: Optional[str]) -> str:
    """``None``/``"auto"``: the current accelerator (the simulated npu when installed), else the CPU."""
    if device in (None, "auto"):
        accel = getattr(torch, "accelerator", None)
        current = accel.current_accelerator() if accel is not None and accel.is_available() else None
        return "cpu" if current is None else str(current.type)
    try:
        dev = torch.device(device)
        torch.empty(1, device=dev)
    except Exception as exc:
        hint = " (add --simulate npu for the simulated NPU)" if str(device).startswith("npu") else ""
        raise BenchError(f"device {device!r} is not usable here{hint}: {exc}") from None
    return str(dev)


def resolve_dtype(torch: Any, dtype: str) -> Any:
    if dtype not in DTYPES:
        raise BenchError(f"unknown dtype {dtype!r} (choose from {', '.join(DTYPES)})")
    return getattr(torch, dtype)


def time_calls(
    fn: Callable[[], Any], sync: Callable[[], Any], *, warmup: int, min_time: float, min_iters: int, max_iters: int
) -> list[float]:
    """Per-call latencies in seconds: each call is timed alone, the device synchronized before the clock stops."""
    for _ in range(warmup):
        fn()
    sync()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < max_iters and (len(samples) < min_iters or time.perf_counter() - start < min_time):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    return samples


def run(
    *,
    device: Optional[str] = None,
    dtype: str = "float32",
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    ops: tuple[str, ...] = OPS,
    min_time: float = 0.2,
    min_iters: int = 5,
    max_iters: int = 1000,
    warmup: int = 3,
    threads: Threads = "auto",
    simulate: Optional[str] = None,
    progress: Progress = None,
) -> dict[str, Any]:
    """Time every op at every size; return the report (``kind: "ops"``, latencies in microseconds)."""
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise BenchError(f"unknown op(s) {', '.join(unknown)} (known: {', '.join(OPS)})")
    if not sizes or any(n < 1 for n in sizes):
        raise BenchError("--sizes must be positive integers")
    if min_iters < 1 or max_iters < min_iters:
        raise BenchError("need 1 <= min_iters <= max_iters")
    torch = prepare(simulate)
    from ascend_compat.bench import fingerprint

    dev = resolve_device(torch, device)
    dt = resolve_dtype(torch, dtype)
    n_threads, threads_rule = resolve_threads(threads)
    with torch_threads(n_threads):
        sync = synchronizer(torch, torch.device(dev).type)
        rows: list[dict[str, Any]] = []
        total = len(ops) * len(sizes)
        for op in ops:
            for n in sizes:
                row: dict[str, Any] = {"op": op, "size": n, "shape": None, "error": None}
                try:
                    fn, flops, shape = _make(torch, op, n, dev, dt)
                    row["shape"] = shape
                    with torch.no_grad():
                        samples = time_calls(
                            fn, sync, warmup=warmup, min_time=min_time, min_iters=min_iters, max_iters=max_iters
                        )
                except Exception as exc:  # e.g. an op without a kernel for this dtype: reported, the rest still runs
                    row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                else:
                    lat = latency_summary([s * 1e6 for s in samples])
                    row["latency_us"] = lat
                    row["gflops"] = flops / (lat["p50"] * 1e-6) / 1e9 if flops and lat["p50"] > 0 else None
                rows.append(row)
                if progress is not None:
                    progress(len(rows), total)
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "ops",
            "fingerprint": fingerprint.collect(None, dev),
            "settings": {
                "device": dev,
                "dtype": dtype,
                "sizes": list(sizes),
                "ops": list(ops),
                "min_time_s": min_time,
                "min_iters": min_iters,
                "max_iters": max_iters,
                "warmup": warmup,
                "unit": "us per call",
                "threads": torch.get_num_threads(),
                "threads_rule": threads_rule,
            },
            "rows": rows,
            "failed": sum(1 for r in rows if r["error"] is not None),
        }


class OpLatencyReport:
    """The result of :meth:`OpLatencyBench.run`: the report dict (``.data``, also by key) and its renderings."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.data["rows"])

    def report(self, color: bool = False) -> str:
        """The table ``ascend-compat bench ops`` prints."""
        from ascend_compat.bench import output

        return output.render(self.data, color=color)

    def to_json(self) -> str:
        from ascend_compat.bench import output

        return output.to_json(self.data)

    def to_csv(self) -> str:
        from ascend_compat.bench import output

        return output.to_csv(self.data)


class OpLatencyBench:
    """Op latency on one device, the Python face of ``ascend-compat bench ops``.

    ``OpLatencyBench(device="npu").run().report()``; ``device`` is ``"auto"`` (the accelerator, else the CPU),
    ``"cpu"``, ``"npu"``, ``"npu:1"``...; ``simulate="npu"`` installs the simulated NPU first. The other arguments
    are those of :func:`run` (``threads="auto"``: one thread on a shared machine).
    """

    def __init__(
        self,
        device: Optional[str] = "auto",
        *,
        dtype: str = "float32",
        sizes: tuple[int, ...] = DEFAULT_SIZES,
        ops: tuple[str, ...] = OPS,
        min_time: float = 0.2,
        min_iters: int = 5,
        max_iters: int = 1000,
        warmup: int = 3,
        threads: Threads = "auto",
        simulate: Optional[str] = None,
    ) -> None:
        self.settings: dict[str, Any] = {
            "device": device,
            "dtype": dtype,
            "sizes": tuple(sizes),
            "ops": tuple(ops),
            "min_time": min_time,
            "min_iters": min_iters,
            "max_iters": max_iters,
            "warmup": warmup,
            "threads": threads,
            "simulate": simulate,
        }

    def run(self, progress: Progress = None) -> OpLatencyReport:
        return OpLatencyReport(run(progress=progress, **self.settings))
