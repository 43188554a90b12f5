"""torch_npu fused ops on the simulated device against plain reference math (float64 on the CPU)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

B, NQ, SQ, SKV, D = 2, 4, 5, 7, 8
PRE, NEXT = 2, 1


def _visible(mode: int, user_mask: torch.Tensor | None, sq: int, skv: int) -> torch.Tensor:
    """Which (query, key) pairs may attend, built with tril/triu independently of the implementation."""
    ones = torch.ones(sq, skv, dtype=torch.bool)
    off = skv - sq
    if user_mask is None:
        return ones
    if mode == 0:
        return ~user_mask & ones.tril(NEXT).triu(-PRE)
    if mode == 1:
        return ~user_mask
    if mode == 2:
        return ones.tril(0)
    if mode == 3:
        return ones.tril(off)
    if mode == 4:
        return ones.tril(off + NEXT).triu(off - PRE)
    raise AssertionError(mode)


def _reference(q, k, v, visible, scale, pse=None):
    """softmax(scale * (QK^T + pse), masked) @ V per head in float64; GQA by repeating kv heads."""
    q, k, v = q.double(), k.double(), v.double()
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    s = q @ k.transpose(-1, -2)
    if pse is not None:
        s = s + pse.double()
    s = (s * scale).masked_fill(~visible, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return p @ v, s


def _layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    """BNSD -> layout."""
    if layout == "BNSD":
        return x
    bsnd = x.transpose(1, 2)
    if layout == "BSND":
        return bsnd
    bsh = bsnd.reshape(bsnd.shape[0], bsnd.shape[1], -1)
    return bsh if layout == "BSH" else bsh.transpose(0, 1)


def _inputs(dtype, nkv=NQ, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, NQ, SQ, D, generator=g).to(dtype)
    k = torch.randn(B, nkv, SKV, D, generator=g).to(dtype)
    v = torch.randn(B, nkv, SKV, D, generator=g).to(dtype)
    return q, k, v


def _mask_for(mode: int, seed=1):
    if mode in (0, 1):
        return torch.rand(SQ, SKV, generator=torch.Generator().manual_seed(seed)) < 0.3
    return torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)  # the documented compressed mask


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4])
def test_fusion_attention_forward_backward(sim, mode, layout, dtype):
    import torch_npu

    dt = getattr(torch, dtype)
    q, k, v = _inputs(dt)
    user = _mask_for(mode)
    scale = 1 / math.sqrt(D)
    qn, kn, vn = (_layout(t, layout).npu().requires_grad_() for t in (q, k, v))
    out, smax, ssum, sout, seed, offset, numels = torch_npu.npu_fusion_attention(
        qn, kn, vn, NQ, layout, atten_mask=user.npu(), scale=scale, pre_tockens=PRE, next_tockens=NEXT,
        sparse_mode=mode,
    )  # fmt: skip
    visible = _visible(mode, user if mode in (0, 1) else user[:SQ, :SKV], SQ, SKV)
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    want, scores = _reference(qr, kr, vr, visible, scale)
    tol = {"float32": 1e-5, "float16": 2e-3}[dtype]
    assert out.device.type == "npu" and out.dtype == dt and out.shape == _layout(q, layout).shape
    assert torch.allclose(out.cpu().double(), _layout(want, layout).detach(), atol=tol * 5, rtol=tol)
    # softmax statistics: row max of the scaled, masked scores, and sum of exp(score - max)
    assert smax.shape == (B, NQ, SQ, 8) and smax.dtype == torch.float32
    row_max = scores.detach().amax(-1)
    finite = torch.isfinite(row_max)
    assert torch.allclose(smax[..., 0].cpu().double()[finite], row_max[finite], atol=tol * 5, rtol=tol)
    row_sum = torch.exp(scores.detach() - row_max.unsqueeze(-1)).nan_to_num(0).sum(-1)
    assert torch.allclose(ssum[..., 0].cpu().double()[finite], row_sum[finite], atol=tol * 5, rtol=tol)
    assert sout.numel() == 0 and isinstance(seed, int) and isinstance(offset, int) and numels == B * NQ * SQ * SKV
    # backward
    grad = torch.randn_like(want, dtype=torch.float64)
    (want * grad).sum().backward()
    (out.double() * _layout(grad, layout).npu()).sum().backward()
    for got_t, ref_t in ((qn, qr), (kn, kr), (vn, vr)):
        assert got_t.grad.device.type == "npu"
        gtol = tol * 20
        assert torch.allclose(got_t.grad.cpu().double(), _layout(ref_t.grad, layout), atol=gtol, rtol=gtol)


@pytest.mark.parametrize("nkv", [1, 2])
def test_fusion_attention_gqa_and_mqa(sim, nkv):
    import torch_npu

    q, k, v = _inputs(torch.float32, nkv=nkv)
    out = torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), NQ, "BNSD", scale=0.5)[0]
    want, _ = _reference(q, k, v, torch.ones(SQ, SKV, dtype=torch.bool), 0.5)
    assert torch.allclose(out.cpu().double(), want, atol=1e-5)


def test_no_mask_means_no_masking_whatever_the_mode(sim):
    import torch_npu

    q, k, v = _inputs(torch.float32)
    full, _ = _reference(q, k, v, torch.ones(SQ, SKV, dtype=torch.bool), 1.0)
    for mode in (0, 2, 3, 4):
        out = torch_npu.npu_fusion_attention(
            q.npu(), k.npu(), v.npu(), NQ, "BNSD", sparse_mode=mode, pre_tockens=0, next_tockens=0
        )[0]
        assert torch.allclose(out.cpu().double(), full, atol=1e-5), mode


def test_default_scale_is_one_and_pse_is_added_before_scaling(sim):
    import torch_npu

    q, k, v = _inputs(torch.float32)
    pse = torch.randn(B, NQ, SQ, SKV)
    out = torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), NQ, "BNSD", pse=pse.npu(), scale=0.25)[0]
    want, _ = _reference(q, k, v, torch.ones(SQ, SKV, dtype=torch.bool), 0.25, pse=pse)
    assert torch.allclose(out.cpu().double(), want, atol=1e-5)
    unscaled = torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), NQ, "BNSD")[0]
    want1, _ = _reference(q, k, v, torch.ones(SQ, SKV, dtype=torch.bool), 1.0)
    assert torch.allclose(unscaled.cpu().double(), want1, atol=1e-5)


@pytest.mark.parametrize("mode", [None, 3])
def test_fusion_attention_tnd_varlen(sim, mode):
    import torch_npu

    lens_q, lens_kv = [3, 1, 4], [5, 2, 4]
    cu_q = [sum(lens_q[: i + 1]) for i in range(3)]
    cu_kv = [sum(lens_kv[: i + 1]) for i in range(3)]
    g = torch.Generator().manual_seed(3)
    q = torch.randn(cu_q[-1], NQ, D, generator=g)
    k = torch.randn(cu_kv[-1], 2, D, generator=g)
    v = torch.randn(cu_kv[-1], 2, D, generator=g)
    qn, kn, vn = (t.npu().requires_grad_() for t in (q, k, v))
    kwargs = {} if mode is None else {"atten_mask": _mask_for(3).npu(), "sparse_mode": 3}
    out, smax, *_ = torch_npu.npu_fusion_attention(
        qn, kn, vn, NQ, "TND", scale=0.3, actual_seq_qlen=cu_q, actual_seq_kvlen=cu_kv, **kwargs
    )
    assert out.shape == q.shape and smax.shape == (cu_q[-1], NQ, 8)
    qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
    pieces = []
    sq0 = skv0 = 0
    for lq, lk in zip(lens_q, lens_kv):
        qs = qr[sq0 : sq0 + lq].transpose(0, 1).unsqueeze(0)
        ks = kr[skv0 : skv0 + lk].transpose(0, 1).unsqueeze(0)
        vs = vr[skv0 : skv0 + lk].transpose(0, 1).unsqueeze(0)
        vis = _visible(3, torch.zeros(1), lq, lk) if mode == 3 else torch.ones(lq, lk, dtype=torch.bool)
        pieces.append(_reference(qs, ks, vs, vis, 0.3)[0][0].transpose(0, 1))
        sq0, skv0 = sq0 + lq, skv0 + lk
    want = torch.cat(pieces)
    assert torch.allclose(out.cpu().double(), want.detach(), atol=1e-5)
    grad = torch.randn_like(want)
    (want * grad).sum().backward()
    (out.double() * grad.npu()).sum().backward()
    for a, b in ((qn, qr), (kn, kr), (vn, vr)):
        assert torch.allclose(a.grad.cpu().double(), b.grad, atol=1e-4)


def test_fusion_attention_dropout_and_validation(sim):
    import torch_npu

    q, k, v = (t.npu() for t in _inputs(torch.float32))
    dropped = torch_npu.npu_fusion_attention(q, k, v, NQ, "BNSD", keep_prob=0.0)[0]
    assert torch.count_nonzero(dropped).item() == 0
    kept = torch_npu.npu_fusion_attention(q, k, v, NQ, "BNSD", keep_prob=0.5)[0]
    assert torch.isfinite(kept).all()
    for mode in (5, 6, 7, 8):
        with pytest.raises(NotImplementedError, match=f"sparse_mode {mode}"):
            torch_npu.npu_fusion_attention(q, k, v, NQ, "BNSD", sparse_mode=mode)
    with pytest.raises(ValueError, match="input_layout"):
        torch_npu.npu_fusion_attention(q, k, v, NQ, "NSD")
    with pytest.raises(ValueError, match="head dim 800"):
        big = torch.zeros(1, 1, 2, 800, device="npu")
        torch_npu.npu_fusion_attention(big, big, big, 1, "BNSD")
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        torch_npu.npu_fusion_attention(q, k[:, :3], v[:, :3], NQ, "BNSD")


def test_rms_norm_rotary_swiglu(sim):
    import torch_npu

    x = torch.randn(2, 3, 8)
    gamma = torch.randn(8)
    y, rstd = torch_npu.npu_rms_norm(x.npu(), gamma.npu(), epsilon=1e-5)
    ref_rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    assert rstd.shape == (2, 3, 1) and rstd.dtype == torch.float32
    assert torch.allclose(y.cpu(), x * ref_rstd * gamma, atol=1e-6)
    cos, sin = torch.randn(1, 3, 8), torch.randn(1, 3, 8)
    out = torch_npu.npu_rotary_mul(x.npu(), cos.npu(), sin.npu())
    x1, x2 = x[..., :4], x[..., 4:]
    assert torch.allclose(out.cpu(), x * cos + torch.cat((-x2, x1), -1) * sin, atol=1e-6)
    sw = torch_npu.npu_swiglu(x.npu(), dim=-1)
    assert torch.allclose(sw.cpu(), torch.nn.functional.silu(x[..., :4]) * x[..., 4:], atol=1e-6)
    xg = x.npu().requires_grad_()
    torch_npu.npu_swiglu(xg).sum().backward()
    assert xg.grad.shape == x.shape and xg.grad.device.type == "npu"
