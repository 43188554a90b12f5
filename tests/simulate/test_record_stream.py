"""``Tensor.record_stream`` on the simulated npu: FSDP1 and DeepSpeed ZeRO-3 call it on every gathered parameter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def test_record_stream_accepts_an_npu_stream_and_refuses_another_devices(sim):
    torch = sim
    x = torch.arange(6.0, device="npu").reshape(2, 3)
    x.record_stream(torch.npu.current_stream())  # raised NotImplementedError (no kernel for it)
    s = torch.npu.Stream()
    with torch.npu.stream(s):
        y = x * 2
    y.record_stream(s)
    assert y.cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    with pytest.raises(RuntimeError, match="expected an npu stream for an npu tensor"):
        x.record_stream(torch.Stream("cpu"))


FSDP_WORKER = """
import os, torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from ascend_compat import simulate
simulate.install_from_env(default=True)
local = int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local)
dist.init_process_group("hccl")
torch.manual_seed(0)
model = FSDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)),
             device_id=torch.device("npu", local))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(100 + local)
x, y = torch.randn(32, 8, generator=g).npu(), torch.randn(32, 1, generator=g).npu()
losses = []
for _ in range(10):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert losses[-1] < losses[0], losses
dist.destroy_process_group()
with open(f"rank{local}.ok", "w") as f:  # a file each: two ranks' prints can interleave on one stdout
    f.write(f"{losses[0]:.4f} -> {losses[-1]:.4f}")
"""


@pytest.mark.slow
def test_fsdp1_trains_under_torchrun_on_the_simulated_npu(tmp_path):
    script = tmp_path / "fsdp.py"
    script.write_text(textwrap.dedent(FSDP_WORKER))
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "ASCEND_COMPAT_SIMULATE": "npu", "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert (tmp_path / "rank0.ok").is_file() and (tmp_path / "rank1.ok").is_file(), proc.stdout[-3000:]
