"""On a machine with real CUDA: activation must be a harmless no-op, and cheap (run by hand on a GPU machine).

    python benchmarks/bench_cuda_noop.py [--json]

Checks that nothing is patched and CUDA stays CUDA, and reports the time of `import ascend_compat`, of
`activate()`, and a small training step with the shim activated vs not (ratio measured in one run).
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def main() -> None:
    t0 = time.perf_counter()
    import ascend_compat

    import_ms = (time.perf_counter() - t0) * 1e3
    assert "torch" not in sys.modules, "import ascend_compat imported torch"
    import torch

    if not torch.cuda.is_available():
        sys.exit("no CUDA device: this check is for a GPU machine")
    originals = (torch.device, torch.zeros, torch.Tensor.to, torch.nn.Module.to, torch.cuda.is_available)
    t0 = time.perf_counter()
    target = ascend_compat.activate()
    activate_ms = (time.perf_counter() - t0) * 1e3
    from ascend_compat import cuda_shim

    assert target is None and not cuda_shim.is_activated(), target
    now = (torch.device, torch.zeros, torch.Tensor.to, torch.nn.Module.to, torch.cuda.is_available)
    assert all(a is b for a, b in zip(originals, now)), "something was patched on real CUDA"
    x = torch.ones(4, device="cuda")
    assert x.device.type == "cuda" and torch.device("cuda").type == "cuda"

    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters())
    data = torch.randn(256, 1024, device="cuda")

    def step() -> None:
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(data).float().pow(2).mean()
        loss.backward()
        opt.step()

    def timed(n: int = 50) -> float:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n * 1e3

    on = statistics.median(timed() for _ in range(5))  # activated (a no-op here)
    ascend_compat.deactivate()
    off = statistics.median(timed() for _ in range(5))
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "noop_reason": cuda_shim.noop_reason(),
        "import_ms": round(import_ms, 2),
        "activate_ms": round(activate_ms, 2),
        "train_step_ms_shim_on": round(on, 3),
        "train_step_ms_shim_off": round(off, 3),
        "ratio_on_off": round(on / off, 4),
    }
    print(json.dumps(result, indent=2) if "--json" in sys.argv else result)


if __name__ == "__main__":
    main()
