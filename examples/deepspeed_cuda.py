"""An ordinary DeepSpeed ZeRO training script written for CUDA GPUs (NCCL), not modified for Ascend.

torchrun --standalone --nproc_per_node=2 -m ascend_compat run --simulate npu examples/deepspeed_cuda.py [--zero-stage 1]
"""

import argparse
import os

import deepspeed
import torch
import torch.distributed as dist
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--zero-stage", type=int, default=2)
parser.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="bf16")
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local_rank)
deepspeed.init_distributed(dist_backend="nccl")
rank = dist.get_rank()

config = {
    "train_micro_batch_size_per_gpu": 32,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "weight_decay": 0.0}},
    "zero_optimization": {"stage": args.zero_stage},
    "bf16": {"enabled": args.dtype == "bf16"},
    "fp16": {"enabled": args.dtype == "fp16", "initial_scale_power": 8},
}
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)

dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
g = torch.Generator().manual_seed(100 + rank)
x = torch.randn(32, 16, generator=g).cuda().to(dtype)
y = x.float().sum(dim=1, keepdim=True).div(4).to(dtype)
losses = []
for _ in range(args.steps):
    loss = nn.functional.mse_loss(engine(x), y)
    engine.backward(loss)
    engine.step()
    losses.append(loss.item())
torch.cuda.synchronize()

w = engine.module[0].weight.detach().float().clone()
gathered = [torch.zeros_like(w) for _ in range(dist.get_world_size())]
dist.all_gather(gathered, w)
assert all(torch.equal(gathered[0], t) for t in gathered), "replicas diverged"
assert losses[-1] < losses[0], losses
print(
    f"rank {rank}: {type(optimizer).__name__} stage {args.zero_stage} {args.dtype}, backend {dist.get_backend()}, "
    f"device {w.device}, loss {losses[0]:.4f} -> {losses[-1]:.4f}"
)
dist.destroy_process_group()
