"""Tensors on the simulated npu device behave like device tensors and compute like CPU kernels."""

from __future__ import annotations

import pytest


def test_device_objects_and_tensor_placement(sim):
    torch = sim
    assert torch.device("npu").type == "npu"
    assert torch.device("npu:1") == torch.device("npu", 1)
    x = torch.ones(2, 3, device="npu")
    assert x.device == torch.device("npu", 0)
    assert repr(x.device) == "device(type='npu', index=0)"
    assert x.is_npu and not x.is_cpu
    assert "device='npu:0'" in repr(x)
    assert x.cpu().device.type == "cpu"
    assert torch.ones(2, device="npu:1").device.index == 1
    y = torch.arange(6.0).reshape(2, 3)
    assert y.npu().device.type == "npu"
    assert y.to("npu").is_npu
    assert y.npu(1).device.index == 1
    assert torch.equal(y.to("npu").cpu(), y)
    assert (y.npu().sum()).item() == 15.0


@pytest.mark.parametrize(
    "factory",
    [
        lambda t, d: t.zeros(2, 3, device=d),
        lambda t, d: t.ones(2, 3, device=d),
        lambda t, d: t.empty(2, 3, device=d).fill_(7),
        lambda t, d: t.full((2, 3), 1.5, device=d),
        lambda t, d: t.arange(0, 10, 2, device=d),
        lambda t, d: t.linspace(0, 1, 5, device=d),
        lambda t, d: t.eye(3, device=d),
        lambda t, d: t.tensor([[1.0, 2.0], [3.0, 4.0]], device=d),
        lambda t, d: t.as_tensor([1, 2, 3], device=d),
        lambda t, d: t.asarray([4.0, 5.0], device=d),
        lambda t, d: t.zeros_like(t.ones(3), device=d),
        lambda t, d: t.tril_indices(3, 3, device=d),
        lambda t, d: t.scalar_tensor(3.0, device=d),
    ],
)
def test_factories_place_on_npu_and_match_cpu(sim, factory):
    torch = sim
    on_npu = factory(torch, "npu")
    on_cpu = factory(torch, "cpu")
    assert on_npu.device.type == "npu"
    assert torch.equal(on_npu.cpu(), on_cpu)


def test_random_factories_use_npu_generator(sim):
    torch = sim
    torch.npu.manual_seed(123)
    a = torch.randn(5, device="npu")
    torch.npu.manual_seed(123)
    b = torch.randn(5, device="npu")
    assert a.device.type == "npu" and torch.equal(a.cpu(), b.cpu())
    # The npu generator is its own: drawing CPU random numbers does not advance it.
    torch.npu.manual_seed(7)
    c = torch.rand(4, device="npu")
    torch.npu.manual_seed(7)
    torch.rand(1000)
    d = torch.rand(4, device="npu")
    assert torch.equal(c.cpu(), d.cpu())
    # torch.manual_seed seeds every device, as it does for CUDA
    torch.manual_seed(5)
    e = torch.rand(3, device="npu:1")
    torch.manual_seed(5)
    assert torch.equal(e.cpu(), torch.rand(3, device="npu:1").cpu())
    assert torch.randint(0, 5, (10,), device="npu").max().item() < 5
    assert sorted(torch.randperm(6, device="npu").tolist()) == list(range(6))


def test_ops_views_inplace_and_out_match_cpu(sim):
    torch = sim
    base = torch.randn(4, 6)
    x = base.clone().npu()
    # views share memory with their base
    v = x[1:3, ::2]
    v.mul_(10)
    expected = base.clone()
    expected[1:3, ::2] *= 10
    assert torch.equal(x.cpu(), expected)
    assert v._base is x and v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    t = x.t()
    assert t.is_npu and not t.is_contiguous() and torch.equal(t.cpu(), expected.t())
    assert torch.equal(x.view(24).cpu(), expected.view(24))
    assert torch.equal(x.reshape(3, 8).cpu(), expected.reshape(3, 8))
    assert torch.equal(x.permute(1, 0).contiguous().cpu(), expected.permute(1, 0))
    # out= with resize
    out = torch.empty(0, device="npu")
    r = torch.add(x, 1, out=out)
    assert r is out and out.shape == (4, 6) and torch.equal(out.cpu(), expected + 1)
    values, indices = torch.empty(0, device="npu"), torch.empty(0, dtype=torch.long, device="npu")
    torch.max(x, dim=1, out=(values, indices))
    ev, ei = expected.max(dim=1)
    assert torch.equal(values.cpu(), ev) and torch.equal(indices.cpu(), ei)
    # a spread of kernels
    y = torch.randn(6, 5)
    checks = {
        "matmul": (lambda a, b: a @ b, (x, y.npu()), (expected, y)),
        "softmax": (lambda a: torch.softmax(a, -1), (x,), (expected,)),
        "layer_norm": (lambda a: torch.nn.functional.layer_norm(a, (6,)), (x,), (expected,)),
        "gather": (lambda a: a.gather(1, torch.tensor([[0], [1], [2], [3]], device=a.device)), (x,), (expected,)),
        "cumsum": (lambda a: a.cumsum(0), (x,), (expected,)),
        "where": (lambda a: torch.where(a > 0, a, torch.zeros_like(a)), (x,), (expected,)),
        "sort": (lambda a: a.sort(dim=1).values, (x,), (expected,)),
        "nonzero": (lambda a: (a > 0).nonzero(), (x,), (expected,)),
        "index_cpu_idx": (lambda a: a[torch.tensor([0, 2])], (x,), (expected,)),
    }
    for name, (fn, npu_args, cpu_args) in checks.items():
        got, want = fn(*npu_args), fn(*cpu_args)
        assert got.device.type == "npu", name
        assert torch.equal(got.cpu(), want), name


def test_cross_device_errors(sim):
    torch = sim
    a = torch.ones(3, device="npu")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + torch.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(2, 2, device="npu") @ torch.ones(2, 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="npu:0") + torch.ones(3, device="npu:1")
    # scalars and 0-dim CPU tensors mix, as on CUDA
    assert torch.equal((a + 1).cpu(), torch.full((3,), 2.0))
    assert torch.equal((a * torch.tensor(3.0)).cpu(), torch.full((3,), 3.0))


def test_invalid_device_index(sim):
    torch = sim
    with pytest.raises(RuntimeError, match="Invalid NPU device ordinal 2"):
        torch.ones(1, device="npu:2")
    with pytest.raises(RuntimeError, match="Invalid NPU device ordinal"):
        torch.npu.set_device(5)
    with pytest.raises(RuntimeError, match="Invalid NPU device ordinal"):
        torch.ones(1).to("npu:9")


def test_module_to_and_npu(sim):
    torch = sim
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    x = torch.randn(5, 4)
    want = m(x)
    m_npu = m.to("npu")
    assert all(p.device.type == "npu" for p in m_npu.parameters())
    got = m_npu(x.npu())
    assert torch.allclose(got.cpu(), want, atol=0, rtol=0)
    m2 = torch.nn.Linear(2, 2).npu(1)
    assert next(m2.parameters()).device == torch.device("npu", 1)


def test_current_device_drives_default_placement(sim):
    torch = sim
    torch.npu.set_device(1)
    assert torch.npu.current_device() == 1
    assert torch.empty(1, device="npu").device.index == 1
    with torch.npu.device(0):
        assert torch.zeros(1, device="npu").device.index == 0
    assert torch.npu.current_device() == 1


def test_dtype_conversions_and_item(sim):
    torch = sim
    x = torch.tensor([1.5, -2.25], device="npu")
    assert x.half().dtype == torch.float16 and x.half().is_npu
    assert x.to(torch.int32).cpu().tolist() == [1, -2]
    assert x.to("npu", dtype=torch.float64).dtype == torch.float64
    assert x[0].item() == 1.5
    assert x.tolist() == [1.5, -2.25]
    assert bool((x > 0).any())


@pytest.mark.parametrize("layer", ["Conv1d", "Conv2d", "ConvTranspose2d"])
def test_convolutions_forward_and_backward_match_cpu(sim, layer):
    # PrivateUse1 convolution would dispatch to aten::convolution_overrideable, which no backend here implements.
    torch = sim
    torch.manual_seed(0)
    conv = getattr(torch.nn, layer)(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 8) if layer == "Conv1d" else torch.randn(2, 3, 8, 8)
    xc = x.clone().requires_grad_()
    conv(xc).square().sum().backward()
    want_x, want_w = xc.grad, conv.weight.grad.clone()
    conv.zero_grad()
    conv.to("npu")
    xn = x.to("npu").requires_grad_()
    out = conv(xn)
    out.square().sum().backward()
    assert out.device.type == "npu" and conv.weight.grad.device.type == "npu"
    assert torch.equal(xn.grad.cpu(), want_x) and torch.equal(conv.weight.grad.cpu(), want_w)
