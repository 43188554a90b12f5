"""``flash_attn.bert_padding``: move between padded (batch, seqlen, …) and packed (total_tokens, …) layouts."""

from __future__ import annotations

from typing import Optional

import torch
from torch.nn import functional

__all__ = [
    "index_first_axis",
    "index_put_first_axis",
    "pad_input",
    "unpad_input",
    "unpad_input_for_concatenated_sequences",
]


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


def unpad_input_for_concatenated_sequences(
    hidden_states: torch.Tensor, attention_mask_in_length: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Pack rows that each hold several short samples back to back (sample packing for fine-tuning).

    ``attention_mask_in_length`` (batch, seqlen) lists each row's sample lengths, then zeros: ``[[2, 3, 0, 0]]`` is
    a row whose first 2 tokens are one sample and next 3 another, the rest padding. Returns (packed states, indices
    into the flattened batch, cu_seqlens (int32, one entry per sample + 1), longest sample), so every sample
    becomes its own sequence for the varlen functions.
    """
    lengths = attention_mask_in_length
    seqlen = lengths.shape[-1]
    used = lengths.sum(dim=-1)
    kept = torch.arange(seqlen, device=lengths.device).view(1, -1) < used.view(-1, 1)
    flat = lengths.flatten()
    samples = flat[flat != 0]
    indices = torch.nonzero(kept.flatten(), as_tuple=False).flatten()
    max_seqlen = int(samples.max().item()) if samples.numel() else 0
    cu_seqlens = functional.pad(torch.cumsum(samples, dim=0, dtype=torch.int32), (1, 0))
    return index_first_axis(hidden_states.flatten(0, 1), indices), indices, cu_seqlens, max_seqlen


def pad_input(hidden_states: torch.Tensor, indices: torch.Tensor, batch: int, seqlen: int) -> torch.Tensor:
    """Inverse of :func:`unpad_input`: (total_tokens, …) back to (batch, seqlen, …) with zeros in the padding."""
    out = index_put_first_axis(hidden_states, indices, batch * seqlen)
    return out.reshape(batch, seqlen, *hidden_states.shape[1:])
