"""flash-attn 2 functions on ``torch_npu.npu_fusion_attention``, with flash-attn's semantics (2.1 and newer).

Mapping (flash-attn → npu_fusion_attention; semantics from Huawei's op documentation, see ``simulate/fused_ops``):

- layout: (B, S, H, D) → ``"BSND"``; varlen (total, H, D) with ``cu_seqlens`` → ``"TND"`` with the cumulative
  ends as ``actual_seq_qlen`` / ``actual_seq_kvlen`` (the op takes host lists: one device-to-host copy per call);
- ``softmax_scale`` defaults to 1/sqrt(d) and is always passed (the op's default is 1.0);
- ``causal``: bottom-right aligned as in flash-attn ≥ 2.1 → ``sparse_mode=3`` with the 2048×2048 compressed mask;
- ``window_size=(left, right)`` → band, ``sparse_mode=4`` with ``pre_tockens=left``, ``next_tockens=right``
  (bottom-right anchored, as flash-attn's window is); ``causal`` sets ``right=0``;
- ``dropout_p`` → ``keep_prob = 1 - dropout_p``; GQA/MQA go to the op as is (Nq a multiple of Nkv);
- ``alibi_slopes`` → the op's ``pse`` bias (``-slope·|i + Sk - Sq - j|``, divided by ``scale`` because the op adds
  ``pse`` before scaling); with varlen, and for ``softcap``, which the op lacks, a plain-torch path computes the
  same attention (correct, slower, warned once);
- ``return_attn_probs`` returns ``(out, softmax_lse, S_dmask)`` with the LSE in fp32, (B, H, Sq) or (H, total_q),
  rebuilt from the op's row max and row sum. S_dmask is what flash-attn ≥ 2.3 returns: an empty (0,) tensor of q's
  dtype when ``dropout_p == 0``; with dropout, (B, H, Sq, Sk) rounded up to multiples of 128, the softmax output
  negated where dropout dropped the entry. The op does not expose its dropout pattern, so that case runs the
  plain-torch path (warned once); ``deterministic`` is accepted (the op has no such switch);
- ``flash_attn_with_kvcache``: masks (causal, window, ``cache_seqlens``, ``cache_leftpad``) built on the device.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import torch

from ascend_compat.ecosystem.flash_attn._attention import _attention, _varlen
from ascend_compat.ecosystem.flash_attn._kvcache import append_new, cache_layout, cache_lengths, gather_cache, kv_mask
from ascend_compat.ecosystem.flash_attn._ops import (
    Window,
    _alibi_bias,
    _band,
    _check,
    _fusion_attention,
    _lse,
    _reference,
    _rotate,
    _warn_once,
)

__all__ = [
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
]


def flash_attn_func(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    dropout_p: float = 0.0,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Window = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: Optional[torch.Tensor] = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
) -> Any:
    """Attention on (batch, seqlen, nheads, headdim); k/v may have fewer heads (GQA/MQA)."""
    return _attention(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                      return_attn_probs, "flash_attn_func")  # fmt: skip


def flash_attn_qkvpacked_func(
    qkv: torch.Tensor,
    dropout_p: float = 0.0,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Window = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: Optional[torch.Tensor] = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
) -> Any:
    """``qkv`` is (batch, seqlen, 3, nheads, headdim)."""
    if qkv.dim() != 5 or qkv.shape[2] != 3:
        raise ValueError(
            f"flash_attn_qkvpacked_func: qkv must be (batch, seqlen, 3, nheads, headdim), got {tuple(qkv.shape)}"
        )
    q, k, v = qkv.unbind(dim=2)
    return _attention(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                      return_attn_probs, "flash_attn_qkvpacked_func")  # fmt: skip


def flash_attn_kvpacked_func(
    q: torch.Tensor,
    kv: torch.Tensor,
    dropout_p: float = 0.0,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Window = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: Optional[torch.Tensor] = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
) -> Any:
    """``kv`` is (batch, seqlen_k, 2, nheads_k, headdim)."""
    if kv.dim() != 5 or kv.shape[2] != 2:
        raise ValueError(
            f"flash_attn_kvpacked_func: kv must be (batch, seqlen_k, 2, nheads_k, headdim), got {tuple(kv.shape)}"
        )
    k, v = kv.unbind(dim=2)
    return _attention(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                      return_attn_probs, "flash_attn_kvpacked_func")  # fmt: skip


def flash_attn_varlen_func(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    dropout_p: float = 0.0,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Window = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: Optional[torch.Tensor] = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
    block_table: Optional[torch.Tensor] = None,
) -> Any:
    """Variable-length attention on packed (total_tokens, nheads, headdim) with cumulative sequence lengths."""
    return _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, causal, window_size, softcap,
                   alibi_slopes, return_attn_probs, block_table, "flash_attn_varlen_func")  # fmt: skip


def flash_attn_varlen_qkvpacked_func(
    qkv: torch.Tensor,
    cu_seqlens: torch.Tensor,
    max_seqlen: int,
    dropout_p: float = 0.0,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Window = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: Optional[torch.Tensor] = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
) -> Any:
    """``qkv`` is (total_tokens, 3, nheads, headdim)."""
    if qkv.dim() != 4 or qkv.shape[1] != 3:
        raise ValueError(
            f"flash_attn_varlen_qkvpacked_func: qkv must be (total, 3, nheads, headdim), got {tuple(qkv.shape)}"
        )
    q, k, v = qkv.unbind(dim=1)
    return _varlen(q, k, v, cu_seqlens, cu_seqlens, dropout_p, softmax_scale, causal, window_size, softcap,
                   alibi_slopes, return_attn_probs, None, "flash_attn_varlen_qkvpacked_func")  # fmt: skip


def flash_attn_varlen_kvpacked_func(
    q: torch.Tensor,
    kv: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    dropout_p: float = 0.0,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Window = (-1, -1),
    softcap: float = 0.0,
    alibi_slopes: Optional[torch.Tensor] = None,
    deterministic: bool = False,
    return_attn_probs: bool = False,
) -> Any:
    """``kv`` is (total_k, 2, nheads_k, headdim)."""
    if kv.dim() != 4 or kv.shape[1] != 2:
        raise ValueError(
            f"flash_attn_varlen_kvpacked_func: kv must be (total_k, 2, nheads_k, headdim), got {tuple(kv.shape)}"
        )
    k, v = kv.unbind(dim=1)
    return _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, causal, window_size, softcap,
                   alibi_slopes, return_attn_probs, None, "flash_attn_varlen_kvpacked_func")  # fmt: skip


def flash_attn_with_kvcache(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    k: Optional[torch.Tensor] = None,
    v: Optional[torch.Tensor] = None,
    rotary_cos: Optional[torch.Tensor] = None,
    rotary_sin: Optional[torch.Tensor] = None,
    cache_seqlens: Optional[Union[int, torch.Tensor]] = None,
    cache_batch_idx: Optional[torch.Tensor] = None,
    cache_leftpad: Optional[torch.Tensor] = None,
    block_table: Optional[torch.Tensor] = None,
    softmax_scale: Optional[float] = None,
    causal: bool = False,
    window_size: Window = (-1, -1),
    softcap: float = 0.0,
    rotary_interleaved: bool = True,
    alibi_slopes: Optional[torch.Tensor] = None,
    num_splits: int = 0,
    return_softmax_lse: bool = False,
) -> Any:
    """Decode-time attention over a KV cache; new ``k``/``v`` are written into the cache in place first.

    Query token i of batch b sits at position ``cache_seqlens[b] + i``; keys at positions ≥
    ``cache_seqlens[b] + seqlen_new`` are ignored. ``cache_leftpad[b]`` (left-padded batches) is where row b's cache
    starts: keys before it are masked out. As in flash-attn, ``cache_seqlens`` still counts from slot 0 (padding
    included), so new k/v go to slot ``cache_seqlens[b]`` and rotary positions are those slot numbers; causal, window
    and ALiBi distances are unchanged (they are differences of slots). ``block_table`` selects pages of a paged cache
    (k_cache: (num_blocks, page_size, nheads_k, headdim)); flash-attn has no paged cache with ``cache_leftpad``.
    No host synchronisation: masks are built on the device.
    """
    fn = "flash_attn_with_kvcache"
    _check(q, k_cache, v_cache, 4, fn)
    dev = q.device
    b, sq, h, d = q.shape
    page, capacity = cache_layout(fn, b, k_cache, block_table, cache_leftpad)
    lens = cache_lengths(fn, cache_seqlens, k is not None, b, capacity, dev)
    rows = (
        torch.arange(b, device=dev)
        if cache_batch_idx is None or block_table is not None
        else cache_batch_idx.to(device=dev, dtype=torch.int64)
    )
    s_new = 0
    if k is not None or v is not None:
        s_new = append_new(fn, q, k, v, k_cache, v_cache, lens, rows, block_table, page, rotary_cos, rotary_sin,
                           rotary_interleaved)  # fmt: skip
    if rotary_cos is not None:
        if causal or window_size[0] >= 0 or window_size[1] >= 0:
            qpos_ro = lens.view(-1, 1) + torch.arange(sq, device=dev).view(1, -1)
        else:  # flash-attn rotates every query token to the same position when attention is not local
            qpos_ro = lens.view(-1, 1).expand(b, sq)
        q = _rotate(q, rotary_cos[qpos_ro], rotary_sin[qpos_ro], rotary_interleaved)  # type: ignore[index]
    keys, values = gather_cache(k_cache, v_cache, rows, block_table, capacity)
    total = lens + s_new  # keys in use per batch row
    scale = softmax_scale if softmax_scale is not None else d**-0.5
    left, right = _band(causal, window_size, fn)
    qpos = torch.arange(sq, device=dev)
    kpos = torch.arange(capacity, device=dev)
    anchor = total - sq  # bottom-right alignment per batch row
    masked = kv_mask(qpos, kpos, anchor, left, right, total, cache_leftpad)
    bias = None if alibi_slopes is None else _alibi_bias(alibi_slopes.to(dev), qpos, kpos, anchor, b, h)
    if softcap:
        _warn_once("softcap", f"{fn}: softcap has no NPU kernel; computing attention with plain torch ops (slower)")
        out, lse, _ = _reference(q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2), scale, masked, bias,
                                 float(softcap), 0.0)  # fmt: skip
        out = out.transpose(1, 2)
        return (out, lse) if return_softmax_lse else out
    res = _fusion_attention()(
        q, keys, values, h, "BSND", pse=None if bias is None else bias / scale, atten_mask=masked, scale=scale,
        sparse_mode=0,
    )  # fmt: skip
    return (res[0], _lse(res[1], res[2])) if return_softmax_lse else res[0]
