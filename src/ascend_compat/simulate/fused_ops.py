"""Reference implementations of torch_npu's fused ops, following Huawei's documented semantics.

These are what ``torch_npu.npu_fusion_attention`` and friends compute on the simulated device. They are built
from ordinary torch ops, so autograd works through them, and compute in float32 like the NPU's accumulators.

Source of the semantics: Ascend/pytorch ``torch_npu/_op_plugin_docs.py`` and hicann/ops-nn
``docs/zh/context/sparse_mode_introduction.md`` (summarised in the project's shared reference notes):
``out = Dropout(Softmax(Mask(scale * (pse + Q @ K^T), atten_mask)), keep_prob) @ V``; ``atten_mask`` True means
masked; ``scale`` defaults to 1.0; with ``atten_mask=None`` nothing is masked, whatever ``sparse_mode`` and the
pre/next token counts say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import torch
from torch.nn import functional

__all__ = ["npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul", "npu_swiglu"]

_LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")
_MAX_HEAD_DIM = 768
_SPARSE_NAMES = {
    0: "defaultMask",
    1: "allMask",
    2: "leftUpCausal",
    3: "rightDownCausal",
    4: "band",
    5: "prefix",
    6: "prefix (compressed)",
    7: "rightDownCausal band (varlen)",
    8: "band leftUpCausal (varlen)",
}


def _to_bnsd(x: torch.Tensor, layout: str, heads: Optional[int], head_dim: Optional[int], name: str) -> torch.Tensor:
    """Bring a BSH/SBH/BSND/BNSD tensor to (B, N, S, D)."""
    if layout in ("BSH", "SBH"):
        if x.dim() != 3:
            raise ValueError(f"npu_fusion_attention: {name} must be 3-D for layout {layout}, got {tuple(x.shape)}")
        if layout == "SBH":
            x = x.transpose(0, 1)
        b, s, h = x.shape
        assert head_dim is not None
        if h % head_dim:
            raise ValueError(f"npu_fusion_attention: {name} hidden size {h} is not a multiple of head dim {head_dim}")
        return x.reshape(b, s, h // head_dim, head_dim).transpose(1, 2)
    if x.dim() != 4:
        raise ValueError(f"npu_fusion_attention: {name} must be 4-D for layout {layout}, got shape {tuple(x.shape)}")
    return x.transpose(1, 2) if layout == "BSND" else x


def _from_bnsd(x: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    b, n, s, d = x.shape
    x = x.transpose(1, 2).reshape(b, s, n * d)
    return x.transpose(0, 1) if layout == "SBH" else x


def _band_masked(qpos: torch.Tensor, kpos: torch.Tensor, anchor: torch.Tensor, pre: int, nxt: int) -> torch.Tensor:
    """True where key position lies outside [anchor - pre, anchor + next] around each query position."""
    rel = kpos.unsqueeze(-2) - (qpos + anchor).unsqueeze(-1)
    return (rel < -pre) | (rel > nxt)


def _mode_mask(
    sparse_mode: int,
    atten_mask: Optional[torch.Tensor],
    qpos: torch.Tensor,
    kpos: torch.Tensor,
    offset: torch.Tensor,
    pre: int,
    nxt: int,
) -> Optional[torch.Tensor]:
    """The boolean 'masked' tensor for one sparse mode; ``offset`` is Skv - Sq (bottom-right anchoring)."""
    if atten_mask is None:
        return None
    zero = torch.zeros_like(offset)
    if sparse_mode == 0:
        return atten_mask | _band_masked(qpos, kpos, zero, pre, nxt)
    if sparse_mode == 1:
        return atten_mask
    if sparse_mode == 2:
        return _band_masked(qpos, kpos, zero, 2**31, 0)
    if sparse_mode == 3:
        return _band_masked(qpos, kpos, offset, 2**31, 0)
    if sparse_mode == 4:
        return _band_masked(qpos, kpos, offset, pre, nxt)
    raise AssertionError(sparse_mode)


def _softmax_stats(scores: torch.Tensor, masked: Optional[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    if masked is not None:
        scores = scores.masked_fill(masked, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    # Fully masked rows give zeros (as flash attention does), not NaN.
    safe_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    exp = torch.exp(scores - safe_max)
    row_sum = exp.sum(dim=-1, keepdim=True)
    probs = exp / torch.where(row_sum == 0, torch.ones_like(row_sum), row_sum)
    return probs, row_max, row_sum


def _dropout(probs: torch.Tensor, keep_prob: float) -> torch.Tensor:
    if keep_prob >= 1.0:
        return probs
    if keep_prob <= 0.0:
        return probs * 0
    keep = torch.rand(probs.shape, device=probs.device) < keep_prob
    return probs * keep / keep_prob


def _check_common(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, layout: str, sparse_mode: int, padding_mask: object
) -> None:
    if layout not in _LAYOUTS:
        raise ValueError(f"npu_fusion_attention: input_layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    if sparse_mode not in _SPARSE_NAMES:
        raise ValueError(f"npu_fusion_attention: sparse_mode must be in 0..8, got {sparse_mode}")
    if sparse_mode >= 5:
        raise NotImplementedError(
            f"npu_fusion_attention: sparse_mode {sparse_mode} ({_SPARSE_NAMES[sparse_mode]}) is not implemented by "
            "the simulated NPU; modes 0-4 are"
        )
    if padding_mask is not None:
        raise NotImplementedError("npu_fusion_attention: padding_mask is reserved by torch_npu and not supported")
    for name, t in (("key", key), ("value", value)):
        if t.dtype != query.dtype:
            raise TypeError(f"npu_fusion_attention: {name} dtype {t.dtype} differs from query dtype {query.dtype}")
        if t.device != query.device:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"{query.device} and {t.device}! (npu_fusion_attention argument {name})"
            )


def npu_fusion_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    head_num: int,
    input_layout: str,
    pse: Optional[torch.Tensor] = None,
    padding_mask: Optional[torch.Tensor] = None,
    atten_mask: Optional[torch.Tensor] = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = 2147483647,
    next_tockens: int = 2147483647,
    inner_precise: int = 0,
    prefix: Optional[Sequence[int]] = None,
    actual_seq_qlen: Optional[Sequence[int]] = None,
    actual_seq_kvlen: Optional[Sequence[int]] = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int, int, int]:
    """Fused attention; returns (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels).

    softmax_max/softmax_sum are float32 of shape (B, N, Sq, 8) ((T, N, 8) for TND): the row maximum of the
    scaled scores and the row sum of exp(score - max), repeated 8 times as the NPU stores them.
    """
    _check_common(query, key, value, input_layout, sparse_mode, padding_mask)
    if atten_mask is not None and atten_mask.dtype != torch.bool:
        atten_mask = atten_mask.to(torch.bool)
    if input_layout == "TND":
        return _tnd_attention(
            query, key, value, head_num, pse, atten_mask, scale, keep_prob, pre_tockens, next_tockens,
            actual_seq_qlen, actual_seq_kvlen, sparse_mode,
        )  # fmt: skip
    head_dim = None
    if input_layout in ("BSH", "SBH"):
        if query.shape[-1] % head_num:
            raise ValueError(
                f"npu_fusion_attention: hidden size {query.shape[-1]} is not divisible by head_num {head_num}"
            )
        head_dim = query.shape[-1] // head_num
    q = _to_bnsd(query, input_layout, head_num, head_dim, "query")
    k = _to_bnsd(key, input_layout, None, head_dim or q.shape[-1], "key")
    v = _to_bnsd(value, input_layout, None, head_dim or q.shape[-1], "value")
    b, nq, sq, d = q.shape
    nkv, skv = k.shape[1], k.shape[2]
    if nq != head_num:
        raise ValueError(f"npu_fusion_attention: query has {nq} heads but head_num is {head_num}")
    if d > _MAX_HEAD_DIM:
        raise ValueError(f"npu_fusion_attention: head dim {d} exceeds the NPU limit of {_MAX_HEAD_DIM}")
    if nq % nkv:
        raise ValueError(f"npu_fusion_attention: query heads ({nq}) must be a multiple of key/value heads ({nkv})")
    if nkv != nq:  # GQA / MQA
        k = k.repeat_interleave(nq // nkv, dim=1)
        v = v.repeat_interleave(nq // nkv, dim=1)

    scores = q.float() @ k.float().transpose(-1, -2)
    if pse is not None:
        scores = scores + pse.float()
    scores = scores * scale
    dev = query.device
    qpos = torch.arange(sq, device=dev)
    kpos = torch.arange(skv, device=dev)
    offset = torch.tensor(skv - sq, device=dev)
    masked = _mode_mask(sparse_mode, atten_mask, qpos, kpos, offset, pre_tockens, next_tockens)
    probs, row_max, row_sum = _softmax_stats(scores, masked)
    out = (_dropout(probs, keep_prob) @ v.float()).to(query.dtype)
    return _finish(_from_bnsd(out, input_layout), row_max, row_sum, query, b * nq * sq * skv)


def _finish(
    out: torch.Tensor, row_max: torch.Tensor, row_sum: torch.Tensor, query: torch.Tensor, numels: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int, int, int]:
    expand = (*row_max.shape[:-1], 8)
    softmax_max = row_max.expand(expand).contiguous()
    softmax_sum = row_sum.expand(expand).contiguous()
    softmax_out = torch.empty(0, dtype=query.dtype, device=query.device)
    seed = int(torch.initial_seed()) & 0x7FFFFFFF
    return out, softmax_max, softmax_sum, softmax_out, seed, 0, numels


def _tnd_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    head_num: int,
    pse: Optional[torch.Tensor],
    atten_mask: Optional[torch.Tensor],
    scale: float,
    keep_prob: float,
    pre: int,
    nxt: int,
    cu_q: Optional[Sequence[int]],
    cu_kv: Optional[Sequence[int]],
    sparse_mode: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int, int, int]:
    """Variable-length attention on packed (T, N, D) tensors with cumulative sequence ends."""
    if cu_q is None or cu_kv is None:
        raise ValueError("npu_fusion_attention: layout TND needs actual_seq_qlen and actual_seq_kvlen")
    if len(cu_q) != len(cu_kv):
        raise ValueError("npu_fusion_attention: actual_seq_qlen and actual_seq_kvlen must have the same length")
    if pse is not None:
        raise NotImplementedError("npu_fusion_attention: pse with layout TND is not implemented by the simulator")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() != 3:
            raise ValueError(f"npu_fusion_attention: {name} must be (T, N, D) for layout TND, got {tuple(t.shape)}")
    tq, nq, d = query.shape
    tkv, nkv = key.shape[0], key.shape[1]
    cu_q, cu_kv = [int(x) for x in cu_q], [int(x) for x in cu_kv]
    if cu_q[-1] != tq or cu_kv[-1] != tkv:
        raise ValueError(f"npu_fusion_attention: cumulative lengths end at {cu_q[-1]}/{cu_kv[-1]} but T is {tq}/{tkv}")
    if nq != head_num or nq % nkv:
        raise ValueError(f"npu_fusion_attention: bad head counts: query {nq}, key/value {nkv}, head_num {head_num}")
    if d > _MAX_HEAD_DIM:
        raise ValueError(f"npu_fusion_attention: head dim {d} exceeds the NPU limit of {_MAX_HEAD_DIM}")
    dev = query.device
    lens_q = torch.tensor([b - a for a, b in zip([0, *cu_q[:-1]], cu_q)])
    lens_kv = torch.tensor([b - a for a, b in zip([0, *cu_kv[:-1]], cu_kv)])
    seg_q = torch.repeat_interleave(torch.arange(len(cu_q)), lens_q)
    seg_k = torch.repeat_interleave(torch.arange(len(cu_kv)), lens_kv)
    start_q = torch.tensor([0, *cu_q[:-1]])[seg_q]
    start_k = torch.tensor([0, *cu_kv[:-1]])[seg_k]
    qpos = (torch.arange(tq) - start_q).to(dev)
    kpos = (torch.arange(tkv) - start_k).to(dev)
    offset = (lens_kv - lens_q)[seg_q].to(dev).unsqueeze(-1)  # per query row
    other_seq = (seg_q.unsqueeze(-1) != seg_k.unsqueeze(0)).to(dev)
    user = None
    if atten_mask is not None:
        m = atten_mask.reshape(atten_mask.shape[-2], atten_mask.shape[-1])
        user = m[qpos.cpu()][:, kpos.cpu()].to(dev) if sparse_mode in (0, 1) else torch.zeros_like(other_seq)
    masked = _mode_mask(sparse_mode, user, qpos, kpos, offset.squeeze(-1), pre, nxt)
    masked = other_seq if masked is None else (masked | other_seq)

    k, v = key, value
    if nkv != nq:
        k = k.repeat_interleave(nq // nkv, dim=1)
        v = v.repeat_interleave(nq // nkv, dim=1)
    scores = (query.float().transpose(0, 1) @ k.float().transpose(0, 1).transpose(-1, -2)) * scale  # (N, Tq, Tkv)
    probs, row_max, row_sum = _softmax_stats(scores, masked)
    out = (_dropout(probs, keep_prob) @ v.float().transpose(0, 1)).transpose(0, 1).to(query.dtype)
    numels = int((lens_q * lens_kv).sum()) * nq
    return _finish(out, row_max.transpose(0, 1), row_sum.transpose(0, 1), query, numels)


def npu_rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm over the trailing ``gamma.dim()`` dims; returns (y, rstd) with rstd in float32."""
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    y = (xf * rstd * gamma.float()).to(x.dtype)
    return y, rstd


def npu_rotary_mul(
    input: torch.Tensor,  # torch_npu's argument name, shadowing the builtin on purpose
    r1: torch.Tensor,
    r2: torch.Tensor,
    rotary_mode: str = "half",
) -> torch.Tensor:
    """Rotary embedding: ``x * r1 + rotate(x) * r2`` with ``rotate`` by halves or interleaved pairs."""
    if rotary_mode == "half":
        x1, x2 = input.chunk(2, dim=-1)
        rotated = torch.cat((-x2, x1), dim=-1)
    elif rotary_mode == "interleave":
        rotated = torch.stack((-input[..., 1::2], input[..., 0::2]), dim=-1).flatten(-2)
    else:
        raise ValueError(f"npu_rotary_mul: rotary_mode must be 'half' or 'interleave', got {rotary_mode!r}")
    return input * r1 + rotated * r2


def npu_swiglu(input: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """SwiGLU: split ``input`` in two along ``dim`` and return ``silu(a) * b``."""
    a, b = input.chunk(2, dim=dim)
    return functional.silu(a) * b
