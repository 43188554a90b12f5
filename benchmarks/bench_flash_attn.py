"""Host-side cost of the flash_attn drop-in per call vs calling npu_fusion_attention directly (run by hand).

    python benchmarks/bench_flash_attn.py [--repeats 7] [--json]

Two measurements on the simulated NPU, medians of ``--repeats`` runs, one thread:

- wrapper only: the drop-in's own work (validation, argument mapping, mask lookup, LSE) with the fused op replaced
  by a function that returns precomputed outputs, so nothing but the drop-in's Python runs (goal: <= 10 us/call);
- end to end: drop-in vs the direct op call with the same arguments on the simulator (the simulator's op is a
  reference implementation, so this ratio says little about NPU kernel time, only that nothing else is added).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable


def _us(fn: Callable[[], object], inner: int, repeats: int) -> float:
    for _ in range(50):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - t0) / inner / 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from ascend_compat import simulate

    simulate.install()
    import torch
    import torch_npu

    from ascend_compat.ecosystem.flash_attn import flash_attn_interface as fai

    torch.set_num_threads(1)
    b, s, h, d = 1, 128, 8, 64
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.float16, device="npu") for _ in range(3))
    cu = torch.tensor([0, 64, 128], dtype=torch.int32, device="npu")
    qt, kt, vt = (t.view(b * s, h, d) for t in (q, k, v))
    mask = fai._compressed_mask(q.device)
    scale = d**-0.5
    real_op = torch_npu.npu_fusion_attention
    canned = real_op(q, k, v, h, "BSND", atten_mask=mask, scale=scale, sparse_mode=3)
    canned_tnd = real_op(qt, kt, vt, h, "TND", atten_mask=mask, scale=scale, sparse_mode=3,
                         actual_seq_qlen=[64, 128], actual_seq_kvlen=[64, 128])  # fmt: skip

    def stub(*a: Any, **kw: Any) -> Any:
        return canned_tnd if a[4] == "TND" else canned

    cases = {
        "flash_attn_func causal": (
            lambda: fai.flash_attn_func(q, k, v, causal=True),
            lambda: real_op(q, k, v, h, "BSND", atten_mask=mask, scale=scale, sparse_mode=3),
        ),
        "flash_attn_func causal + LSE": (
            lambda: fai.flash_attn_func(q, k, v, causal=True, return_attn_probs=True),
            lambda: real_op(q, k, v, h, "BSND", atten_mask=mask, scale=scale, sparse_mode=3),
        ),
        "flash_attn_varlen_func causal": (
            lambda: fai.flash_attn_varlen_func(qt, kt, vt, cu, cu, 64, 64, causal=True),
            lambda: real_op(qt, kt, vt, h, "TND", atten_mask=mask, scale=scale, sparse_mode=3,
                            actual_seq_qlen=cu[1:].tolist(), actual_seq_kvlen=cu[1:].tolist()),
        ),
    }
    rows = []
    for name, (dropin, direct) in cases.items():
        fai._op = stub
        wrapper = _us(dropin, 2000, args.repeats)
        stub_call = _us(lambda: stub(q, k, v, h, "BSND"), 2000, args.repeats)
        fai._op = real_op
        end_dropin = _us(dropin, 20, args.repeats)
        end_direct = _us(direct, 20, args.repeats)
        rows.append(
            {
                "case": name,
                "wrapper_us": round(wrapper - stub_call, 2),
                "dropin_us": round(end_dropin, 1),
                "direct_us": round(end_direct, 1),
                "ratio": round(end_dropin / end_direct, 3),
            }
        )
    if args.json:
        print(json.dumps({"shape": [b, s, h, d], "rows": rows}, indent=2))
        return
    print(f"q/k/v (B, S, H, D) = {(b, s, h, d)}, float16, simulated npu, 1 thread, median of {args.repeats}")
    print(f"{'case':32} {'drop-in own cost':>17} {'drop-in':>10} {'direct':>10} {'ratio':>6}")
    for r in rows:
        print(f"{r['case']:32} {r['wrapper_us']:>14.2f} us {r['dropin_us']:>7.1f} us {r['direct_us']:>7.1f} us "
              f"{r['ratio']:>6.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
