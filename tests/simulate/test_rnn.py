"""LSTM and GRU (modules and cells) train on the simulated NPU: ATen sends npu tensors to the fused cell ops."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("name", ["LSTM", "GRU", "LSTMCell", "GRUCell"])
def test_recurrent_layers_match_cpu_forward_and_backward(sim, name):
    torch = sim
    torch.manual_seed(0)
    cpu = getattr(torch.nn, name)(8, 16)
    npu = getattr(torch.nn, name)(8, 16)
    npu.load_state_dict(cpu.state_dict())
    npu.to("npu")
    x = torch.randn(5, 3, 8) if name in ("LSTM", "GRU") else torch.randn(3, 8)

    def first(out):
        return out[0] if isinstance(out, tuple) else out

    ref = first(cpu(x))
    ref.square().sum().backward()
    got = first(npu(x.to("npu")))
    got.square().sum().backward()
    assert got.device.type == "npu"
    torch.testing.assert_close(got.cpu(), ref)
    for p_npu, p_cpu in zip(npu.parameters(), cpu.parameters()):
        assert p_npu.grad.device.type == "npu"
        torch.testing.assert_close(p_npu.grad.cpu(), p_cpu.grad)
    with torch.no_grad():
        torch.testing.assert_close(first(npu(x.to("npu"))).cpu(), ref)
