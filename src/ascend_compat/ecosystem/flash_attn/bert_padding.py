"""``flash_attn.bert_padding``: move between padded (batch, seqlen, …) and packed (total_tokens, …) layouts."""

from __future__ import annotations

from typing import Optional

import torch
from torch.nn import functional

__all__ = ["index_first_axis", "index_put_first_axis", "pad_input", "unpad_input"]


def index_first_axis(input: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """``input[indices]`` along the first axis (differentiable)."""
    return torch.index_select(input, 0, indices)


def index_put_first_axis(values: torch.Tensor, indices: torch.Tensor, first_axis_dim: int) -> torch.Tensor:
    """A zero tensor of ``first_axis_dim`` rows with ``values`` written at ``indices`` (differentiable)."""
    out = values.new_zeros((first_axis_dim, *values.shape[1:]))
    return out.index_put((indices,), values)


def unpad_input(
    hidden_states: torch.Tensor, attention_mask: torch.Tensor, unused_mask: Optional[torch.Tensor] = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, torch.Tensor]:
    """Pack the tokens the mask keeps.

    Returns (packed states, indices into the flattened batch, cu_seqlens (int32, batch + 1), max seqlen,
    used seqlens per batch row). ``unused_mask`` marks tokens that are kept in the packing but not counted as used.
    """
    kept = attention_mask if unused_mask is None else (attention_mask.bool() | unused_mask.bool())
    seqlens = kept.sum(dim=-1, dtype=torch.int32)
    used = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(kept.flatten(), as_tuple=False).flatten()
    max_seqlen = int(seqlens.max().item()) if seqlens.numel() else 0
    cu_seqlens = functional.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    return index_first_axis(hidden_states.flatten(0, 1), indices), indices, cu_seqlens, max_seqlen, used


def pad_input(hidden_states: torch.Tensor, indices: torch.Tensor, batch: int, seqlen: int) -> torch.Tensor:
    """Inverse of :func:`unpad_input`: (total_tokens, …) back to (batch, seqlen, …) with zeros in the padding."""
    out = index_put_first_axis(hidden_states, indices, batch * seqlen)
    return out.reshape(batch, seqlen, *hidden_states.shape[1:])
