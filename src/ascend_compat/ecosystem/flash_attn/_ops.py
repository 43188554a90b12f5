"""The pieces every flash_attn drop-in function shares: argument checks, the band/mask arithmetic of
``npu_fusion_attention``'s sparse modes, ALiBi biases, the log-sum-exp, and a plain-torch reference for what the op
cannot express (softcap, the dropout pattern). The mapping itself is described in ``flash_attn_interface``.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Sequence
from typing import Any, Optional, Union

import torch

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
