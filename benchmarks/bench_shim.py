"""Cost of the runtime shim's REAL redirections vs the native call on the same target (run by hand).

    python benchmarks/bench_shim.py [--simulate] [--repeats 7] [--json]

Times the code paths users hit (torch.device("cuda"), x.cuda(), factories with device="cuda",
torch.cuda.synchronize()) against the native call on the target, a small training step with the shim on vs off,
`import ascend_compat` and `activate()` (fresh interpreters). Ratios are measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable


def _ns(fn: Callable[[], object], inner: int, repeats: int) -> tuple[float, float]:
    for _ in range(100):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - t0) / inner)
    return statistics.median(samples), (max(samples) - min(samples))


def _startup(code: str, repeats: int) -> float:
    # As installed packages run: with cached bytecode (some sandboxes set PYTHONDONTWRITEBYTECODE); one warm-up.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for i in range(repeats + 1):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
        if i:
            times.append(float(out.stdout.strip()))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulate", action="store_true", help="target the simulated NPU instead of the CPU")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.simulate:
        os.environ["ASCEND_COMPAT_SIMULATE"] = "npu"

    import_ms = _startup(
        "import time; t=time.perf_counter(); import ascend_compat; print((time.perf_counter()-t)*1e3)", args.repeats
    )
    activate_ms = _startup(
        "import torch, time, os\n"
        + ("from ascend_compat import simulate; simulate.install()\n" if args.simulate else "")
        + "import ascend_compat; t=time.perf_counter(); ascend_compat.activate(); print((time.perf_counter()-t)*1e3)",
        args.repeats,
    )

    import torch

    import ascend_compat

    target = ascend_compat.activate()
    torch.set_num_threads(1)
    real_device = type(torch.ones(1).device)
    tgt = real_device(target)
    x = torch.ones(16)
    sync = getattr(torch, target).synchronize if target != "cpu" else (lambda: None)
    pairs = {
        'torch.device("cuda")': (lambda: torch.device("cuda"), lambda: real_device(target)),
        "x.cuda()": (lambda: x.cuda(), lambda: x.to(tgt)),
        'torch.zeros(16, device="cuda")': (lambda: torch.zeros(16, device="cuda"), lambda: torch.zeros(16, device=tgt)),
        "torch.cuda.synchronize()": (torch.cuda.synchronize, sync),
    }
    ascend_compat.deactivate()
    rows = []
    for name, (shimmed, native) in pairs.items():
        ascend_compat.activate()
        s_ns, s_spread = _ns(shimmed, 2000, args.repeats)
        ascend_compat.deactivate()
        n_ns, n_spread = _ns(native, 2000, args.repeats)
        rows.append(
            {"call": name, "native_ns": round(n_ns), "shim_ns": round(s_ns), "ratio": round(s_ns / n_ns, 3),
             "added_ns": round(s_ns - n_ns), "spread_ns": round(max(s_spread, n_spread))}
        )  # fmt: skip

    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)).to(tgt)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.randn(32, 64).to(tgt)

    def step() -> None:
        opt.zero_grad()
        model(data).pow(2).mean().backward()
        opt.step()

    on, off = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both sides
        ascend_compat.activate()
        on.append(_ns(step, 50, 1)[0])
        ascend_compat.deactivate()
        off.append(_ns(step, 50, 1)[0])
    result = {
        "target": target,
        "torch": torch.__version__,
        "calls": rows,
        "train_step_us": {
            "shim_on": round(statistics.median(on) / 1e3, 1),
            "shim_off": round(statistics.median(off) / 1e3, 1),
        },
        "train_step_ratio": round(statistics.median(on) / statistics.median(off), 4),
        "import_ascend_compat_ms": round(import_ms, 2),
        "activate_ms": round(activate_ms, 2),
    }  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"target {target}, torch {torch.__version__}, median of {args.repeats}")
    print(f"{'call':34} {'native ns':>10} {'shim ns':>10} {'ratio':>7} {'added ns':>9}")
    for r in rows:
        print(f"{r['call']:34} {r['native_ns']:>10} {r['shim_ns']:>10} {r['ratio']:>7} {r['added_ns']:>9}")
    ts = result["train_step_us"]
    print(f"train step: shim on {ts['shim_on']} us, off {ts['shim_off']} us, ratio {result['train_step_ratio']}")
    print(f"import ascend_compat: {import_ms:.2f} ms; activate(): {activate_ms:.2f} ms")


if __name__ == "__main__":
    main()
