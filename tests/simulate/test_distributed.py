"""Two torchrun workers train with DDP over the simulated hccl backend."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

WORKER = """
import os, torch, torch.distributed as dist
from ascend_compat import simulate
simulate.install_from_env(default=True)
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local)
dist.init_process_group("hccl")
assert dist.get_backend() == "hccl"
dev = torch.device("npu", local)
t = torch.full((4,), float(rank + 1), device=dev)
dist.all_reduce(t)
assert t.device == dev and t.cpu().tolist() == [3.0] * 4, t
gathered = [torch.zeros(2, device=dev) for _ in range(2)]
dist.all_gather(gathered, torch.full((2,), float(rank), device=dev))
assert [g.cpu().tolist() for g in gathered] == [[0.0, 0.0], [1.0, 1.0]]
b = torch.arange(3.0, device=dev) * (rank + 1)
dist.broadcast(b, src=1)
assert b.cpu().tolist() == [0.0, 2.0, 4.0]
torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(dev)
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
g = torch.Generator().manual_seed(100 + rank)
x, y = torch.randn(32, 8, generator=g).to(dev), torch.randn(32, 1, generator=g).to(dev)
losses = []
for _ in range(15):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(ddp(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert losses[-1] < losses[0], losses
w = model[0].weight.detach().clone()
ws = [torch.zeros_like(w) for _ in range(2)]
dist.all_gather(ws, w)
assert torch.equal(ws[0].cpu(), ws[1].cpu()), "replicas diverged"
assert all(p.grad.device == dev for p in model.parameters())
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} OK loss {losses[0]:.4f} -> {losses[-1]:.4f}")
"""


@pytest.mark.slow
def test_torchrun_ddp_on_simulated_hccl(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER))
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "ASCEND_COMPAT_SIMULATE": "npu", "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "rank 0 OK" in proc.stdout and "rank 1 OK" in proc.stdout


# A "gloo" group with the model on the npu (as PyTorch's "cpu:gloo,cuda:gloo"): npu tensors go through the
# simulated hccl, CPU tensors (all_gather_object, host tensors) straight to gloo.
GLOO_WORKER = """
import os, torch, torch.distributed as dist
from ascend_compat import simulate
simulate.install_from_env(default=True)
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local)
BACKEND = os.environ["TEST_BACKEND"]
dist.init_process_group(BACKEND)
assert dist.get_backend() == BACKEND, dist.get_backend()
dev = torch.device("npu", local)
t = torch.full((4,), float(rank + 1), device=dev)
dist.all_reduce(t)
assert t.device == dev and t.cpu().tolist() == [3.0] * 4, t
c = torch.full((2,), float(rank + 1))
dist.all_reduce(c)
assert c.tolist() == [3.0, 3.0], c
gathered = [torch.zeros(2, device=dev) for _ in range(2)]
dist.all_gather(gathered, torch.full((2,), float(rank), device=dev))
assert [g.cpu().tolist() for g in gathered] == [[0.0, 0.0], [1.0, 1.0]]
objs = [None, None]
dist.all_gather_object(objs, {"rank": rank})
assert objs == [{"rank": 0}, {"rank": 1}], objs
sub = dist.new_group([0, 1])
assert dist.get_backend(sub) == BACKEND
dist.all_reduce(t, group=sub)
torch.manual_seed(rank)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(dev)
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
g = torch.Generator().manual_seed(100 + rank)
x, y = torch.randn(32, 8, generator=g).to(dev), torch.randn(32, 1, generator=g).to(dev)
for _ in range(5):
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    opt.step()
w = model[0].weight.detach().clone()
ws = [torch.zeros_like(w) for _ in range(2)]
dist.all_gather(ws, w)
assert torch.equal(ws[0].cpu(), ws[1].cpu()), "replicas diverged"
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} OK")
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["gloo", "cpu:gloo,npu:hccl"])
def test_torchrun_gloo_group_takes_npu_tensors(tmp_path, backend):
    script = tmp_path / "worker.py"
    script.write_text(GLOO_WORKER)
    env = {**__import__("os").environ, "ASCEND_COMPAT_SIMULATE": "npu", "OMP_NUM_THREADS": "1", "TEST_BACKEND": backend}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "rank 0 OK" in proc.stdout and "rank 1 OK" in proc.stdout


def _torchrun_under_run(tmp_path, source: str, *run_args: str) -> subprocess.CompletedProcess:
    """Two torchrun workers running ``source`` under ``ascend-compat run [run_args]``, outside the simulator env."""
    script = tmp_path / "worker.py"
    script.write_text(source)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ASCEND_COMPAT_SIM")}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "ascend_compat", "run", *run_args, str(script)],
        capture_output=True, text=True, timeout=300, env={**env, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


DEFAULT_BACKEND_SCRIPT = """
import torch, torch.distributed as dist
dist.init_process_group()  # no backend: every device's default, as "cpu:gloo,cuda:nccl" on CUDA
rank = dist.get_rank()
dev = torch.device("cuda", rank % torch.cuda.device_count())
torch.cuda.set_device(dev)
t = torch.ones(2, device=dev) * (rank + 1)
dist.all_reduce(t)
c = torch.ones(2) * (rank + 1)
dist.all_reduce(c)
print(f"rank {rank} {t.device.type} {t.tolist()} {c.tolist()}")
dist.destroy_process_group()
"""


@pytest.mark.slow
@pytest.mark.parametrize("simulate", [True, False])
def test_unchanged_script_without_backend_reduces_device_and_host_tensors(tmp_path, simulate):
    proc = _torchrun_under_run(tmp_path, DEFAULT_BACKEND_SCRIPT, *(["--simulate", "npu"] if simulate else []))
    kind = "npu" if simulate else "cpu"
    for rank in (0, 1):
        assert f"rank {rank} {kind} [3.0, 3.0] [3.0, 3.0]" in proc.stdout


OBJECT_SCRIPT = """
import torch, torch.distributed as dist
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
out = [None, None]
dist.all_gather_object(out, {"rank": rank})  # c10d runs object collectives on the group's cpu backend
objs = [rank * 10]
dist.broadcast_object_list(objs, src=1)
print(f"rank {rank} {out} {objs}")
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_object_collectives_on_an_nccl_group_under_the_simulator(tmp_path):
    proc = _torchrun_under_run(tmp_path, OBJECT_SCRIPT, "--simulate", "npu")
    for rank in (0, 1):
        assert f"rank {rank} [{{'rank': 0}}, {{'rank': 1}}] [10]" in proc.stdout


DEVICE_ID_SCRIPT = """
import os, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
dev = torch.device("cuda", rank)
torch.cuda.set_device(dev)
dist.init_process_group(backend="nccl", device_id=dev)  # FSDP2's example binds the group to its device
t = torch.ones(2, device=dev) * (rank + 1)
dist.all_reduce(t)
dist.all_reduce(t, group=dist.new_group([0, 1]))
print(f"rank {rank} {t.device.type} {t.tolist()}")
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_group_bound_to_a_device_id_under_the_simulator(tmp_path):
    proc = _torchrun_under_run(tmp_path, DEVICE_ID_SCRIPT, "--simulate", "npu")
    for rank in (0, 1):
        assert f"rank {rank} npu [6.0, 6.0]" in proc.stdout


FSDP2_SCRIPT = """
import os, torch, torch.distributed as dist
from ascend_compat import simulate
simulate.install_from_env(default=True)
from torch.distributed.fsdp import fully_shard
rank = int(os.environ["LOCAL_RANK"])
dev = torch.device("npu", rank)
# No set_device: as pytorch/examples' FSDP2 script, the group's device_id is the only binding (torch_npu's HCCL
# group makes it the current device; FSDP2 takes its device from current_device()).
dist.init_process_group(backend="hccl", device_id=dev)
torch.manual_seed(0)
with torch.device("meta"):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 4))
for layer in model:
    fully_shard(layer)
fully_shard(model)
model.to_empty(device=dev)
for p in model.parameters():
    torch.nn.init.normal_(p, std=0.1)  # DTensor's RNG tracker edits the generator's Philox offset
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8, device=dev)
losses = []
for _ in range(3):
    opt.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(f"rank {rank} {torch.npu.current_device()} {next(model.parameters()).grad.device} {losses[-1] < losses[0]}")
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_fsdp2_with_device_id_binding_and_dtensor_rng(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(FSDP2_SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)],
        capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    for rank in (0, 1):
        assert f"rank {rank} {rank} npu:{rank} True" in proc.stdout
