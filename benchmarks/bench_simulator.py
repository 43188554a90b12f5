"""Simulated NPU overhead versus the same work on the CPU (run by hand; figures go in notes, not tests).

    python benchmarks/bench_simulator.py [--reps 20] [--pairs 11] [--threads N] [--json]

Both sides run the same code in one process and are interleaved sample by sample (CPU, npu, then npu, CPU,
...), so a load change on a shared machine hits both sides alike. Each repetition takes ``--pairs`` samples
of each side and reports the median of the paired ratios (each npu sample over the CPU sample beside it); a
case reports the median over repetitions and the worst repetition. Optimizers use the same implementation on
both sides (``foreach=False``, the CPU default): on ``npu`` torch would otherwise pick the multi-tensor path
and the comparison would measure that choice.

Goal (issue 15): every repetition of the training steps within 1.1x of the CPU.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from typing import Callable

Make = Callable[[str], Callable[[], object]]


def _sample(fn: Callable[[], object], inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner * 1e6


def measure(make: Make, inner: int, reps: int, pairs: int) -> dict[str, float]:
    """Interleaved CPU/npu samples of ``make(device)()``; medians in microseconds and per-repetition ratios."""
    cpu, npu = make("cpu"), make("npu")
    for _ in range(3):  # warm up both sides (allocator caches, lazy inits)
        cpu()
        npu()
    ratios, cpu_all, npu_all = [], [], []
    for rep in range(reps):
        c_s, n_s = [], []
        for i in range(pairs):
            order = ((cpu, c_s), (npu, n_s)) if (rep + i) % 2 == 0 else ((npu, n_s), (cpu, c_s))
            for fn, acc in order:
                acc.append(_sample(fn, inner))
        # each npu sample against the CPU sample taken next to it: a paired ratio cancels slow load drifts
        ratios.append(statistics.median(n / c for n, c in zip(n_s, c_s)))
        cpu_all += c_s
        npu_all += n_s
    return {
        "cpu_us": round(statistics.median(cpu_all), 2),
        "npu_us": round(statistics.median(npu_all), 2),
        "ratio": round(statistics.median(ratios), 3),
        "worst_rep_ratio": round(max(ratios), 3),
    }


def _ops_cases(torch: object) -> list[tuple[str, Make, int]]:
    cases: list[tuple[str, Make, int]] = []
    for n in (16, 128, 512):

        def add(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)  # type: ignore[attr-defined]
            return lambda: a + b

        def mm(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)  # type: ignore[attr-defined]
            return lambda: a @ b

        cases.append((f"add {n}x{n}", add, max(5, 20000 // n)))
        cases.append((f"matmul {n}x{n}", mm, max(2, 2000 // n)))
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


def _gpt2_cases(torch: object) -> list[tuple[str, Make, int]]:
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

    return [("gpt2-tiny forward (2x32)", forward, 5), ("gpt2-tiny train step (2x32)", train, 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=20, help="repetitions (default 20)")
    parser.add_argument("--pairs", type=int, default=11, help="interleaved samples per side per repetition")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    parser.add_argument("--quick", action="store_true", help="only the training steps")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from ascend_compat import simulate

    simulate.install()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    cases = [] if args.quick else _ops_cases(torch)
    cases.append(("mlp train step (64x256)", _mlp_step(torch), 10))
    cases += _gpt2_cases(torch)
    if args.quick:
        cases = [c for c in cases if "train" in c[0]]
    rows = []
    for name, make, inner in cases:
        rows.append({"case": name, **measure(make, inner, args.reps, args.pairs)})
        if not args.json:
            r = rows[-1]
            print(f"{name:30} {r['cpu_us']:>10} {r['npu_us']:>10} {r['ratio']:>7} {r['worst_rep_ratio']:>7}",
                  flush=True)
    goal = all(r["worst_rep_ratio"] <= 1.1 for r in rows if "train" in r["case"])
    if args.json:
        print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "rows": rows,
                          "goal_train_step_within_1.1x_every_rep": goal}, indent=2))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.reps} reps x {args.pairs} pairs")
    print(f"{'case':30} {'cpu us':>10} {'npu us':>10} {'ratio':>7} {'worst':>7}  (medians; worst = worst rep)")
    print(f"goal (train steps within 1.1x in every rep): {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
