"""An ordinary CUDA training script, written for NVIDIA GPUs and not modified for Ascend.

Run it unchanged on the simulated NPU:   ascend-compat run --simulate npu --report examples/train_cuda.py
On a real Ascend machine:                ascend-compat run --report examples/train_cuda.py
"""

import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 1)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
scaler = torch.cuda.amp.GradScaler()
amp_dtype = torch.bfloat16 if torch.cuda.get_device_capability() >= (8, 0) else torch.float16

x_all = torch.randn(512, 32)
y_all = x_all.sum(dim=1, keepdim=True) / 8
scale = torch.ones(1, device="cuda") / 8  # factories with device="cuda"
print(
    f"GPU: {torch.cuda.get_device_name(0)}, {torch.cuda.get_device_properties(0).multi_processor_count} SMs, "
    f"capability {torch.cuda.get_device_capability()}"
)
loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(x_all, y_all), batch_size=64, shuffle=True, pin_memory=True
)

start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
losses = []
for epoch in range(3):
    for xb, yb in loader:
        xb, yb = xb.cuda(non_blocking=True), yb.to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp_dtype):
            loss = nn.functional.mse_loss(model(xb).float() * scale * 8, yb)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    losses.append(loss.item())
end.record()
torch.cuda.synchronize()

ckpt = os.path.join(tempfile.mkdtemp(), "cuda_ckpt.pt")  # a path containing "cuda" must stay as it is
torch.save(model.state_dict(), ckpt)
state = torch.load(ckpt, map_location="cuda:0")
assert os.path.basename(ckpt) == "cuda_ckpt.pt"

param = next(model.parameters())
print(f"device: {param.device} (torch.cuda.is_available() = {torch.cuda.is_available()})")
print(f"loss per epoch: {', '.join(f'{v:.4f}' for v in losses)}")
print(
    f"checkpoint reloaded on {state['0.weight'].device}; {start.elapsed_time(end):.1f} ms; "
    f"peak memory {torch.cuda.max_memory_allocated() / 2**10:.1f} KiB"
)
assert losses[-1] < losses[0], "loss did not decrease"
