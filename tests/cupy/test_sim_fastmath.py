"""The simulated NPU's own float32 cos/sin host kernel (simulate/_native/npu_fastmath.cpp), as users reach it:
torch ops and ``ascend_compat.cupy`` ufuncs on npu tensors. Results must stay within 1 ULP of the correctly
rounded value (torch's CPU kernel is within 1 ULP too: the two differ by at most 2 ULP) and keep IEEE specials."""

from __future__ import annotations

import numpy
import pytest


def _ordered(a: numpy.ndarray) -> numpy.ndarray:
    """float32 bit patterns as integers ordered like the floats (so a difference counts ULPs across zero)."""
    i = a.view(numpy.int32).astype(numpy.int64)
    return numpy.where(i < 0, -(i & 0x7FFFFFFF), i)


def _max_ulp(got: numpy.ndarray, want: numpy.ndarray) -> int:
    both_nan = numpy.isnan(got) & numpy.isnan(want)
    assert not (numpy.isnan(got) != numpy.isnan(want)).any(), "nan where the reference has none (or the reverse)"
    return int(numpy.abs(_ordered(got) - _ordered(want))[~both_nan].max())


def _sweep() -> numpy.ndarray:
    """Every 397th positive float32 bit pattern (all magnitudes, denormals to 3e38), both signs, and specials."""
    bits = numpy.arange(0, 0x7F800000, 397, dtype=numpy.uint32).view(numpy.float32)
    specials = numpy.array([0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan, 65536.0, 65536.01, -1e30], numpy.float32)
    return numpy.concatenate([bits, -bits, specials])


@pytest.mark.parametrize("name", ["cos", "sin"])
def test_npu_sin_cos_within_one_ulp_of_correctly_rounded(sim, name):
    torch = sim
    x = _sweep()
    got = getattr(torch, name)(torch.from_numpy(x).to("npu")).cpu().numpy()
    with numpy.errstate(invalid="ignore"):
        exact = getattr(numpy, name)(x.astype(numpy.float64)).astype(numpy.float32)
    assert _max_ulp(got, exact) <= 1
    assert _max_ulp(got, getattr(torch, name)(torch.from_numpy(x)).numpy()) <= 2
    assert numpy.isnan(got[-6:-4]).all() and numpy.isnan(got[-4])  # cos/sin of +-inf and nan
    if name == "sin":
        assert numpy.signbit(got[-7]) and got[-7] == 0  # sin(-0) is -0
    else:
        assert got[-8] == 1 and got[-7] == 1


def test_npu_cos_out_in_place_and_views_agree(sim):
    torch = sim
    x = torch.linspace(-100, 100, 70001, dtype=torch.float32)
    d = x.to("npu")
    want = torch.cos(d).cpu()
    out = torch.empty_like(d)
    assert torch.cos(d, out=out) is out and torch.equal(out.cpu(), want)
    inplace = d.clone()
    assert inplace.cos_() is inplace and torch.equal(inplace.cpu(), want)  # in place: inputs read before written
    strided = torch.cos(d[::2]).cpu()  # not contiguous: torch's kernel, still within 2 ULP
    assert _max_ulp(strided.numpy(), want[::2].numpy()) <= 2
    wrong = torch.empty(3, device="npu")  # out= needing a resize: resized (and warned about) as on the CPU
    with pytest.warns(UserWarning, match="resized"):
        torch.cos(d, out=wrong)
    assert wrong.shape == d.shape and torch.equal(wrong.cpu(), want)


def test_npu_cos_float64_and_grad_unchanged(sim):
    torch = sim
    x = torch.linspace(-3, 3, 101, dtype=torch.float64)
    assert torch.equal(torch.cos(x.to("npu")).cpu(), torch.cos(x))  # other dtypes: torch's kernel, bit for bit
    leaf = torch.linspace(-3, 3, 101, device="npu", requires_grad=True)
    torch.sin(leaf).sum().backward()
    assert leaf.grad is not None
    assert torch.allclose(leaf.grad.cpu(), torch.cos(leaf.detach().cpu()), rtol=0, atol=2e-7)


def test_cupy_cos_on_npu_uses_device_tensors(sim):
    import ascend_compat.cupy as cp
    from ascend_compat.cupy._core import use_device_kind

    h = numpy.linspace(-50, 50, 100003, dtype=numpy.float32)
    with use_device_kind("npu"):
        a = cp.asarray(h)
        r = cp.cos(a)
        o = cp.empty_like(a)
        cp.sin(a, out=o)
        assert r._t.device.type == "npu" and o._t.device.type == "npu"
        assert _max_ulp(cp.asnumpy(r), numpy.cos(h.astype(numpy.float64)).astype(numpy.float32)) <= 1
        assert _max_ulp(cp.asnumpy(o), numpy.sin(h.astype(numpy.float64)).astype(numpy.float32)) <= 1


def test_npu_large_add_bit_for_bit_with_torch_cpu(sim):
    torch = sim
    n = 3_000_001  # over the streaming-store threshold (8 MiB), odd: unaligned heads and tails
    x = torch.randn(n, generator=torch.Generator().manual_seed(0))
    y = torch.randn(n, generator=torch.Generator().manual_seed(1))
    want = x + y
    dx, dy = x.to("npu"), y.to("npu")
    assert torch.equal(torch.add(dx, dy).cpu(), want)
    out = torch.empty(n + 3, device="npu")[3:]  # an unaligned out=
    assert torch.add(dx, dy, out=out) is out and torch.equal(out.cpu(), want)
    acc = dx.clone()
    acc += dy
    assert torch.equal(acc.cpu(), want)
    twice = dy.clone()
    assert torch.equal(torch.add(twice, twice, out=twice).cpu(), y + y)  # both inputs are the output
    assert torch.equal(torch.add(dx, dy, alpha=2).cpu(), torch.add(x, y, alpha=2))  # alpha != 1: torch's kernel


def test_cupy_large_add_on_npu(sim):
    import ascend_compat.cupy as cp
    from ascend_compat.cupy._core import use_device_kind

    h = numpy.random.default_rng(0).random(2_500_000, dtype=numpy.float32)
    with use_device_kind("npu"):
        a, b = cp.asarray(h), cp.asarray(h[::-1].copy())
        o = cp.empty_like(a)
        cp.add(a, b, out=o)
        assert o._t.device.type == "npu"
        assert numpy.array_equal(cp.asnumpy(o), h + h[::-1])
        assert numpy.array_equal(cp.asnumpy(cp.add(a, b)), h + h[::-1])
