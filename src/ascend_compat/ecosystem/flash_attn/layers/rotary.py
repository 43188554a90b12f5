"""``flash_attn.layers.rotary``: rotary position embeddings in plain torch ops (NPU-friendly, differentiable)."""

from __future__ import annotations

from typing import Optional, Union

import torch

__all__ = ["apply_rotary_emb", "apply_rotary_emb_func", "apply_rotary_emb_kv_", "apply_rotary_emb_qkv_"]


def _positions(
    x: torch.Tensor, seqlen_offsets: Union[int, torch.Tensor], cu_seqlens: Optional[torch.Tensor]
) -> torch.Tensor:
    """Rotary position of every token: (B, S) for batched x, (total,) for packed x with cu_seqlens."""
    dev = x.device
    if cu_seqlens is None:
        b, s = x.shape[0], x.shape[1]
        pos = torch.arange(s, device=dev).view(1, s).expand(b, s)
        if isinstance(seqlen_offsets, torch.Tensor):
            return pos + seqlen_offsets.to(device=dev, dtype=torch.int64).view(-1, 1)
        return pos + int(seqlen_offsets)
    lens = cu_seqlens[1:] - cu_seqlens[:-1]
    seg = torch.repeat_interleave(torch.arange(lens.numel(), device=dev), lens.to(dev))
    pos = torch.arange(x.shape[0], device=dev) - cu_seqlens.to(dev)[:-1][seg]
    if isinstance(seqlen_offsets, torch.Tensor):
        return pos + seqlen_offsets.to(device=dev, dtype=torch.int64)[seg]
    return pos + int(seqlen_offsets)


def apply_rotary_emb(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    interleaved: bool = False,
    inplace: bool = False,
    seqlen_offsets: Union[int, torch.Tensor] = 0,
    cu_seqlens: Optional[torch.Tensor] = None,
    max_seqlen: Optional[int] = None,
) -> torch.Tensor:
    """Rotate the first ``rotary_dim = 2 * cos.shape[-1]`` features of x.

    x: (batch, seqlen, nheads, headdim), or (total_tokens, nheads, headdim) with ``cu_seqlens``; cos/sin:
    (seqlen_rotary, rotary_dim / 2). ``interleaved``: rotate pairs (0, 1), (2, 3)… (GPT-J) instead of the two
    halves (GPT-NeoX).
    """
    half = cos.shape[-1]
    if 2 * half > x.shape[-1]:
        raise ValueError(f"apply_rotary_emb: rotary_dim {2 * half} exceeds head dim {x.shape[-1]}")
    pos = _positions(x, seqlen_offsets, cu_seqlens)
    c = cos[pos].unsqueeze(-2).float()
    s = sin[pos].unsqueeze(-2).float()
    xr = x[..., : 2 * half].float()
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        rot = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    else:
        x1, x2 = xr[..., :half], xr[..., half:]
        rot = torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    rot = rot.to(x.dtype)
    if inplace:
        x[..., : 2 * half] = rot
        return x
    return torch.cat((rot, x[..., 2 * half :]), dim=-1)


apply_rotary_emb_func = apply_rotary_emb


def apply_rotary_emb_qkv_(
    qkv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    cos_k: Optional[torch.Tensor] = None,
    sin_k: Optional[torch.Tensor] = None,
    interleaved: bool = False,
    seqlen_offsets: Union[int, torch.Tensor] = 0,
    num_heads_q: Optional[int] = None,
) -> torch.Tensor:
    """In place on packed qkv (batch, seqlen, 3, nheads, headdim), or (batch, seqlen, nheads_q + 2·nheads_k, headdim)
    with ``num_heads_q``: rotates q and k, leaves v."""
    cos_k = cos if cos_k is None else cos_k
    sin_k = sin if sin_k is None else sin_k
    if qkv.dim() == 5:
        q, k = qkv[:, :, 0], qkv[:, :, 1]
    else:
        if num_heads_q is None:
            raise ValueError("apply_rotary_emb_qkv_: num_heads_q is needed when qkv is 4-D")
        nk = (qkv.shape[2] - num_heads_q) // 2
        q, k = qkv[:, :, :num_heads_q], qkv[:, :, num_heads_q : num_heads_q + nk]
    apply_rotary_emb(q, cos, sin, interleaved, True, seqlen_offsets)
    apply_rotary_emb(k, cos_k, sin_k, interleaved, True, seqlen_offsets)
    return qkv


def apply_rotary_emb_kv_(
    kv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    interleaved: bool = False,
    seqlen_offsets: Union[int, torch.Tensor] = 0,
) -> torch.Tensor:
    """In place on packed kv (batch, seqlen, 2, nheads_k, headdim): rotates k only."""
    apply_rotary_emb(kv[:, :, 0], cos, sin, interleaved, True, seqlen_offsets)
    return kv
