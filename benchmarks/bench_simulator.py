"""Simulated NPU overhead versus the same work on the CPU (run by hand; figures go in notes, not tests).

    python benchmarks/bench_simulator.py [--reps 20] [--min-ms 50] [--threads N] [--load N] [--quick] [--json]

Both sides run the same code in one process. A repetition runs both sides back to back, alternating chunk by
chunk (a chunk: calls lasting about 1 ms on a quiet machine; CPU then npu, npu then CPU, ...), until each side has
run the same number of calls for at least ``--min-ms`` (one scheduler hiccup then costs a few percent, not 2x).
The repetition's ratio is the npu's total time over the CPU's: nothing is dropped or smoothed inside it.
Each case reports every repetition's ratio, their median, the worst and the best (a load spike that hits one side
of a pair shows up as often below 1 as above), the ratio of the total times, and the same ratio in process CPU
time (``time.process_time``: what the work cost, whatever else the machine ran meanwhile).

``--load N`` runs N busy-looping processes for the duration (stopped at the end), a reproducible loaded machine.
Optimizers use the same implementation on both sides (``foreach=False``, the CPU default): on ``npu`` torch
would otherwise pick the multi-tensor path and the comparison would measure that choice.

Goal (issue 15): every repetition of the training steps within 1.1x of the CPU.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import subprocess
import sys
import time
from typing import Callable

Make = Callable[[str], Callable[[], object]]


def _sample(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    """Wall and process CPU seconds of ``calls`` calls of ``fn``."""
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return time.perf_counter() - w0, time.process_time() - c0


def _calls_for(fn: Callable[[], object], seconds: float) -> int:
    """Calls that take at least ``seconds``, from the fastest of a few short timings (load only slows calls)."""
    calls = 1
    while True:
        wall, _ = _sample(fn, calls)
        if wall >= 2e-3:  # long enough for the clock; take the fastest of three such timings
            best = min([wall] + [_sample(fn, calls)[0] for _ in range(2)]) / calls
            return max(1, math.ceil(seconds / best))
        calls *= 4


def measure(make: Make, reps: int, min_ms: float) -> dict[str, object]:
    """Interleaved CPU/npu work of ``make(device)()``; per-repetition ratios and their summary.

    A repetition alternates the two sides chunk by chunk (a chunk: calls lasting ~1 ms; CPU first, then npu
    first, ...) until each side has run for at least ``min_ms``; its ratio is the npu's total time over the
    CPU's. Fine interleaving puts both sides under the same load: a spike longer than a chunk hits both.
    """
    cpu, npu = make("cpu"), make("npu")
    for _ in range(3):  # warm up both sides (allocator caches, lazy inits)
        cpu()
        npu()
    chunk = max(_calls_for(cpu, 1e-3), _calls_for(npu, 1e-3))
    chunks = max(1, math.ceil(_calls_for(cpu, min_ms / 1e3) / chunk))
    walls: dict[str, list[float]] = {"cpu": [], "npu": []}
    cpus: dict[str, list[float]] = {"cpu": [], "npu": []}
    for _ in range(reps):
        rep_wall, rep_cpu = {"cpu": 0.0, "npu": 0.0}, {"cpu": 0.0, "npu": 0.0}
        for i in range(chunks):
            for side, fn in (("cpu", cpu), ("npu", npu)) if i % 2 == 0 else (("npu", npu), ("cpu", cpu)):
                wall, cpu_s = _sample(fn, chunk)
                rep_wall[side] += wall
                rep_cpu[side] += cpu_s
        for side in ("cpu", "npu"):
            walls[side].append(rep_wall[side])
            cpus[side].append(rep_cpu[side])
    calls = chunk * chunks
    ratios = [n / c for n, c in zip(walls["npu"], walls["cpu"])]
    cpu_ratios = [n / c for n, c in zip(cpus["npu"], cpus["cpu"]) if c > 0]
    return {
        "calls_per_rep_per_side": calls,
        "cpu_us": round(statistics.median(walls["cpu"]) / calls * 1e6, 2),
        "npu_us": round(statistics.median(walls["npu"]) / calls * 1e6, 2),
        "ratio": round(statistics.median(ratios), 3),
        "worst_rep_ratio": round(max(ratios), 3),
        "best_rep_ratio": round(min(ratios), 3),
        "total_ratio": round(sum(walls["npu"]) / sum(walls["cpu"]), 3),
        "cpu_time_ratio": round(statistics.median(cpu_ratios), 3) if cpu_ratios else None,
        "rep_ratios": [round(r, 3) for r in ratios],
    }


def _ops_cases(torch: object) -> list[tuple[str, Make]]:
    cases: list[tuple[str, Make]] = []
    for n in (16, 128, 512):

        def add(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)  # type: ignore[attr-defined]
            return lambda: a + b

        def mm(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)  # type: ignore[attr-defined]
            return lambda: a @ b

        cases.append((f"add {n}x{n}", add))
        cases.append((f"matmul {n}x{n}", mm))
    return cases


def _mlp_step(torch: object) -> Make:
    nn = torch.nn  # type: ignore[attr-defined]
    torch.manual_seed(0)  # type: ignore[attr-defined]
    base = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def make(dev: str) -> Callable[[], object]:
        model = copy.deepcopy(base).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)  # type: ignore[attr-defined]
        x = torch.randn(64, 256, device=dev)  # type: ignore[attr-defined]
        y = torch.randint(0, 10, (64,), device=dev)  # type: ignore[attr-defined]

        def step() -> object:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    return make


def _gpt2_cases(torch: object) -> list[tuple[str, Make]]:
    import transformers

    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2)
    torch.manual_seed(0)  # type: ignore[attr-defined]
    base = transformers.GPT2LMHeadModel(config)

    def forward(dev: str) -> Callable[[], object]:
        model = copy.deepcopy(base).to(dev).eval()
        ids = torch.randint(0, config.vocab_size, (2, 32), device=dev)  # type: ignore[attr-defined]

        def run() -> object:
            with torch.no_grad():  # type: ignore[attr-defined]
                return model(ids).logits

        return run

    def train(dev: str) -> Callable[[], object]:
        model = copy.deepcopy(base).to(dev).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)  # type: ignore[attr-defined]
        ids = torch.randint(0, config.vocab_size, (2, 32), device=dev)  # type: ignore[attr-defined]

        def run() -> object:
            opt.zero_grad()
            loss = model(ids, labels=ids).loss
            loss.backward()
            opt.step()
            return loss

        return run

    return [("gpt2-tiny forward (2x32)", forward), ("gpt2-tiny train step (2x32)", train)]


def _busy_loops(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that spin until stopped: a loaded machine that another run can reproduce."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _print_row(r: dict[str, object]) -> None:
    print(f"{r['case']:28} {r['cpu_us']:>11} {r['npu_us']:>11} {r['ratio']:>6} {r['worst_rep_ratio']:>6} "
          f"{r['best_rep_ratio']:>6} {r['total_ratio']:>6} {r['cpu_time_ratio']!s:>6}", flush=True)
    print(f"{'':28} reps: " + " ".join(f"{x:.2f}" for x in r["rep_ratios"]), flush=True)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=20, help="repetitions (default 20)")
    parser.add_argument("--min-ms", type=float, default=50.0, help="least time per side per repetition (default 50 ms)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes to run meanwhile (default 0)")
    parser.add_argument("--quick", action="store_true", help="only the training steps")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.reps < 1 or args.min_ms <= 0 or args.threads < 0 or args.load < 0:
        parser.error("--reps must be >= 1, --min-ms > 0, --threads and --load >= 0")

    from ascend_compat import simulate

    simulate.install()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    cases = [] if args.quick else _ops_cases(torch)
    cases.append(("mlp train step (64x256)", _mlp_step(torch)))
    cases += _gpt2_cases(torch)
    if args.quick:
        cases = [c for c in cases if "train" in c[0]]
    if not args.json:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.reps} reps of >= "
              f"{args.min_ms:g} ms per side, {args.load} busy process(es)")
        print(f"{'case':28} {'cpu us':>11} {'npu us':>11} {'median':>6} {'worst':>6} {'best':>6} {'total':>6} "
              f"{'cpu-t':>6}  (npu/cpu per rep; cpu-t: process CPU time)")
    rows = []
    load = _busy_loops(args.load)
    try:
        for name, make in cases:
            rows.append({"case": name, **measure(make, args.reps, args.min_ms)})
            if not args.json:
                _print_row(rows[-1])
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    goal = all(float(r["worst_rep_ratio"]) <= 1.1 for r in rows if "train" in str(r["case"]))  # type: ignore[arg-type]
    if args.json:
        print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "reps": args.reps,
                          "min_ms": args.min_ms, "load": args.load, "rows": rows,
                          "goal_train_step_within_1.1x_every_rep": goal}, indent=2))
        return
    print(f"goal (train steps within 1.1x in every rep): {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
