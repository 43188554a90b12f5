"""Model factories for ``bench model --factory`` tests (module:function, called as fn(batch_size))."""

from __future__ import annotations


def mlp(batch_size: int):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    return model, torch.randn(batch_size, 8)


def not_a_pair(batch_size: int):
    return "nothing useful"


def broken(batch_size: int):
    raise ValueError("factory exploded")
