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

import math
import threading
import warnings
from collections.abc import Sequence
from typing import Any, Optional, Union

import torch

__all__ = [
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
]

_MAX_HEAD_DIM = 768  # npu_fusion_attention's limit (flash-attn's own is 256)
_INF_TOKENS = 2147483647
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_MASKS: dict[torch.device, torch.Tensor] = {}
_LOCK = threading.Lock()
_op: Any = None
_warned: set[str] = set()

Window = Union[tuple[int, int], Sequence[int]]


def _fusion_attention() -> Any:
    global _op
    if _op is None:
        import torch_npu  # the real adapter, or the simulator's look-alike

        _op = torch_npu.npu_fusion_attention
    return _op


def _compressed_mask(device: torch.device) -> torch.Tensor:
    """The 2048×2048 upper-triangular mask that sparse modes 2-4 take (one per device, built once)."""
    mask = _MASKS.get(device)
    if mask is None:
        with _LOCK:
            mask = _MASKS.get(device)
            if mask is None:
                mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=device), diagonal=1)
                _MASKS[device] = mask
    return mask


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dims: int, fn: str) -> None:
    """Validate the arguments the way users need to read it: the error names the argument."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != dims:
            shape = "(batch, seqlen, nheads, headdim)" if dims == 4 else "(total_tokens, nheads, headdim)"
            raise ValueError(f"{fn}: {name} must be {dims}-D {shape}, got shape {tuple(t.shape)}")
        if t.dtype not in _DTYPES:
            raise TypeError(f"{fn}: {name} has dtype {t.dtype}; the NPU kernel takes float16, bfloat16 or float32")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"{fn}: q, k and v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.device.type != "npu" or k.device != q.device or v.device != q.device:
        raise RuntimeError(
            f"{fn}: q, k and v must be on one NPU device, got {q.device}, {k.device}, {v.device} "
            "(the ascend-compat flash_attn drop-in runs on torch_npu.npu_fusion_attention)"
        )
    d = q.shape[-1]
    if k.shape[-1] != d or v.shape[-1] != d:
        raise ValueError(f"{fn}: q, k and v must have one head dim, got {d}, {k.shape[-1]}, {v.shape[-1]}")
    if d > _MAX_HEAD_DIM:
        raise ValueError(f"{fn}: head dim {d} of q exceeds the NPU limit of {_MAX_HEAD_DIM}")
    hq, hk = q.shape[-2], k.shape[-2]
    if v.shape[-2] != hk or hq % hk:
        raise ValueError(f"{fn}: query heads ({hq}) must be a multiple of key/value heads ({hk}, {v.shape[-2]})")


def _band(causal: bool, window_size: Optional[Window], fn: str) -> tuple[int, int]:
    """(left, right) token counts, -1 meaning unbounded; causal sets right to 0 (flash-attn's rule)."""
    if window_size is None:
        left, right = -1, -1
    else:
        try:
            left, right = (int(x) for x in window_size)
        except (TypeError, ValueError):
            raise ValueError(f"{fn}: window_size must be a pair (left, right), got {window_size!r}") from None
    if causal:
        right = 0
    return left, right


def _lse(softmax_max: torch.Tensor, softmax_sum: torch.Tensor) -> torch.Tensor:
    """log-sum-exp of the scaled scores from the op's row max and row sum; +inf for rows with no key (as flash-attn)."""
    # A row with no key has sum 0, so log gives -inf whatever the op stores as its max: map it to +inf.
    return torch.log(softmax_sum[..., 0]).add_(softmax_max[..., 0]).nan_to_num_(nan=math.inf, neginf=math.inf)


def _mode(left: int, right: int, device: torch.device) -> tuple[Optional[torch.Tensor], int, int, int]:
    """(atten_mask, sparse_mode, pre_tockens, next_tockens) for a band given as (left, right)."""
    if left < 0 and right < 0:
        return None, 0, _INF_TOKENS, _INF_TOKENS
    if left < 0 and right == 0:
        return _compressed_mask(device), 3, _INF_TOKENS, 0
    return _compressed_mask(device), 4, left if left >= 0 else _INF_TOKENS, right if right >= 0 else _INF_TOKENS


def _alibi_bias(
    slopes: torch.Tensor, qpos: torch.Tensor, kpos: torch.Tensor, anchor: torch.Tensor, batch: int, heads: int
) -> torch.Tensor:
    """flash-attn's ALiBi bias ``-slope * |i + anchor - j|`` as (B, H, Sq, Sk) float32."""
    if slopes.dim() not in (1, 2) or slopes.shape[-1] != heads:
        raise ValueError(
            f"alibi_slopes must be (nheads,) or (batch, nheads) with nheads={heads}, got {tuple(slopes.shape)}"
        )
    s = slopes.float().reshape(-1 if slopes.dim() == 2 else 1, heads, 1, 1)
    rel = (kpos.view(1, 1, 1, -1) - qpos.view(1, 1, -1, 1) - anchor.view(-1, 1, 1, 1)).abs().float()
    return (-s * rel).expand(batch, heads, qpos.numel(), kpos.numel())


def _reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    masked: Optional[torch.Tensor],
    bias: Optional[torch.Tensor],
    softcap: float,
    dropout_p: float,
    want_probs: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """Plain-torch attention on (B, H, S, D) in float32, for what the fused op cannot express.

    Returns (out, lse, S_dmask): S_dmask only with ``want_probs`` and dropout, as flash-attn builds it: the softmax
    output (B, H, Sq, Sk) in q's dtype, negated where dropout dropped the entry; else None.
    """
    hq, hk = q.shape[1], k.shape[1]
    if hk != hq:
        k = k.repeat_interleave(hq // hk, dim=1)
        v = v.repeat_interleave(hq // hk, dim=1)
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if bias is not None:
        s = s + bias
    if masked is not None:
        s = s.masked_fill(masked, -math.inf)
    row_max = s.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    e = torch.exp(s - row_max)
    row_sum = e.sum(dim=-1, keepdim=True)
    p = e / torch.where(row_sum == 0, torch.ones_like(row_sum), row_sum)
    probs = None
    if dropout_p > 0:
        keep = torch.rand(p.shape, device=p.device) >= dropout_p
        if want_probs:
            probs = torch.where(keep, p, -p).detach().to(q.dtype)
        p = p * keep / (1.0 - dropout_p)
    out = (p @ v.float()).to(q.dtype)
    lse = torch.where(row_sum > 0, row_max + torch.log(row_sum), torch.full_like(row_sum, math.inf)).squeeze(-1)
    return out, lse, probs


def _no_probs(q: torch.Tensor) -> torch.Tensor:
    """flash-attn's third value without dropout: since 2.3 the kernel returns an empty (0,) tensor of q's dtype."""
    return q.new_empty((0,))


def _round128(probs: torch.Tensor) -> torch.Tensor:
    """Zero-pad the last two dims to multiples of 128: the (…, Sq_rounded, Sk_rounded) shape flash-attn returns."""
    sq, sk = probs.shape[-2:]
    return torch.nn.functional.pad(probs, (0, -sk % 128, 0, -sq % 128))


def _band_masked(qpos: torch.Tensor, kpos: torch.Tensor, anchor: torch.Tensor, left: int, right: int) -> torch.Tensor:
    """True where key j is outside [i + anchor - left, i + anchor + right]; anchor broadcasts over batch."""
    rel = kpos.view(1, 1, 1, -1) - qpos.view(1, 1, -1, 1) - anchor.view(-1, 1, 1, 1)
    out = torch.zeros(rel.shape, dtype=torch.bool, device=rel.device)
    if right >= 0:
        out |= rel > right
    if left >= 0:
        out |= rel < -left
    return out


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


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool) -> torch.Tensor:
    """Rotate the first ``2 * cos.shape[-1]`` features of x (…, S, H, D) with per-position cos/sin (…, S, r/2)."""
    r = cos.shape[-1] * 2
    xr, rest = x[..., :r].float(), x[..., r:]
    c, s = cos.float().unsqueeze(-2), sin.float().unsqueeze(-2)  # broadcast over heads
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        rot = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    else:
        x1, x2 = xr[..., : r // 2], xr[..., r // 2 :]
        rot = torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    return torch.cat((rot.to(x.dtype), rest), dim=-1)


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
    if block_table is not None:
        if block_table.dim() != 2 or block_table.shape[0] != b:
            raise ValueError(f"{fn}: block_table must be (batch, max_blocks), got {tuple(block_table.shape)}")
        page = k_cache.shape[1]
        capacity = block_table.shape[1] * page
    else:
        page = 0
        capacity = k_cache.shape[1]
    if cache_leftpad is not None:
        if block_table is not None:  # flash-attn 2.8 refuses the pair too ("We don't support Paged KV and leftpad_k")
            raise NotImplementedError(f"{fn}: cache_leftpad with a paged block_table is unsupported, as in flash-attn")
        if not isinstance(cache_leftpad, torch.Tensor) or cache_leftpad.shape != (b,):
            is_tensor = isinstance(cache_leftpad, torch.Tensor)
            got = tuple(cache_leftpad.shape) if is_tensor else type(cache_leftpad).__name__
            raise ValueError(f"{fn}: cache_leftpad must be a (batch,) = ({b},) integer tensor, got {got}")
        if cache_leftpad.dtype.is_floating_point or cache_leftpad.dtype.is_complex:
            raise TypeError(f"{fn}: cache_leftpad must hold integers (int32 in flash-attn), got {cache_leftpad.dtype}")
    if cache_seqlens is None:
        if k is not None:
            raise ValueError(f"{fn}: cache_seqlens is needed to append k/v (where in the cache they go)")
        lens = torch.full((b,), capacity, dtype=torch.int64, device=dev)
    elif isinstance(cache_seqlens, int):
        lens = torch.full((b,), cache_seqlens, dtype=torch.int64, device=dev)
    else:
        lens = cache_seqlens.to(device=dev, dtype=torch.int64)
    rows = (
        torch.arange(b, device=dev)
        if cache_batch_idx is None or block_table is not None
        else cache_batch_idx.to(device=dev, dtype=torch.int64)
    )
    s_new = 0
    if k is not None or v is not None:
        if k is None or v is None:
            raise ValueError(f"{fn}: k and v must be given together")
        _check(q, k, v, 4, fn)
        s_new = k.shape[1]
        pos = lens.view(-1, 1) + torch.arange(s_new, device=dev).view(1, -1)  # (B, S_new)
        if rotary_cos is not None:
            k = _rotate(k, rotary_cos[pos], rotary_sin[pos], rotary_interleaved)  # type: ignore[index]
        if block_table is not None:
            blk = block_table.to(torch.int64).gather(1, pos // page)
            k_cache[blk, pos % page] = k
            v_cache[blk, pos % page] = v
        else:
            k_cache[rows.view(-1, 1), pos] = k
            v_cache[rows.view(-1, 1), pos] = v
    if rotary_cos is not None:
        if causal or window_size[0] >= 0 or window_size[1] >= 0:
            qpos_ro = lens.view(-1, 1) + torch.arange(sq, device=dev).view(1, -1)
        else:  # flash-attn rotates every query token to the same position when attention is not local
            qpos_ro = lens.view(-1, 1).expand(b, sq)
        q = _rotate(q, rotary_cos[qpos_ro], rotary_sin[qpos_ro], rotary_interleaved)  # type: ignore[index]
    if block_table is not None:
        bt = block_table.to(torch.int64)
        keys = k_cache[bt].reshape(b, capacity, *k_cache.shape[2:])
        values = v_cache[bt].reshape(b, capacity, *v_cache.shape[2:])
    else:
        keys, values = k_cache[rows], v_cache[rows]
    total = lens + s_new  # keys in use per batch row
    scale = softmax_scale if softmax_scale is not None else d**-0.5
    left, right = _band(causal, window_size, fn)
    qpos = torch.arange(sq, device=dev)
    kpos = torch.arange(capacity, device=dev)
    anchor = total - sq  # bottom-right alignment per batch row
    masked = _band_masked(qpos, kpos, anchor, left, right) | (kpos.view(1, 1, 1, -1) >= total.view(-1, 1, 1, 1))
    if cache_leftpad is not None:
        masked |= kpos.view(1, 1, 1, -1) < cache_leftpad.to(device=dev, dtype=torch.int64).view(-1, 1, 1, 1)
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
