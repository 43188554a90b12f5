import torch
from flash_attn import flash_attn_func
from kernelpkg.model import Tiny

model = Tiny().cuda()
device = "cuda"
out = flash_attn_func(torch.ones(1, device=device), torch.ones(1), torch.ones(1))
