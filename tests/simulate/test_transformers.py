"""A real transformers GPT-2 (built from a config) on the simulated npu matches the CPU."""

from __future__ import annotations

import copy

import pytest

transformers = pytest.importorskip("transformers")


def _model(torch):
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=64)
    return transformers.GPT2LMHeadModel(config).eval()


def test_gpt2_logits_and_greedy_generate_match_cpu(sim):
    torch = sim
    cpu_model = _model(torch)
    npu_model = copy.deepcopy(cpu_model).to("npu")
    ids = torch.randint(0, 1000, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = cpu_model(ids).logits
        got = npu_model(ids.npu()).logits
    assert got.device.type == "npu"
    assert torch.allclose(got.cpu(), want, atol=1e-6, rtol=0)
    kwargs = {"max_new_tokens": 8, "do_sample": False, "pad_token_id": 0}
    out_cpu = cpu_model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
    out_npu = npu_model.generate(ids.npu(), attention_mask=torch.ones_like(ids).npu(), **kwargs)
    assert out_npu.device.type == "npu"
    assert torch.equal(out_npu.cpu(), out_cpu)


def test_gpt2_training_step_decreases_loss(sim):
    torch = sim
    model = _model(torch).train().to("npu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 1000, (4, 16), device="npu")
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(p.device.type == "npu" for p in model.parameters())
