"""A model that uses the vendored selective scan (the repository's own mamba_ssm fork)."""

import torch
from mamba_ssm import selective_scan


class Tiny(torch.nn.Module):
    def forward(self, x):
        return selective_scan(x)


def make_model():
    return Tiny(), (torch.ones(2, 3),)
