"""flash_attn.layers.rotary.RotaryEmbedding and the drop-in's public names, on the simulated NPU.

The rotary reference is written independently: float64 complex rotation of each feature pair by
``exp(i * position * base ** (-2k / dim))`` (pairs (k, k + dim/2), or (2k, 2k + 1) when interleaved), with XPos
factors ``zeta_k ** ±((position - cache_len // 2) / scale_base)`` on q (+) and k (-).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def rotary(sim):
    from ascend_compat.ecosystem.flash_attn.layers import rotary

    return rotary


def rotate_ref(x, positions, dim, base=10000.0, interleaved=False, xpos=None):
    """x (B, S, H, D) on any device; positions (B, S) ints; xpos = (scale_base, cache_len, sign) or None."""
    x = x.detach().cpu().double()
    pos = torch.as_tensor(positions).cpu().double()
    k = torch.arange(dim // 2, dtype=torch.float64)
    theta = base ** (-2 * k / dim)
    angle = pos.unsqueeze(-1) * theta  # (B, S, dim/2)
    rot = torch.polar(torch.ones_like(angle), angle)
    if xpos is not None:
        scale_base, cache_len, sign = xpos
        zeta = (2 * k + 0.4 * dim) / (1.4 * dim)
        rot = rot * zeta ** (sign * (pos.unsqueeze(-1) - cache_len // 2) / scale_base)
    rot = rot.unsqueeze(-2)  # over heads
    xr = x[..., :dim]
    a, b = (xr[..., 0::2], xr[..., 1::2]) if interleaved else (xr[..., : dim // 2], xr[..., dim // 2 :])
    z = torch.complex(a, b) * rot
    if interleaved:
        out = torch.stack((z.real, z.imag), dim=-1).flatten(-2)
    else:
        out = torch.cat((z.real, z.imag), dim=-1)
    return torch.cat((out, x[..., dim:]), dim=-1)


def close(actual, expected, tol):
    err = (actual.detach().cpu().double() - expected).abs().max().item()
    assert err <= tol, f"max abs error {err} > {tol}"


def randn(shape, seed, dtype=torch.float32):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype).to("npu")


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rotary_dim", [16, 8])
def test_qkv_packed_in_place_with_int_offset(rotary, interleaved, rotary_dim):
    emb = rotary.RotaryEmbedding(rotary_dim, interleaved=interleaved, device="npu")
    qkv = randn((2, 5, 3, 2, 16), 1)
    original = qkv.cpu().clone()
    out = emb(qkv, seqlen_offset=3)
    assert out is qkv  # in place, as flash-attn
    pos = (torch.arange(5) + 3).expand(2, 5)
    close(qkv[:, :, 0], rotate_ref(original[:, :, 0], pos, rotary_dim, interleaved=interleaved), 1e-5)
    close(qkv[:, :, 1], rotate_ref(original[:, :, 1], pos, rotary_dim, interleaved=interleaved), 1e-5)
    assert torch.equal(qkv[:, :, 2].cpu(), original[:, :, 2])  # v untouched


def test_gqa_layout_and_q_kv_form_with_tensor_offsets(rotary):
    emb = rotary.RotaryEmbedding(16, base=500.0, device="npu")
    offsets = torch.tensor([0, 7], device="npu")
    pos = torch.arange(4).view(1, 4) + offsets.cpu().view(2, 1)
    # (B, S, nheads_q + 2 * nheads_k, D) with num_heads_q
    qkv = randn((2, 4, 4 + 2 * 1, 16), 2)
    original = qkv.cpu().clone()
    emb(qkv, seqlen_offset=offsets, max_seqlen=11, num_heads_q=4)
    close(qkv[:, :, :4], rotate_ref(original[:, :, :4], pos, 16, base=500.0), 1e-5)
    close(qkv[:, :, 4:5], rotate_ref(original[:, :, 4:5], pos, 16, base=500.0), 1e-5)
    assert torch.equal(qkv[:, :, 5:].cpu(), original[:, :, 5:])
    # q and a packed kv
    q, kv = randn((2, 4, 2, 16), 3), randn((2, 4, 2, 1, 16), 4)
    q0, kv0 = q.cpu().clone(), kv.cpu().clone()
    q_out, kv_out = emb(q, kv, seqlen_offset=offsets, max_seqlen=11)
    assert q_out is q and kv_out is kv
    close(q, rotate_ref(q0, pos, 16, base=500.0), 1e-5)
    close(kv[:, :, 0], rotate_ref(kv0[:, :, 0], pos, 16, base=500.0), 1e-5)
    assert torch.equal(kv[:, :, 1].cpu(), kv0[:, :, 1])


def test_xpos_scales_q_up_and_k_down(rotary):
    emb = rotary.RotaryEmbedding(16, scale_base=64, device="npu")
    q, kv = randn((1, 6, 2, 16), 5), randn((1, 6, 2, 2, 16), 6)
    q0, kv0 = q.cpu().clone(), kv.cpu().clone()
    emb(q, kv, seqlen_offset=2)  # cache of 8 positions, centred at 4
    pos = (torch.arange(6) + 2).view(1, 6)
    close(q, rotate_ref(q0, pos, 16, xpos=(64, 8, 1)), 1e-5)
    close(kv[:, :, 0], rotate_ref(kv0[:, :, 0], pos, 16, xpos=(64, 8, -1)), 1e-5)
    # The packed form uses the k factors for k too.
    qkv = torch.stack((q0, kv0[:, :, 0], kv0[:, :, 1]), dim=2).to("npu")
    emb(qkv, seqlen_offset=2)
    close(qkv[:, :, 1], rotate_ref(kv0[:, :, 0], pos, 16, xpos=(64, 8, -1)), 1e-5)


def test_half_precision_cache_and_gradient(rotary):
    emb = rotary.RotaryEmbedding(16, device="npu")
    x = randn((2, 5, 3, 2, 16), 7, torch.bfloat16).requires_grad_()
    qkv = x * 1  # a non-leaf, as a projection's output would be
    emb(qkv)
    assert qkv.dtype == torch.bfloat16 and emb._cos_cached.dtype == torch.bfloat16
    pos = torch.arange(5).expand(2, 5)
    close(qkv[:, :, 0].float(), rotate_ref(x[:, :, 0].float(), pos, 16), 3e-2)
    g = randn((2, 5, 3, 2, 16), 8, torch.bfloat16)
    qkv.backward(g)
    # A rotation's gradient is the inverse rotation of the incoming gradient.
    inverse = rotate_ref(g[:, :, 0].float(), -pos, 16)
    close(x.grad[:, :, 0].float(), inverse, 3e-2)
    assert torch.equal(x.grad[:, :, 2].cpu(), g[:, :, 2].cpu())


def test_positions_in_fp32_or_in_inv_freq_dtype(rotary):
    # pos_idx_in_fp32=False (flash-attn <= 2.7) builds positions in inv_freq's dtype: in bf16, 1997 and 1998 both
    # round to 2000, so their embeddings coincide; in fp32 (the default, and 2.8's only behaviour) they differ.
    x = randn((1, 1, 1, 16), 9).expand(2, 1, 1, 16).contiguous()
    offsets = torch.tensor([1997, 1998], device="npu")
    results = {}
    for fp32 in (True, False):
        emb = rotary.RotaryEmbedding(16, pos_idx_in_fp32=fp32).to(device="npu", dtype=torch.bfloat16)
        assert emb.inv_freq.dtype == torch.bfloat16
        y = x.clone()
        emb(y, y.new_zeros(2, 1, 2, 1, 16), seqlen_offset=offsets, max_seqlen=2000)
        results[fp32] = y.cpu()
    assert not torch.equal(results[True][0], results[True][1])
    assert torch.equal(results[False][0], results[False][1])
    close(results[True], rotate_ref(x, offsets.view(2, 1), 16), 1e-4)


def test_constructor_forms_and_errors(rotary):
    emb = rotary.RotaryEmbedding(8, 10000.0, False, None, "npu")  # flash-attn 2.8's positional device
    assert emb.inv_freq.device.type == "npu" and emb.pos_idx_in_fp32 is True
    with pytest.raises(ValueError, match="max_seqlen"):
        emb(randn((2, 3, 3, 1, 8), 10), seqlen_offset=torch.tensor([1, 2], device="npu"))
    with pytest.raises(ValueError, match="even"):
        rotary.RotaryEmbedding(7)
    # A module built on the host follows its input to the npu (the cache is rebuilt per device and dtype).
    cpu_built = rotary.RotaryEmbedding(8)
    qkv = randn((1, 3, 3, 1, 8), 11, torch.float16)
    original = qkv.cpu().clone()
    cpu_built(qkv)
    assert cpu_built._cos_cached.device.type == "npu"
    close(qkv[:, :, 0].float(), rotate_ref(original[:, :, 0].float(), torch.arange(3).view(1, 3), 8), 2e-3)


def test_rotate_half_and_torch_form_agree_with_apply_rotary_emb(rotary):
    x = randn((2, 4, 2, 12), 12)
    angles = torch.arange(4).view(-1, 1) * torch.tensor([1.0, 0.5, 0.25, 0.125])
    cos, sin = angles.cos().to("npu"), angles.sin().to("npu")
    for interleaved in (False, True):
        got = rotary.apply_rotary_emb_torch(x, cos, sin, interleaved)
        close(got, rotary.apply_rotary_emb(x, cos, sin, interleaved).cpu().double(), 1e-5)
    assert torch.equal(rotary.rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0])), torch.tensor([-3.0, -4.0, 1.0, 2.0]))
    assert torch.equal(
        rotary.rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0]), interleaved=True), torch.tensor([-2.0, 1.0, -4.0, 3.0])
    )


def test_top_level_names_match_flash_attn_2_8(sim):
    from ascend_compat.ecosystem import flash_attn
    from ascend_compat.ecosystem.flash_attn.layers import rotary

    # flash_attn/__init__.py of 2.8 exposes these seven functions and __version__.
    for name in flash_attn.__all__:
        assert callable(getattr(flash_attn, name))
    assert flash_attn.__version__.startswith("2.8.")
    for name in rotary.__all__:
        assert hasattr(rotary, name)


def test_unpad_input_for_concatenated_sequences(sim):
    from ascend_compat.ecosystem.flash_attn import bert_padding, flash_attn_varlen_func

    # Row 0 packs samples of 2 and 3 tokens (then 1 pad), row 1 one sample of 6 tokens.
    lengths = torch.tensor([[2, 3, 0, 0, 0, 0], [6, 0, 0, 0, 0, 0]], device="npu")
    x = randn((2, 6, 2, 16), 13, torch.float16)
    packed, indices, cu, max_len = bert_padding.unpad_input_for_concatenated_sequences(x, lengths)
    assert cu.dtype == torch.int32 and cu.tolist() == [0, 2, 5, 11] and max_len == 6
    assert indices.tolist() == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11]
    assert torch.equal(packed.cpu(), x.flatten(0, 1)[indices].cpu())
    # Each sample attends only to itself: sample 2 (row 0, tokens 2..4) equals attention on it alone.
    out = flash_attn_varlen_func(packed, packed, packed, cu, cu, max_len, max_len, causal=True)
    one = torch.tensor([0, 3], dtype=torch.int32, device="npu")
    alone = flash_attn_varlen_func(x[0, 2:5], x[0, 2:5], x[0, 2:5], one, one, 3, 3, causal=True)
    assert torch.equal(out[2:5].cpu(), alone.cpu())


@pytest.mark.slow
def test_new_names_import_through_flash_attn_under_the_shim():
    from tests.conftest import run_python

    proc = run_python(
        """
        import ascend_compat, torch
        ascend_compat.activate()
        from flash_attn.layers.rotary import RotaryEmbedding, apply_rotary_emb_torch, rotate_half
        from flash_attn.bert_padding import unpad_input_for_concatenated_sequences
        from flash_attn import flash_attn_func, flash_attn_with_kvcache
        q = torch.randn(1, 4, 2, 16, dtype=torch.float16, device="npu")
        out, lse, s_dmask = flash_attn_func(q, q, q, causal=True, return_attn_probs=True)
        qkv = torch.randn(1, 4, 3, 2, 16, dtype=torch.float16, device="npu")
        RotaryEmbedding(16, device="npu")(qkv)
        cache = torch.zeros(1, 8, 2, 16, dtype=torch.float16, device="npu")
        flash_attn_with_kvcache(q[:, :1], cache, cache.clone(), cache_seqlens=5,
                                cache_leftpad=torch.tensor([2], dtype=torch.int32, device="npu"))
        print("OK", tuple(s_dmask.shape))
        """,
        env={"ASCEND_COMPAT_SIMULATE": "npu"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK (0,)" in proc.stdout
