"""Cost of the runtime shim's REAL redirections vs the native call on the same target (run by hand).

    python benchmarks/bench_shim.py [--simulate] [--repeats 9] [--json]

Every comparison is interleaved: each repetition times side A (the CUDA spelling, shim on) and then side B (the
native spelling on the target, shim off), A,B,A,B...; medians and the ratio come from that one run. The sides do
the same work (``x.cuda()`` against ``x.to(d)``, ``d`` the target's ``torch.device``). The training step is a
CUDA script's step: ``.cuda()`` on the batch, ``torch.randn(device="cuda")``, ``torch.autocast("cuda")``,
``torch.cuda.synchronize()`` and friends, against the same step written for the target. Startup figures come from
fresh interpreters (bytecode cached, one warm-up): ``import ascend_compat`` alone, and ``import ascend_compat;
activate()`` after ``import torch`` (with the collector settled after importing torch, and without).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

Fn = Callable[[], object]


def _loop_ns(fn: Fn, inner: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(inner):
        fn()
    return (time.perf_counter_ns() - t0) / inner


def interleaved(shim: Fn, native: Fn, inner: int, repeats: int, shim_on: Fn, shim_off: Fn) -> dict[str, Any]:
    """A (shim on), B (shim off), A, B...: ``repeats`` samples each; medians and their ratio from this run."""
    a: list[float] = []
    b: list[float] = []
    for rep in range(repeats + 1):  # repetition 0 warms both sides up and is dropped
        shim_on()
        try:
            sa = _loop_ns(shim, inner)
        finally:
            shim_off()
        sb = _loop_ns(native, inner)
        if rep:
            a.append(sa)
            b.append(sb)
    ma, mb = statistics.median(a), statistics.median(b)
    spread = max(max(a) - min(a), max(b) - min(b))
    return {"shim_ns": ma, "native_ns": mb, "ratio": ma / mb, "added_ns": ma - mb, "spread_ns": spread}


def _fresh(code: str, repeats: int) -> float:
    # As installed packages run: with cached bytecode (some sandboxes set PYTHONDONTWRITEBYTECODE); one warm-up.
    drop = ("PYTHONDONTWRITEBYTECODE", "ASCEND_COMPAT_AUTO_ACTIVATE", "ASCEND_COMPAT_SIMULATE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    times = []
    for i in range(repeats + 1):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
        if i:
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def startup(simulate: bool, repeats: int) -> dict[str, float]:
    timed = "t=time.perf_counter(); import ascend_compat; ascend_compat.activate(); print((time.perf_counter()-t)*1e3)"
    install = "from ascend_compat import simulate; simulate.install()\n" if simulate else ""
    prelude = "import time\nimport torch\n" + install
    return {
        "import_ascend_compat_ms": _fresh(
            "import time; t=time.perf_counter(); import ascend_compat; print((time.perf_counter()-t)*1e3)", repeats
        ),
        "first_activate_ms": _fresh(prelude + "import gc; gc.collect()\n" + timed, repeats),
        "first_activate_unsettled_gc_ms": _fresh(prelude + timed, repeats),
    }


def _enter(ctx: Any) -> None:
    with ctx:
        pass


def call_pairs(torch: Any, t: str) -> dict[str, tuple[Fn, Fn]]:
    d = torch.device(t)
    x = torch.ones(16, device=d)
    sync = getattr(torch, t).synchronize if t != "cpu" else (lambda: None)
    return {
        'torch.device("cuda")': (lambda: torch.device("cuda"), lambda: torch.device(t)),
        "x.cuda()": (lambda: x.cuda(), lambda: x.to(d)),
        'x.to("cuda")': (lambda: x.to("cuda"), lambda: x.to(t)),
        'torch.zeros(16, device="cuda")': (lambda: torch.zeros(16, device="cuda"), lambda: torch.zeros(16, device=t)),
        "torch.cuda.synchronize()": (lambda: torch.cuda.synchronize(), sync),
        'with torch.autocast("cuda")': (lambda: _enter(torch.autocast("cuda")), lambda: _enter(torch.autocast(t))),
        "torch.zeros(16) (passthrough)": (lambda: torch.zeros(16), lambda: torch.zeros(16)),
    }  # fmt: skip


def train_steps(torch: Any, t: str, shim_on: Fn, shim_off: Fn) -> tuple[Fn, Fn]:
    """(CUDA-script step, built and run with the shim on; the same step written natively for the target)."""
    d = torch.device(t)

    def make() -> Any:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))

    batch = torch.randn(32, 64)
    shim_on()
    try:
        cuda_model = make().cuda()
    finally:
        shim_off()
    cuda_opt = torch.optim.SGD(cuda_model.parameters(), lr=1e-3)
    native_model = make().to(d)
    native_opt = torch.optim.SGD(native_model.parameters(), lr=1e-3)
    sync = getattr(torch, t).synchronize if t != "cpu" else (lambda: None)

    def cuda_step() -> None:
        x = batch.cuda(non_blocking=True)
        noise = torch.randn(32, 64, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = (cuda_model(x).float() - noise).pow(2).mean()
        cuda_opt.zero_grad(set_to_none=True)
        loss.backward()
        cuda_opt.step()
        torch.cuda.synchronize()

    def native_step() -> None:
        x = batch.to(d, non_blocking=True)
        noise = torch.randn(32, 64, device=d)
        with torch.autocast(t, dtype=torch.bfloat16):
            loss = (native_model(x).float() - noise).pow(2).mean()
        native_opt.zero_grad(set_to_none=True)
        loss.backward()
        native_opt.step()
        sync()

    return cuda_step, native_step


def measure(args: argparse.Namespace) -> dict[str, Any]:
    start = startup(args.simulate, args.repeats)
    import torch

    if args.simulate:
        from ascend_compat import simulate

        simulate.install()
    import ascend_compat

    torch.set_num_threads(1)
    target = ascend_compat.activate()
    ascend_compat.deactivate()
    on, off = ascend_compat.activate, ascend_compat.deactivate
    calls = []
    for name, (shim, native) in call_pairs(torch, target).items():
        calls.append({"call": name, **interleaved(shim, native, 2000, args.repeats, on, off)})
    cuda_step, native_step = train_steps(torch, target, on, off)
    step = interleaved(cuda_step, native_step, 20, args.repeats, on, off)
    return {"target": target, "torch": torch.__version__, "repeats": args.repeats, "calls": calls,
            "train_step": step, **start}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulate", action="store_true", help="target the simulated NPU instead of the CPU")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"target {result['target']}, torch {result['torch']}, interleaved A (shim) / B (native), "
          f"median of {args.repeats}, one thread")  # fmt: skip
    print(f"{'call':34} {'native ns':>10} {'shim ns':>10} {'ratio':>7} {'added ns':>9} {'spread':>8}")
    for r in result["calls"]:
        print(f"{r['call']:34} {r['native_ns']:>10.0f} {r['shim_ns']:>10.0f} {r['ratio']:>7.3f} "
              f"{r['added_ns']:>9.0f} {r['spread_ns']:>8.0f}")  # fmt: skip
    s = result["train_step"]
    print(f"train step (CUDA script vs native): shim {s['shim_ns'] / 1e3:.1f} us, "
          f"native {s['native_ns'] / 1e3:.1f} us, ratio {s['ratio']:.4f}")  # fmt: skip
    print(f"import ascend_compat: {result['import_ascend_compat_ms']:.2f} ms; first import+activate() after import "
          f"torch: {result['first_activate_ms']:.2f} ms (gc settled), "
          f"{result['first_activate_unsettled_gc_ms']:.2f} ms (unsettled)")  # fmt: skip


if __name__ == "__main__":
    main()
