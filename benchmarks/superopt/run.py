"""Superoptimizer benchmarks on Mirage's workloads: search time, chosen plan, modelled traffic vs eager and the floor.

The floor is the traffic no plan can go below: every input read once and every output written once.

    python benchmarks/superopt/run.py [--target ascend-910b] [--json OUT.json] [--time]

``--time`` (on a CUDA machine with Triton) also runs the plan with ``backend='triton'`` and times it against
torch eager and ``torch.compile`` in the same process (median of ``--iters`` runs after warm-up).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads

from ascend_compat.superopt._data import target as load_target
from ascend_compat.superopt.search import run_search

CASES = [
    ("gated_mlp", {}), ("rmsnorm_linear", {}), ("lora", {}),
    ("gqa_decode b=1", {"batch": 1}), ("gqa_decode b=8", {"batch": 8}),
    ("gqa_decode b=1 32k", {"batch": 1, "kv_len": 32768}),  # long-context decode: where split-K pays
]


def online_variants(res: Any, tgt: dict[str, Any]) -> list[dict[str, Any]]:
    """The best one-kernel online softmax (V's columns tiled) and the best split-K candidate, as the model sees them."""
    from ascend_compat.superopt.checks import programs

    best: dict[str, Any] = {}
    for c in res.candidates:
        if len(c.kernels) != 1 or c.kernels[0].schedule.online is None:
            continue
        k = c.kernels[0]
        kind = f"split-K x{k.tiles['SPLITS']}" if "SPLITS" in k.tiles else "one kernel"
        best.setdefault(kind.split(" x")[0], {"variant": kind, "tiles": k.tiles,
                                               "programs": programs(k.schedule, k.tiles, tgt)[0],
                                               "model_us": round(c.cost.time_us, 1),
                                               "dram_mb": round(c.cost.dram_bytes / 1e6, 2),
                                               "l2_mb": round(c.cost.l2_bytes / 1e6, 2), "launches": c.cost.kernels,
                                               "chosen": c is res.candidates[0]})
    return list(best.values())


def floor_bytes(g: Any) -> int:
    """The least memory traffic any plan can have: every input read once, every output written once."""
    from ascend_compat.superopt.cost import nbytes

    return sum(nbytes(g, i) for i in g.inputs) + sum(nbytes(g, o) for o in dict.fromkeys(g.outputs))


def _median_ms(fn: Any, iters: int) -> float:
    import torch

    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def _gpu_times(g: Any, iters: int) -> dict[str, float]:
    import torch

    from ascend_compat.superopt.reference import random_inputs, run_graph

    opt = g.superoptimize(backend="triton")
    ins = random_inputs(g, device="cuda")
    compiled = torch.compile(lambda *xs: run_graph(g, list(xs)))
    eager = _median_ms(lambda: run_graph(g, ins), iters)
    return {"eager_ms": eager, "compile_ms": _median_ms(lambda: compiled(*ins), iters),
            "superopt_ms": _median_ms(lambda: opt(inputs=ins), iters)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="ascend-910b")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--time", action="store_true", help="time on CUDA (needs a GPU and Triton)")
    ap.add_argument("--iters", type=int, default=100)
    args = ap.parse_args()
    tgt = load_target(args.target)
    rows = []
    print("| workload | search s | plan | rewrites | kernels (eager) | modelled MB (eager) | ratio "
          "| floor MB | plan / floor | model us (eager) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, kw in CASES:
        g = workloads.WORKLOADS[label.split()[0]](**kw)
        res = run_search(g, tgt, "triton" if tgt["vendor"] == "nvidia" else "ascend")
        best, eager = res.candidates[0], res.eager
        row = {"workload": label, "search_s": round(res.seconds, 2), "plan": best.summary(),
               "rewrites": best.rewrites, "kernels": len(best.kernels), "eager_kernels": eager.kernels,
               "dram_mb": round(best.cost.dram_bytes / 1e6, 2), "eager_dram_mb": round(eager.dram_bytes / 1e6, 2),
               "floor_mb": round(floor_bytes(g) / 1e6, 2), "vs_floor": round(best.cost.dram_bytes / floor_bytes(g), 4),
               "model_us": round(best.cost.time_us, 1), "eager_model_us": round(eager.time_us, 1),
               "candidates": len(res.candidates), "online_variants": online_variants(res, tgt)}
        if args.time:
            row.update(_gpu_times(g, args.iters))
        rows.append(row)
        print(f"| {label} | {row['search_s']} | {row['plan']} | {', '.join(best.rewrites) or '-'} | "
              f"{row['kernels']} ({row['eager_kernels']}) | {row['dram_mb']} ({row['eager_dram_mb']}) | "
              f"{row['dram_mb'] / row['eager_dram_mb']:.2f} | {row['floor_mb']} | "
              f"{row['vs_floor']:.4f} | {row['model_us']} ({row['eager_model_us']}) |")
    print("\n| GQA online-softmax variant | programs | launches | model us | DRAM MB | L2 MB | chosen |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        for v in row.get("online_variants", []):
            print(f"| {row['workload']}: {v['variant']} (BLOCK_N {v['tiles']['BLOCK_N']}) | {v['programs']} | "
                  f"{v['launches']} | {v['model_us']} | {v['dram_mb']} | {v['l2_mb']} | {'yes' * v['chosen']} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"target": tgt["name"], "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
