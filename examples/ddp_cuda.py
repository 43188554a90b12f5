"""An ordinary multi-GPU DDP script (NCCL, one process per GPU), not modified for Ascend.

torchrun --standalone --nproc_per_node=2 -m ascend_compat run --simulate npu examples/ddp_cuda.py
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
rank = dist.get_rank()

torch.manual_seed(rank)  # different initial weights on purpose: DDP broadcasts rank 0's
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).cuda()
ddp = DDP(model, device_ids=[local_rank])
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)

g = torch.Generator().manual_seed(100 + rank)
x = torch.randn(64, 16, generator=g).cuda()
y = x.sum(dim=1, keepdim=True).div(4)
losses = []
for _ in range(20):
    opt.zero_grad()
    loss = nn.functional.mse_loss(ddp(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())

w = model[0].weight.detach().clone()
gathered = [torch.zeros_like(w) for _ in range(dist.get_world_size())]
dist.all_gather(gathered, w)
assert all(torch.equal(gathered[0], t) for t in gathered), "replicas diverged"
assert losses[-1] < losses[0], losses
print(f"rank {rank}: backend {dist.get_backend()}, device {w.device}, loss {losses[0]:.4f} -> {losses[-1]:.4f}")
dist.destroy_process_group()
