"""``flash_attn.layers.rotary``: rotary position embeddings in plain torch ops (NPU-friendly, differentiable).

The functions and the ``RotaryEmbedding`` module follow flash-attn 2.8's semantics (and accept 2.7's
``pos_idx_in_fp32``); where flash-attn runs a Triton kernel, this runs a few torch ops on the tensor's device.
"""

from __future__ import annotations

from typing import Optional, Union, cast

import torch

__all__ = [
    "RotaryEmbedding",
    "apply_rotary_emb",
    "apply_rotary_emb_func",
    "apply_rotary_emb_kv_",
    "apply_rotary_emb_qkv_",
    "apply_rotary_emb_torch",
    "rotate_half",
]


def rotate_half(x: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """(x1, x2) → (-x2, x1) on the two halves of the last dim, or on each (even, odd) pair when ``interleaved``."""
    if not interleaved:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def apply_rotary_emb_torch(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False
) -> torch.Tensor:
    """Reference form: x (batch, seqlen, nheads, headdim); cos/sin (seqlen, rotary_dim / 2) or
    (batch, seqlen, rotary_dim / 2), one row per token (no offsets). Computes in x's dtype, as flash-attn's does."""
    r = cos.shape[-1] * 2
    if r > x.shape[-1]:
        raise ValueError(f"apply_rotary_emb_torch: rotary_dim {r} exceeds head dim {x.shape[-1]}")
    if interleaved:
        c, s = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    else:
        c, s = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    c, s = c.unsqueeze(-2), s.unsqueeze(-2)  # broadcast over heads
    xr = x[..., :r]
    return torch.cat((xr * c + rotate_half(xr, interleaved) * s, x[..., r:]), dim=-1)


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


class RotaryEmbedding(torch.nn.Module):
    """Rotary position embeddings (RoFormer) with a cos/sin cache, applied in place to q and k.

    ``dim``: the rotary dim (≤ head dim; the rest of each head is left as is). ``base``: the frequency base,
    ``inv_freq = 1 / base ** (arange(0, dim, 2) / dim)``. ``interleaved``: rotate (0, 1), (2, 3)… pairs (GPT-J) instead
    of the two halves (GPT-NeoX). ``scale_base``: XPos (Sun et al.) — q is scaled by ``zeta ** power`` and k by its
    inverse, ``zeta = (arange(0, dim, 2) + 0.4·dim) / (1.4·dim)``, ``power = (position - cache_len // 2) / scale_base``
    (so, as in flash-attn, the factors depend on the cache length). ``pos_idx_in_fp32`` (flash-attn ≤ 2.7; 2.8 always
    uses fp32): False builds positions in ``inv_freq``'s dtype, as models trained in pure bf16 did.
    """

    def __init__(
        self,
        dim: int,
        base: float = 10000.0,
        interleaved: bool = False,
        scale_base: Optional[float] = None,
        pos_idx_in_fp32: bool = True,
        device: Optional[Union[str, torch.device]] = None,
    ) -> None:
        super().__init__()
        if isinstance(pos_idx_in_fp32, (str, torch.device)) and device is None:
            # flash-attn 2.8 dropped pos_idx_in_fp32, so there the fifth positional argument is the device.
            pos_idx_in_fp32, device = True, pos_idx_in_fp32
        if dim <= 0 or dim % 2:
            raise ValueError(f"RotaryEmbedding: dim must be a positive even number, got {dim}")
        self.dim = dim
        self.base = float(base)
        self.pos_idx_in_fp32 = bool(pos_idx_in_fp32)
        self.register_buffer("inv_freq", self._compute_inv_freq(device), persistent=False)
        self.interleaved = interleaved
        self.scale_base = scale_base
        zeta = None
        if scale_base is not None:
            zeta = (torch.arange(0, dim, 2, device=device, dtype=torch.float32) + 0.4 * dim) / (1.4 * dim)
        self.register_buffer("scale", zeta, persistent=False)
        self._seq_len_cached = 0
        self._cos_cached: Optional[torch.Tensor] = None
        self._sin_cached: Optional[torch.Tensor] = None
        self._cos_k_cached: Optional[torch.Tensor] = None
        self._sin_k_cached: Optional[torch.Tensor] = None

    def _compute_inv_freq(self, device: Optional[Union[str, torch.device]] = None) -> torch.Tensor:
        exponent = torch.arange(0, self.dim, 2, device=device, dtype=torch.float32) / self.dim
        return 1.0 / (self.base**exponent)

    def _update_cos_sin_cache(
        self, seqlen: int, device: Optional[torch.device] = None, dtype: Optional[torch.dtype] = None
    ) -> None:
        cached = self._cos_cached
        if not (
            seqlen > self._seq_len_cached
            or cached is None
            or cached.device != device
            or cached.dtype != dtype
            or (self.training and cached.is_inference())  # inference-mode tensors cannot enter autograd
        ):
            return
        self._seq_len_cached = seqlen
        inv_freq: torch.Tensor = self.inv_freq  # type: ignore[assignment]
        if self.pos_idx_in_fp32:
            # Positions and angles in fp32 even for a bf16 model: bf16 cannot tell position 1995 from 2000.
            t = torch.arange(seqlen, device=device, dtype=torch.float32)
            if inv_freq.dtype != torch.float32:
                inv_freq = self._compute_inv_freq(device)
        else:
            t = torch.arange(seqlen, device=device, dtype=inv_freq.dtype)
        freqs = torch.outer(t, inv_freq.to(device))
        cos, sin = torch.cos(freqs), torch.sin(freqs)
        if self.scale is None:
            self._cos_cached, self._sin_cached = cos.to(dtype), sin.to(dtype)
            return
        zeta: torch.Tensor = self.scale  # type: ignore[assignment]
        scale_base = cast(float, self.scale_base)  # set whenever the scale buffer is
        power = (torch.arange(seqlen, dtype=zeta.dtype, device=zeta.device) - seqlen // 2) / scale_base
        factor = (zeta.view(1, -1) ** power.view(-1, 1)).to(device)  # (seqlen, dim / 2), scaled in fp32
        self._cos_cached, self._sin_cached = (cos * factor).to(dtype), (sin * factor).to(dtype)
        self._cos_k_cached, self._sin_k_cached = (cos / factor).to(dtype), (sin / factor).to(dtype)

    def forward(
        self,
        qkv: torch.Tensor,
        kv: Optional[torch.Tensor] = None,
        seqlen_offset: Union[int, torch.Tensor] = 0,
        max_seqlen: Optional[int] = None,
        num_heads_q: Optional[int] = None,
    ) -> Union[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Rotate in place and return ``qkv``, or ``(q, kv)`` when ``kv`` is given.

        qkv: (batch, seqlen, 3, nheads, headdim), or (batch, seqlen, num_heads_q + 2·nheads_k, headdim) with
        ``num_heads_q``; with ``kv`` (batch, seqlen, 2, nheads_k, headdim) it is q (batch, seqlen, nheads, headdim).
        seqlen_offset: int or (batch,) tensor shifting every sequence (decoding with a KV cache); with a tensor, pass
        ``max_seqlen`` so the cos/sin cache covers the largest position.
        """
        seqlen = qkv.shape[1]
        if max_seqlen is not None:
            self._update_cos_sin_cache(max_seqlen, device=qkv.device, dtype=qkv.dtype)
        elif isinstance(seqlen_offset, int):
            self._update_cos_sin_cache(seqlen + seqlen_offset, device=qkv.device, dtype=qkv.dtype)
        elif self._cos_cached is None:
            raise ValueError("RotaryEmbedding: with a tensor seqlen_offset, pass max_seqlen to size the cos/sin cache")
        cos, sin = self._cos_cached, self._sin_cached
        assert cos is not None and sin is not None
        xpos = self.scale is not None
        cos_k = self._cos_k_cached if xpos else None
        sin_k = self._sin_k_cached if xpos else None
        if kv is None:
            return apply_rotary_emb_qkv_(qkv, cos, sin, cos_k, sin_k, self.interleaved, seqlen_offset, num_heads_q)
        q = apply_rotary_emb(qkv, cos, sin, self.interleaved, True, seqlen_offset)
        kv = apply_rotary_emb_kv_(kv, cos if cos_k is None else cos_k, sin if sin_k is None else sin_k,
                                  self.interleaved, seqlen_offset)  # fmt: skip
        return q, kv
