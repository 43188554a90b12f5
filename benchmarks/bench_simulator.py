"""Simulated NPU overhead versus the same work on the CPU (run by hand; figures go in notes, not tests).

    python benchmarks/bench_simulator.py [--repeats 7] [--json]

Reports, per case, the median time on CPU and on the simulated npu and their ratio, measured in one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable


def _median_us(fn: Callable[[], object], inner: int, repeats: int) -> float:
    fn()  # warm up
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from ascend_compat import simulate

    simulate.install()
    import torch
    import transformers

    torch.set_num_threads(1)
    rows = []

    def case(name: str, make: Callable[[str], Callable[[], object]], inner: int) -> None:
        cpu = _median_us(make("cpu"), inner, args.repeats)
        npu = _median_us(make("npu"), inner, args.repeats)
        rows.append(
            {
                "case": name,
                "cpu_us": round(cpu, 2),
                "npu_us": round(npu, 2),
                "ratio": round(npu / cpu, 3),
                "added_us": round(npu - cpu, 2),
            }
        )

    for n in (16, 64, 128, 256, 512):
        inner = max(5, 20000 // n)

        def add(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
            return lambda: a + b

        def mm(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
            return lambda: a @ b

        case(f"add {n}x{n}", add, inner)
        case(f"matmul {n}x{n}", mm, max(3, inner // 8))

    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2)
    torch.manual_seed(0)
    base = transformers.GPT2LMHeadModel(config)

    def forward(dev: str) -> Callable[[], object]:
        import copy

        model = copy.deepcopy(base).to(dev).eval()
        ids = torch.randint(0, config.vocab_size, (2, 32), device=dev)

        def run() -> object:
            with torch.no_grad():
                return model(ids).logits

        return run

    def train(dev: str) -> Callable[[], object]:
        import copy

        model = copy.deepcopy(base).to(dev).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(0, config.vocab_size, (2, 32), device=dev)

        def run() -> object:
            opt.zero_grad()
            loss = model(ids, labels=ids).loss
            loss.backward()
            opt.step()
            return loss

        return run

    case("gpt2-tiny forward (2x32)", forward, 10)
    case("gpt2-tiny train step (2x32)", train, 3)

    if args.json:
        print(json.dumps({"torch": torch.__version__, "rows": rows}, indent=2))
        return
    print(f"torch {torch.__version__}, 1 thread, median of {args.repeats}")
    print(f"{'case':32} {'cpu us':>10} {'npu us':>10} {'ratio':>7} {'added us':>9}")
    for r in rows:
        print(f"{r['case']:32} {r['cpu_us']:>10} {r['npu_us']:>10} {r['ratio']:>7} {r['added_us']:>9}")


if __name__ == "__main__":
    main()
