"""Recompiles and wall time of ``torch.compile(dynamic=False)`` over varying sequence lengths, with and without
``ShapeBucketer``. Run by hand: ``python benchmarks/bench_compile_buckets.py [inductor|eager]`` (inductor takes
minutes on 2 cores: every distinct length is a C++ compile without bucketing)."""

from __future__ import annotations

import random
import sys
import time

import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounterWithBackend

from ascend_compat.cuda_shim.compile_helpers import ShapeBucketer

backend = sys.argv[1] if len(sys.argv) > 1 else "inductor"
random.seed(0)
lengths = [random.randint(1, 128) for _ in range(40)]
layer = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64))


def step(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (layer(x) * mask.unsqueeze(-1)).sum(1)


def run(bucketer: ShapeBucketer | None) -> tuple[int, float]:
    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    f = torch.compile(step, backend=counter, dynamic=False)
    t0 = time.perf_counter()
    with torch._dynamo.config.patch(recompile_limit=256), torch.no_grad():
        for n in lengths:
            x = torch.randn(4, n, 64)
            if bucketer is None:
                mask = torch.ones(4, n)
            else:  # pad the sequence dimension (last after the transpose) up to its bucket
                padded, mask = bucketer.pad_with_mask(x.transpose(1, 2))
                x, mask = padded.transpose(1, 2), mask[:, 0, :]
            f(x, mask.float())
    return counter.frame_count, time.perf_counter() - t0


if __name__ == "__main__":
    print("distinct lengths:", len(set(lengths)), "calls:", len(lengths), "backend:", backend)
    compiles, wall = run(None)
    print(f"no bucketing: compiles={compiles} wall={wall:.1f}s")
    buckets = ShapeBucketer([32, 64, 128])
    compiles, wall = run(buckets)
    print(f"buckets 32/64/128: compiles={compiles} wall={wall:.1f}s", buckets.stats())
