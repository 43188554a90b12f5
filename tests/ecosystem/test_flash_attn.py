"""The flash_attn drop-in on the simulated NPU, against an independent float64 attention with flash-attn's rules.

Tolerances (max abs error, relative to max(1, |reference|)): outputs fp16 2e-3, bf16 1.6e-2 (one rounding of
the fp32 result); gradients fp16 1e-2, bf16 6e-2; LSE 1e-4 (computed in fp32 from the same inputs).
"""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

OUT_TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}
GRAD_TOL = {torch.float16: 1e-2, torch.bfloat16: 6e-2, torch.float32: 1e-4}


@pytest.fixture(scope="module")
def fa(sim):
    from ascend_compat.ecosystem import flash_attn

    return flash_attn


def reference(
    q, k, v, causal=False, window=(-1, -1), scale=None, alibi=None, softcap=0.0, kv_len=None, kv_start=None,
    probs=False,
):  # fmt: skip
    """flash-attn semantics in float64 on the CPU: (B, Sq, H, D) inputs; returns (out, lse (B, H, Sq)).

    Query i sits at position i + Sk - Sq (bottom-right alignment); it sees keys j with
    i + Sk - Sq - left <= j <= i + Sk - Sq + right (causal: right = 0); ``kv_len`` (B,) limits the keys per row.
    ``kv_start`` (B,): left padding (flash-attn's cache_leftpad): row b's sequence is the slots
    [kv_start, kv_len), key j is its token j - kv_start and Sk is kv_len - kv_start. ``probs``: also return the
    softmax probabilities (B, H, Sq, Sk).
    """
    q, k, v = (t.detach().cpu().double() for t in (q, k, v))
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    k = k.repeat_interleave(h // hk, dim=2)
    v = v.repeat_interleave(h // hk, dim=2)
    scale = d**-0.5 if scale is None else scale
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    lens = torch.full((b,), sk) if kv_len is None else torch.as_tensor(kv_len)
    start = torch.zeros(b, dtype=torch.int64) if kv_start is None else torch.as_tensor(kv_start).long()
    i = torch.arange(sq).view(1, 1, -1, 1)
    slot = torch.arange(sk).view(1, 1, 1, -1)
    j = slot - start.view(-1, 1, 1, 1)  # token index within the sequence (negative: padding)
    anchor = (lens - start - sq).view(-1, 1, 1, 1)
    rel = j - i - anchor
    if alibi is not None:
        slopes = alibi.detach().cpu().double().reshape(-1, h, 1, 1)
        s = s - slopes * rel.abs()
    left, right = window
    if causal:
        right = 0
    masked = (slot >= lens.view(-1, 1, 1, 1)) | (j < 0)
    if right >= 0:
        masked = masked | (rel > right)
    if left >= 0:
        masked = masked | (rel < -left)
    s = s.masked_fill(masked, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    out = torch.einsum("bhqk,bkhd->bqhd", p, v)
    return (out, lse, p) if probs else (out, lse)


def close(actual, expected, tol):
    actual = actual.detach().cpu().double()
    err = (actual - expected).abs().max().item()
    assert err <= tol * max(1.0, expected.abs().max().item()), f"max abs error {err} > {tol}"


def rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype).to("npu").requires_grad_()


GRID = [
    (causal, window, heads, dtype)
    for causal in (False, True)
    for window in ((-1, -1), (3, 1), (2, 0))
    for heads in ((4, 4), (4, 2), (4, 1))
    for dtype in (torch.float16, torch.bfloat16)
]


@pytest.mark.parametrize(("causal", "window", "heads", "dtype"), GRID)
@pytest.mark.parametrize(("sq", "sk"), [(6, 6), (3, 8)])
def test_forward_backward_lse_grid(fa, causal, window, heads, dtype, sq, sk):
    hq, hk = heads
    q, k, v = rand((2, sq, hq, 16), dtype, 1), rand((2, sk, hk, 16), dtype, 2), rand((2, sk, hk, 16), dtype, 3)
    out, lse, _ = fa.flash_attn_func(q, k, v, causal=causal, window_size=window, return_attn_probs=True)
    assert out.device.type == "npu" and out.dtype == dtype and out.shape == q.shape
    assert lse.dtype == torch.float32 and lse.shape == (2, hq, sq)
    ref_q, ref_k, ref_v = (t.detach().cpu().double().requires_grad_() for t in (q, k, v))
    ref, ref_lse = reference(ref_q, ref_k, ref_v, causal, window)
    close(out, ref, OUT_TOL[dtype])
    finite = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse.cpu()), finite)  # rows with no key: +inf, as flash-attn returns
    close(lse.cpu()[finite], ref_lse[finite], 1e-4 if dtype == torch.float16 else 1e-3)

    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    out.backward(grad.to("npu"))
    # The reference's autograd needs graph-tracked inputs: rebuild it from leaves.
    ref_q, ref_k, ref_v = (t.detach().cpu().double().requires_grad_() for t in (q, k, v))
    ref_out = _reference_grad(ref_q, ref_k, ref_v, causal, window)
    ref_out.backward(grad.double())
    for got, want in ((q.grad, ref_q.grad), (k.grad, ref_k.grad), (v.grad, ref_v.grad)):
        assert got.device.type == "npu"
        close(got, want, GRAD_TOL[dtype])


def _reference_grad(q, k, v, causal, window):
    _, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    kk = k.repeat_interleave(h // hk, dim=2)
    vv = v.repeat_interleave(h // hk, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, kk) * d**-0.5
    rel = torch.arange(sk).view(1, -1) - torch.arange(sq).view(-1, 1) - (sk - sq)
    left, right = window
    right = 0 if causal else right
    masked = torch.zeros_like(rel, dtype=torch.bool)
    if right >= 0:
        masked |= rel > right
    if left >= 0:
        masked |= rel < -left
    p = torch.softmax(s.masked_fill(masked, -math.inf), dim=-1).nan_to_num(0.0)
    return torch.einsum("bhqk,bkhd->bqhd", p, vv)


def test_causal_is_bottom_right_aligned_when_sq_differs_from_sk(fa):
    # flash-attn >= 2.1's documented example: Sq = 2, Sk = 5, causal keeps [1 1 1 1 0] and [1 1 1 1 1].
    q = torch.zeros(1, 2, 1, 8, dtype=torch.float16, device="npu")  # equal scores: the output is a mean
    k = torch.zeros(1, 5, 1, 8, dtype=torch.float16, device="npu")
    v = torch.arange(5, dtype=torch.float16).view(1, 5, 1, 1).expand(1, 5, 1, 8).contiguous().to("npu")
    out = fa.flash_attn_func(q, k, v, causal=True)
    assert out[0, :, 0, 0].cpu().tolist() == [1.5, 2.0]  # mean(0..3), mean(0..4); top-left would give 0, 0.5


def test_softmax_scale_default_and_explicit(fa):
    q, k, v = (rand((1, 4, 2, 32), torch.float16, s) for s in (5, 6, 7))
    close(fa.flash_attn_func(q, k, v), reference(q, k, v)[0], OUT_TOL[torch.float16])
    close(fa.flash_attn_func(q, k, v, softmax_scale=0.5), reference(q, k, v, scale=0.5)[0], OUT_TOL[torch.float16])


@pytest.mark.parametrize("slopes_shape", [(4,), (2, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_alibi_through_pse(fa, slopes_shape, causal):
    q, k, v = (
        rand((2, 5, 4, 16), torch.float16, 8),
        rand((2, 7, 4, 16), torch.float16, 9),
        rand((2, 7, 4, 16), torch.float16, 10),
    )
    slopes = torch.rand(slopes_shape, generator=torch.Generator().manual_seed(3)).to("npu")
    out = fa.flash_attn_func(q, k, v, causal=causal, alibi_slopes=slopes)
    close(out, reference(q, k, v, causal, alibi=slopes)[0], OUT_TOL[torch.float16])


def test_softcap_fallback_is_correct_and_warns(fa):
    q, k, v = (rand((1, 6, 2, 16), torch.bfloat16, s) for s in (11, 12, 13))
    with pytest.warns(RuntimeWarning, match="softcap"):
        out, lse, _ = fa.flash_attn_func(q * 4, k * 4, v, causal=True, softcap=5.0, return_attn_probs=True)
    ref, ref_lse = reference(q * 4, k * 4, v, True, softcap=5.0)
    close(out, ref, OUT_TOL[torch.bfloat16])
    close(lse, ref_lse, 1e-3)


def test_packed_variants_equal_unpacked(fa):
    qkv = rand((2, 5, 3, 4, 16), torch.float16, 14)
    q, k, v = qkv.unbind(2)
    expect = fa.flash_attn_func(q, k, v, causal=True)
    assert torch.equal(fa.flash_attn_qkvpacked_func(qkv, causal=True).cpu(), expect.cpu())
    kv = torch.stack((k, v), dim=2)
    assert torch.equal(fa.flash_attn_kvpacked_func(q, kv, causal=True).cpu(), expect.cpu())


def _varlen_case(dtype, lens_q, lens_k, hq, hk, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(sum(lens_q), hq, 16, generator=g).to(dtype).to("npu")
    k = torch.randn(sum(lens_k), hk, 16, generator=g).to(dtype).to("npu")
    v = torch.randn(sum(lens_k), hk, 16, generator=g).to(dtype).to("npu")
    cu_q = torch.tensor([0, *torch.tensor(lens_q).cumsum(0).tolist()], dtype=torch.int32, device="npu")
    cu_k = torch.tensor([0, *torch.tensor(lens_k).cumsum(0).tolist()], dtype=torch.int32, device="npu")
    return q, k, v, cu_q, cu_k


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("causal", "window"), [(False, (-1, -1)), (True, (-1, -1)), (True, (2, 0)), (False, (1, 1))])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2)])
def test_varlen_equals_per_sequence_reference(fa, dtype, causal, window, heads):
    lens_q, lens_k = [3, 1, 5], [4, 6, 5]
    q, k, v, cu_q, cu_k = _varlen_case(dtype, lens_q, lens_k, *heads, seed=20)
    q.requires_grad_()
    out, lse, _ = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=causal,
                                            window_size=window, return_attn_probs=True)  # fmt: skip
    assert out.shape == q.shape and lse.shape == (heads[0], sum(lens_q))
    out.sum().backward()
    assert q.grad is not None and q.grad.device.type == "npu"
    sq0 = sk0 = 0
    for lq, lk in zip(lens_q, lens_k):
        ref, ref_lse = reference(q[sq0 : sq0 + lq][None], k[sk0 : sk0 + lk][None], v[sk0 : sk0 + lk][None], causal,
                                 window)  # fmt: skip
        close(out[sq0 : sq0 + lq], ref[0], OUT_TOL[dtype])
        fin = torch.isfinite(ref_lse[0])
        close(lse[:, sq0 : sq0 + lq].cpu()[fin], ref_lse[0][fin], 1e-3)
        sq0, sk0 = sq0 + lq, sk0 + lk


def test_varlen_alibi_and_qkvpacked(fa):
    lens = [2, 5]
    q, k, v, cu, _ = _varlen_case(torch.float16, lens, lens, 2, 2, seed=21)
    slopes = torch.tensor([0.5, 0.25], device="npu")
    with pytest.warns(RuntimeWarning):
        out = fa.flash_attn_varlen_func(q, k, v, cu, cu, 5, 5, causal=True, alibi_slopes=slopes)
    ref = reference(q[2:][None], k[2:][None], v[2:][None], True, alibi=slopes)[0]
    close(out[2:], ref[0], OUT_TOL[torch.float16])
    packed = fa.flash_attn_varlen_qkvpacked_func(torch.stack((q, k, v), dim=1), cu, 5, causal=True)
    assert torch.equal(packed.cpu(), fa.flash_attn_varlen_func(q, k, v, cu, cu, 5, 5, causal=True).cpu())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("causal", "window"), [(True, (-1, -1)), (False, (-1, -1)), (True, (3, 0))])
@pytest.mark.parametrize("heads", [(4, 4), (4, 1)])
def test_kvcache_appends_and_attends(fa, dtype, causal, window, heads):
    hq, hk = heads
    g = torch.Generator().manual_seed(30)
    b, cap, d, snew = 3, 12, 16, 2
    k_cache = torch.randn(b, cap, hk, d, generator=g).to(dtype).to("npu")
    v_cache = torch.randn(b, cap, hk, d, generator=g).to(dtype).to("npu")
    before_k = k_cache.cpu().clone()
    q = torch.randn(b, snew, hq, d, generator=g).to(dtype).to("npu")
    k_new = torch.randn(b, snew, hk, d, generator=g).to(dtype).to("npu")
    v_new = torch.randn(b, snew, hk, d, generator=g).to(dtype).to("npu")
    seqlens = torch.tensor([0, 4, 9], dtype=torch.int32, device="npu")
    out, lse = fa.flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new, cache_seqlens=seqlens, causal=causal,
                                          window_size=window, return_softmax_lse=True)  # fmt: skip
    for r, n in enumerate([0, 4, 9]):  # appended in place at each row's length
        assert torch.equal(k_cache[r, n : n + snew].cpu(), k_new[r].cpu())
        assert torch.equal(k_cache[r, :n].cpu(), before_k[r, :n])
    ref, ref_lse = reference(q, k_cache, v_cache, causal, window, kv_len=[2, 6, 11])
    close(out, ref, OUT_TOL[dtype])
    close(lse, ref_lse, 1e-3)


def test_kvcache_rotary_and_batch_idx_and_paged(fa):
    from ascend_compat.ecosystem.flash_attn.layers.rotary import apply_rotary_emb

    g = torch.Generator().manual_seed(31)
    d, hk = 16, 2
    k_cache = torch.zeros(4, 8, hk, d, dtype=torch.float16, device="npu")
    v_cache = torch.zeros(4, 8, hk, d, dtype=torch.float16, device="npu")
    q = torch.randn(2, 1, hk, d, generator=g).half().to("npu")
    k_new = torch.randn(2, 1, hk, d, generator=g).half().to("npu")
    v_new = torch.randn(2, 1, hk, d, generator=g).half().to("npu")
    angles = torch.arange(8).view(-1, 1) * torch.tensor([1.0, 0.5, 0.25, 0.1])
    cos, sin = angles.cos().to("npu"), angles.sin().to("npu")
    idx = torch.tensor([3, 1], device="npu")
    out = fa.flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new, rotary_cos=cos, rotary_sin=sin,
                                     cache_seqlens=2, cache_batch_idx=idx, causal=True)  # fmt: skip
    k_rot = apply_rotary_emb(k_new, cos, sin, interleaved=True, seqlen_offsets=2)
    assert torch.allclose(k_cache[3, 2].cpu().float(), k_rot[0, 0].cpu().float(), atol=1e-3)
    assert k_cache[0].abs().sum().item() == 0  # rows not in cache_batch_idx untouched
    q_rot = apply_rotary_emb(q, cos, sin, interleaved=True, seqlen_offsets=2)
    ref = reference(q_rot, k_cache[idx], v_cache[idx], True, kv_len=[3, 3])[0]
    close(out, ref, OUT_TOL[torch.float16])

    # Paged: pages of 4 tokens; row 0 uses pages (2, 0), row 1 uses (1, 3).
    pages_k = torch.randn(4, 4, hk, d, generator=g).half().to("npu")
    pages_v = torch.randn(4, 4, hk, d, generator=g).half().to("npu")
    table = torch.tensor([[2, 0], [1, 3]], dtype=torch.int32, device="npu")
    lens = torch.tensor([5, 2], device="npu")
    out = fa.flash_attn_with_kvcache(
        q, pages_k, pages_v, k_new, v_new, cache_seqlens=lens, block_table=table, causal=True
    )
    assert torch.equal(pages_k[0, 1].cpu(), k_new[0, 0].cpu())  # row 0, position 5 → page 0, offset 1
    assert torch.equal(pages_k[1, 2].cpu(), k_new[1, 0].cpu())  # row 1, position 2 → page 1, offset 2
    dense_k = pages_k[table.long()].reshape(2, 8, hk, d)
    dense_v = pages_v[table.long()].reshape(2, 8, hk, d)
    close(out, reference(q, dense_k, dense_v, True, kv_len=[6, 3])[0], OUT_TOL[torch.float16])


def _leftpad_case(dtype, hq, hk, seed):
    g = torch.Generator().manual_seed(seed)
    b, cap, d, snew = 3, 12, 16, 2
    k_cache = torch.randn(b, cap, hk, d, generator=g).to(dtype)
    v_cache = torch.randn(b, cap, hk, d, generator=g).to(dtype)
    # Padding slots hold large values, so attending to them by mistake changes the output a lot.
    leftpad = [0, 3, 5]
    for r, p in enumerate(leftpad):
        k_cache[r, :p] = 8.0
        v_cache[r, :p] = 50.0
    q = torch.randn(b, snew, hq, d, generator=g).to(dtype).to("npu")
    k_new = torch.randn(b, snew, hk, d, generator=g).to(dtype).to("npu")
    v_new = torch.randn(b, snew, hk, d, generator=g).to(dtype).to("npu")
    return q, k_cache.to("npu"), v_cache.to("npu"), k_new, v_new, leftpad, [3, 6, 9]  # cache_seqlens >= leftpad


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("causal", "window"), [(True, (-1, -1)), (False, (-1, -1)), (True, (3, 0)), (False, (2, 1))])
@pytest.mark.parametrize("heads", [(4, 4), (4, 1)])
@pytest.mark.parametrize("alibi", [False, True])
def test_kvcache_leftpad_masks_padding(fa, dtype, causal, window, heads, alibi):
    hq, hk = heads
    q, k_cache, v_cache, k_new, v_new, leftpad, seqlens = _leftpad_case(dtype, hq, hk, seed=32)
    before = k_cache.cpu().clone()
    slopes = torch.rand(3, hq, generator=torch.Generator().manual_seed(5)).to("npu") if alibi else None
    out, lse = fa.flash_attn_with_kvcache(
        q, k_cache, v_cache, k_new, v_new, cache_seqlens=torch.tensor(seqlens, dtype=torch.int32, device="npu"),
        cache_leftpad=torch.tensor(leftpad, dtype=torch.int32, device="npu"), causal=causal, window_size=window,
        alibi_slopes=slopes, return_softmax_lse=True,
    )  # fmt: skip
    for r, n in enumerate(seqlens):  # flash-attn: cache_seqlens counts from slot 0, padding included
        assert torch.equal(k_cache[r, n : n + 2].cpu(), k_new[r].cpu())
        assert torch.equal(k_cache[r, :n].cpu(), before[r, :n])
    total = [n + 2 for n in seqlens]
    ref, ref_lse = reference(q, k_cache, v_cache, causal, window, alibi=slopes, kv_len=total, kv_start=leftpad)
    close(out, ref, OUT_TOL[dtype])
    fin = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse.cpu()), fin)
    close(lse.cpu()[fin], ref_lse[fin], 1e-3)


def test_kvcache_leftpad_row_equals_the_unpadded_sequence(fa):
    # A left-padded row must give what the same sequence gives alone, stored from slot 0 (no rotary: its positions
    # are slot numbers in flash-attn, so they differ by design).
    q, k_cache, v_cache, k_new, v_new, leftpad, seqlens = _leftpad_case(torch.float16, 4, 2, seed=33)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625], device="npu")
    out = fa.flash_attn_with_kvcache(
        q, k_cache, v_cache, k_new, v_new, cache_seqlens=torch.tensor(seqlens, device="npu"),
        cache_leftpad=torch.tensor(leftpad, dtype=torch.int32, device="npu"), causal=True, window_size=(4, 0),
        alibi_slopes=slopes,
    )  # fmt: skip
    for r, (p, n) in enumerate(zip(leftpad, seqlens)):
        k_alone = k_cache[r : r + 1, p:].clone()
        v_alone = v_cache[r : r + 1, p:].clone()
        alone = fa.flash_attn_with_kvcache(q[r : r + 1], k_alone, v_alone, cache_seqlens=n + 2 - p, causal=True,
                                           window_size=(4, 0), alibi_slopes=slopes)  # fmt: skip
        assert (out[r].cpu().float() - alone[0].cpu().float()).abs().max().item() <= 2e-3


def test_kvcache_leftpad_with_rotary_uses_slot_positions(fa):
    from ascend_compat.ecosystem.flash_attn.layers.rotary import apply_rotary_emb

    q, k_cache, v_cache, k_new, v_new, leftpad, seqlens = _leftpad_case(torch.float16, 2, 2, seed=34)
    angles = torch.arange(12).view(-1, 1) * torch.tensor([0.9, 0.4, 0.2, 0.05])
    cos, sin = angles.cos().to("npu"), angles.sin().to("npu")
    lens = torch.tensor(seqlens, dtype=torch.int32, device="npu")
    out = fa.flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new, rotary_cos=cos, rotary_sin=sin,
                                     cache_seqlens=lens, cache_leftpad=torch.tensor(leftpad, device="npu"),
                                     causal=True, rotary_interleaved=False)  # fmt: skip
    k_rot = apply_rotary_emb(k_new, cos, sin, seqlen_offsets=lens)
    for r, n in enumerate(seqlens):
        assert torch.allclose(k_cache[r, n : n + 2].cpu().float(), k_rot[r].cpu().float(), atol=1e-3)
    q_rot = apply_rotary_emb(q, cos, sin, seqlen_offsets=lens)
    total = [n + 2 for n in seqlens]
    close(out, reference(q_rot, k_cache, v_cache, True, kv_len=total, kv_start=leftpad)[0], OUT_TOL[torch.float16])


def test_kvcache_leftpad_invalid_arguments(fa):
    q, k_cache, v_cache, *_ = _leftpad_case(torch.float16, 2, 2, seed=35)
    with pytest.raises(ValueError, match="cache_leftpad must be a"):
        fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=4, cache_leftpad=torch.zeros(2, device="npu"))
    with pytest.raises(TypeError, match="cache_leftpad must hold integers"):
        fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=4, cache_leftpad=torch.zeros(3, device="npu"))
    table = torch.zeros(3, 3, dtype=torch.int32, device="npu")
    with pytest.raises(NotImplementedError, match="cache_leftpad with a paged block_table"):
        fa.flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=4, block_table=table,
                                   cache_leftpad=torch.zeros(3, dtype=torch.int32, device="npu"))  # fmt: skip


def test_return_attn_probs_without_dropout_is_empty_like_flash_attn(fa):
    # flash-attn >= 2.3 only fills S_dmask when dropout_p > 0; otherwise its kernel returns an empty (0,) tensor.
    q, k, v = (rand((2, 5, 2, 16), torch.bfloat16, s) for s in (40, 41, 42))
    lens = [2, 3]
    cu = torch.tensor([0, 2, 5], dtype=torch.int32, device="npu")
    flat = [t.detach().reshape(10, 2, 16)[:5] for t in (q, k, v)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the softcap fallback's notice
        results = [
            fa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True),
            fa.flash_attn_func(q, k, v, softcap=3.0, return_attn_probs=True),
            fa.flash_attn_varlen_func(*flat, cu, cu, max(lens), max(lens), return_attn_probs=True),
        ]
    for res in results:
        assert len(res) == 3
        s_dmask = res[2]
        assert isinstance(s_dmask, torch.Tensor) and s_dmask.shape == (0,)
        assert s_dmask.dtype == torch.bfloat16 and s_dmask.device.type == "npu"


@pytest.mark.parametrize(("causal", "window", "heads"), [(False, (-1, -1), (2, 2)), (True, (-1, -1), (4, 2)),
                                                         (False, (2, 1), (2, 1))])  # fmt: skip
def test_return_attn_probs_with_dropout_gives_probabilities_and_pattern(fa, causal, window, heads):
    hq, hk = heads
    q, k, v = (
        rand((2, 5, hq, 16), torch.float16, 43),
        rand((2, 7, hk, 16), torch.float16, 44),
        rand((2, 7, hk, 16), torch.float16, 45),
    )
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the plain-torch path's notice
        out, lse, s_dmask = fa.flash_attn_func(q, k, v, dropout_p=0.4, causal=causal, window_size=window,
                                               return_attn_probs=True)  # fmt: skip
    # (B, H, Sq, Sk) rounded up to multiples of 128, as flash-attn allocates it; zeros outside.
    assert s_dmask.shape == (2, hq, 128, 128) and s_dmask.dtype == torch.float16 and s_dmask.device.type == "npu"
    s_dmask = s_dmask.cpu().double()
    assert s_dmask[:, :, 5:].abs().max().item() == 0 and s_dmask[:, :, :, 7:].abs().max().item() == 0
    block = s_dmask[:, :, :5, :7]
    _, ref_lse, ref_p = reference(q, k, v, causal, window, probs=True)
    close(block.abs(), ref_p, 2e-3)  # |S_dmask| is the softmax output
    kept = block >= 0  # flash-attn's encoding: negative means dropped
    assert (~kept & (ref_p > 0)).any() and (kept & (ref_p > 0)).any()
    # The output is exactly the attention with that dropout pattern, rescaled by 1 / (1 - p).
    vv = v.detach().cpu().double().repeat_interleave(hq // hk, dim=2)
    expect = torch.einsum("bhqk,bkhd->bqhd", ref_p * kept / 0.6, vv)
    close(out, expect, OUT_TOL[torch.float16])
    close(lse, ref_lse, 1e-3)
    grad = torch.ones_like(out)
    out.backward(grad)
    assert q.grad is not None and torch.isfinite(q.grad.cpu()).all()


def test_varlen_return_attn_probs_with_dropout_is_per_sequence(fa):
    lens_q, lens_k = [3, 1, 4], [4, 6, 5]
    q, k, v, cu_q, cu_k = _varlen_case(torch.float16, lens_q, lens_k, 2, 2, seed=46)
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out, lse, s_dmask = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 4, 6, dropout_p=0.3, causal=True,
                                                      return_attn_probs=True)  # fmt: skip
    assert s_dmask.shape == (3, 2, 128, 128) and lse.shape == (2, 8)
    s_dmask = s_dmask.cpu().double()
    sq0 = sk0 = 0
    for b, (lq, lk) in enumerate(zip(lens_q, lens_k)):
        block = s_dmask[b, :, :lq, :lk]
        assert s_dmask[b, :, lq:].abs().max().item() == 0 and s_dmask[b, :, :, lk:].abs().max().item() == 0
        qs, ks, vs = q[sq0 : sq0 + lq][None], k[sk0 : sk0 + lk][None], v[sk0 : sk0 + lk][None]
        _, _, ref_p = reference(qs, ks, vs, True, probs=True)
        close(block.abs(), ref_p[0], 2e-3)
        expect = torch.einsum("hqk,khd->qhd", ref_p[0] * (block >= 0) / 0.7, vs[0].cpu().double())
        close(out[sq0 : sq0 + lq], expect, OUT_TOL[torch.float16])
        sq0, sk0 = sq0 + lq, sk0 + lk


def test_bert_padding_round_trip(fa):
    from ascend_compat.ecosystem.flash_attn import bert_padding

    x = torch.randn(3, 5, 4, device="npu", requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], device="npu")
    packed, indices, cu, max_len, used = bert_padding.unpad_input(x, mask)
    assert packed.shape == (9, 4) and cu.tolist() == [0, 3, 8, 9] and max_len == 5 and used.tolist() == [3, 5, 1]
    assert cu.dtype == torch.int32
    back = bert_padding.pad_input(packed, indices, 3, 5)
    assert torch.equal(back.cpu(), (x * mask.unsqueeze(-1)).detach().cpu())
    back.sum().backward()
    assert torch.equal(x.grad.cpu(), mask.unsqueeze(-1).expand(3, 5, 4).float().cpu())


def test_rotary_matches_halves_formula(fa):
    from ascend_compat.ecosystem.flash_attn.layers.rotary import apply_rotary_emb

    x = torch.randn(1, 3, 2, 8, device="npu")
    angles = torch.arange(3).view(-1, 1) * torch.tensor([1.0, 0.3])
    out = apply_rotary_emb(x, angles.cos().to("npu"), angles.sin().to("npu"))  # rotary_dim 4 of 8, halves
    x1, x2, c, s = x[..., :2].cpu(), x[..., 2:4].cpu(), angles.cos().view(1, 3, 1, 2), angles.sin().view(1, 3, 1, 2)
    expect = torch.cat((x1 * c - x2 * s, x1 * s + x2 * c, x[..., 4:].cpu()), dim=-1)
    assert torch.allclose(out.cpu(), expect, atol=1e-6)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: (torch.randn(2, 4, 2, 16, device="npu").double(),) * 3, "dtype"),
        (lambda: (torch.randn(2, 4, 16, device="npu").half(),) * 3, "must be 4-D"),
        (lambda: (torch.randn(2, 4, 2, 800, device="npu").half(),) * 3, "head dim 800"),
        (lambda: (torch.randn(2, 4, 2, 16).half(),) * 3, "one NPU device"),
        (
            lambda: (
                torch.randn(2, 4, 3, 16, device="npu").half(),
                torch.randn(2, 4, 2, 16, device="npu").half(),
                torch.randn(2, 4, 2, 16, device="npu").half(),
            ),
            "multiple of key/value heads",
        ),
    ],
)
def test_invalid_inputs_name_the_problem(fa, make, message):
    q, k, v = make()
    with pytest.raises((TypeError, ValueError, RuntimeError), match=message):
        fa.flash_attn_func(q, k, v)


def test_only_real_names_exist(fa):
    assert set(fa.__all__) == {
        "flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func", "flash_attn_varlen_func",
        "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func", "flash_attn_with_kvcache",
    }  # fmt: skip
    with pytest.raises(AttributeError):
        fa.flash_attn_triton  # noqa: B018 (a name the drop-in does not have)
