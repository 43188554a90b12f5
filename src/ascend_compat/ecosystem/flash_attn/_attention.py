"""The dense (B, S, H, D) and varlen (total, H, D) paths behind the flash_attn drop-in's public functions: onto
``npu_fusion_attention`` where it can express the call, else onto the plain-torch reference (warned once).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ascend_compat.ecosystem.flash_attn._ops import (
    Window,
    _alibi_bias,
    _band,
    _band_masked,
    _check,
    _fusion_attention,
    _lse,
    _mode,
    _no_probs,
    _reference,
    _round128,
    _warn_once,
)


def _attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    dropout_p: float,
    softmax_scale: Optional[float],
    causal: bool,
    window_size: Optional[Window],
    softcap: float,
    alibi_slopes: Optional[torch.Tensor],
    return_attn_probs: bool,
    fn: str,
) -> Any:
    _check(q, k, v, 4, fn)
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    left, right = _band(causal, window_size, fn)
    b, sq, h, _ = q.shape
    sk = k.shape[1]
    if softcap or (return_attn_probs and dropout_p > 0):
        _warn_fallback(fn, softcap)
        dev = q.device
        qpos, kpos = torch.arange(sq, device=dev), torch.arange(sk, device=dev)
        anchor = torch.tensor([sk - sq], device=dev)
        bias = None if alibi_slopes is None else _alibi_bias(alibi_slopes.to(dev), qpos, kpos, anchor, b, h)
        masked = _band_masked(qpos, kpos, anchor, left, right) if (left >= 0 or right >= 0) else None
        out, lse, probs = _reference(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale, masked, bias,
                                     float(softcap), dropout_p, return_attn_probs)  # fmt: skip
        out = out.transpose(1, 2)
        if not return_attn_probs:
            return out
        return out, lse, _no_probs(q) if probs is None else _round128(probs)
    mask, mode, pre, nxt = _mode(left, right, q.device)
    pse = None
    if alibi_slopes is not None:
        dev = q.device
        qpos, kpos = torch.arange(sq, device=dev), torch.arange(sk, device=dev)
        pse = _alibi_bias(alibi_slopes.to(dev), qpos, kpos, torch.tensor([sk - sq], device=dev), b, h) / scale
    res = _fusion_attention()(
        q, k, v, h, "BSND", pse=pse, atten_mask=mask, scale=scale, keep_prob=1.0 - dropout_p,
        pre_tockens=pre, next_tockens=nxt, sparse_mode=mode,
    )  # fmt: skip
    if return_attn_probs:
        return res[0], _lse(res[1], res[2]), _no_probs(q)
    return res[0]


def _warn_fallback(fn: str, softcap: float) -> None:
    if softcap:
        _warn_once("softcap", f"{fn}: softcap has no NPU kernel; computing attention with plain torch ops (slower)")
    else:
        _warn_once("probs", f"{fn}: return_attn_probs with dropout_p > 0 needs the dropout pattern, which the NPU "
                            "kernel does not expose; computing attention with plain torch ops (slower)")  # fmt: skip


def _seq_ends(cu_seqlens: torch.Tensor, name: str, fn: str) -> list[int]:
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        raise ValueError(f"{fn}: {name} must be a 1-D tensor of cumulative sequence lengths starting at 0")
    # The op takes the ends as host integers: this is the one device-to-host copy per call.
    ends = cu_seqlens.tolist()
    if ends[0] != 0 or any(b < a for a, b in zip(ends, ends[1:])):
        raise ValueError(f"{fn}: {name} must start at 0 and never decrease, got {ends}")
    return ends


def _varlen(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    dropout_p: float,
    softmax_scale: Optional[float],
    causal: bool,
    window_size: Optional[Window],
    softcap: float,
    alibi_slopes: Optional[torch.Tensor],
    return_attn_probs: bool,
    block_table: Optional[torch.Tensor],
    fn: str,
) -> Any:
    if block_table is not None:
        raise NotImplementedError(f"{fn}: block_table (paged KV) is not supported here; use flash_attn_with_kvcache")
    _check(q, k, v, 3, fn)
    ends_q = _seq_ends(cu_seqlens_q, "cu_seqlens_q", fn)
    ends_k = ends_q if cu_seqlens_k is cu_seqlens_q else _seq_ends(cu_seqlens_k, "cu_seqlens_k", fn)
    if len(ends_q) != len(ends_k):
        raise ValueError(f"{fn}: cu_seqlens_q and cu_seqlens_k differ in length ({len(ends_q)} and {len(ends_k)})")
    if ends_q[-1] != q.shape[0] or ends_k[-1] != k.shape[0]:
        raise ValueError(
            f"{fn}: cu_seqlens end at {ends_q[-1]}/{ends_k[-1]} but q/k hold {q.shape[0]}/{k.shape[0]} tokens"
        )
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    left, right = _band(causal, window_size, fn)
    if softcap or alibi_slopes is not None:
        _warn_once("varlen-ref", f"{fn}: softcap/alibi with varlen have no NPU kernel; using plain torch ops (slower)")
    elif return_attn_probs and dropout_p > 0:
        _warn_fallback(fn, 0.0)
    if softcap or alibi_slopes is not None or (return_attn_probs and dropout_p > 0):
        return _varlen_reference(q, k, v, ends_q, ends_k, scale, left, right, softcap, alibi_slopes, dropout_p,
                                 return_attn_probs)  # fmt: skip
    mask, mode, pre, nxt = _mode(left, right, q.device)
    res = _fusion_attention()(
        q, k, v, q.shape[1], "TND", atten_mask=mask, scale=scale, keep_prob=1.0 - dropout_p, pre_tockens=pre,
        next_tockens=nxt, actual_seq_qlen=ends_q[1:], actual_seq_kvlen=ends_k[1:], sparse_mode=mode,
    )  # fmt: skip
    if return_attn_probs:
        return res[0], _lse(res[1], res[2]).transpose(0, 1), _no_probs(q)
    return res[0]


def _varlen_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    ends_q: list[int],
    ends_k: list[int],
    scale: float,
    left: int,
    right: int,
    softcap: float,
    alibi_slopes: Optional[torch.Tensor],
    dropout_p: float,
    return_attn_probs: bool,
) -> Any:
    """Varlen as one packed sequence with a block-diagonal mask (positions and anchors per sequence)."""
    dev = q.device
    lens_q = torch.tensor([b - a for a, b in zip(ends_q, ends_q[1:])], device=dev)
    lens_k = torch.tensor([b - a for a, b in zip(ends_k, ends_k[1:])], device=dev)
    nseq = lens_q.numel()
    seg_q = torch.repeat_interleave(torch.arange(nseq, device=dev), lens_q)
    seg_k = torch.repeat_interleave(torch.arange(nseq, device=dev), lens_k)
    qpos = torch.arange(q.shape[0], device=dev) - torch.tensor(ends_q[:-1], device=dev)[seg_q]
    kpos = torch.arange(k.shape[0], device=dev) - torch.tensor(ends_k[:-1], device=dev)[seg_k]
    rel = kpos.view(1, -1) - qpos.view(-1, 1) - (lens_k - lens_q)[seg_q].view(-1, 1)  # (Tq, Tk)
    masked = seg_q.view(-1, 1) != seg_k.view(1, -1)
    if right >= 0:
        masked = masked | (rel > right)
    if left >= 0:
        masked = masked | (rel < -left)
    bias = None
    h = q.shape[1]
    if alibi_slopes is not None:
        slopes = alibi_slopes.to(dev).float()
        if slopes.dim() == 2:  # (batch, nheads): one row per sequence
            per_token = slopes[seg_q]  # (Tq, H)
            bias = -(per_token.transpose(0, 1).unsqueeze(-1) * rel.abs().float().unsqueeze(0)).unsqueeze(0)
        else:
            bias = -(slopes.view(1, h, 1, 1) * rel.abs().float().view(1, 1, *rel.shape))
    out, lse, probs = _reference(q.transpose(0, 1).unsqueeze(0), k.transpose(0, 1).unsqueeze(0),
                                 v.transpose(0, 1).unsqueeze(0), scale, masked.view(1, 1, *masked.shape), bias,
                                 float(softcap), dropout_p, return_attn_probs)  # fmt: skip
    out = out.squeeze(0).transpose(0, 1)
    if not return_attn_probs:
        return out
    if probs is None:
        return out, lse.squeeze(0), _no_probs(q)
    # flash-attn's varlen S_dmask is (batch, H, max_seqlen_q, max_seqlen_k), sequence b in its top-left corner.
    iq, ik = (seg_q.view(-1, 1) == seg_k.view(1, -1)).nonzero(as_tuple=True)
    dmask = probs.new_zeros(nseq, h, int(lens_q.max()), int(lens_k.max()))
    dmask[seg_q[iq], :, qpos[iq], kpos[ik]] = probs[0][:, iq, ik].transpose(0, 1)
    return out, lse.squeeze(0), _round128(dmask)
