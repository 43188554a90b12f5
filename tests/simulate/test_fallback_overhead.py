"""The CPU-kernel fallback's cheap path: per-thread reused CPU aliases must behave like fresh ones.

Every npu op without a direct kernel runs its CPU kernel on CPU tensors aliasing the npu memory; the simulator
keeps those alias objects per thread and re-points them op after op. These tests run mixed sequences where a
stale dtype, conj/neg bit, shape or memory reference left on a reused alias would give a wrong answer.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")


def _same(npu_result, cpu_result) -> None:
    assert npu_result.device.type == "npu"
    torch.testing.assert_close(npu_result.cpu(), cpu_result)


def test_mixed_dtypes_and_views_op_after_op(sim) -> None:
    g = torch.Generator().manual_seed(0)
    f = torch.randn(5, 7, generator=g)
    i = torch.randint(-9, 9, (3, 4), generator=g)
    z = torch.randn(4, dtype=torch.complex64, generator=g)
    nf, ni, nz = f.to("npu"), i.to("npu"), z.to("npu")
    for _ in range(3):  # the second and third rounds run on reused aliases
        _same(nf + nf, f + f)
        _same(ni * 3, i * 3)
        _same(nz.conj() * 2, z.conj() * 2)  # conj bit on the alias
        _same(nf.t() @ nf, f.t() @ f)  # transposed strides
        _same(nz * 2, z * 2)  # no conj bit now
        _same(nz.conj().imag + 1, z.conj().imag + 1)  # neg bit
        _same(nf[1:, 2:].relu(), f[1:, 2:].relu())  # storage offset
        _same(ni.sum(), i.sum())
        _same(nf.exp(), f.exp())


def test_in_place_ops_write_the_npu_tensor(sim) -> None:
    a = torch.arange(12.0).reshape(3, 4)
    b = torch.full((3, 4), 0.5)
    na, nb = a.to("npu"), b.to("npu")
    for _ in range(3):
        ret = na.addcmul_(nb, nb, value=2.0)
        a.addcmul_(b, b, value=2.0)
        assert ret is na
        _same(na, a)
        na.mul_(0.5)
        a.mul_(0.5)
        _same(na, a)


def test_out_argument_is_resized_and_filled(sim) -> None:
    a, b = torch.randn(6, 3), torch.randn(6, 3)
    out = torch.empty(0, device="npu")
    for _ in range(2):
        torch.mul(a.to("npu"), b.to("npu"), out=out)
        assert out.shape == (6, 3)
        _same(out, a * b)


def test_memory_is_released_when_the_tensor_dies(sim) -> None:
    before = torch.npu.memory_allocated(0)
    x = torch.ones(1 << 20, device="npu")  # 4 MiB
    y = x.sum()
    z = torch.mul(x, 2)
    assert float(y) == float(1 << 20)
    assert torch.npu.memory_allocated(0) == before + 2 * (4 << 20) + y.element_size()
    del x, z
    # A reused alias keeps no reference to the npu memory it last viewed.
    assert torch.npu.memory_allocated(0) == before + y.element_size()


def test_threads_each_get_right_results(sim) -> None:
    results: dict[int, list[tuple[object, object]]] = {}

    def work(k: int) -> None:
        g = torch.Generator().manual_seed(k)
        x = torch.randn(8, 8, generator=g)
        nx = x.to("npu")
        results[k] = [((nx * k + nx).cpu(), x * k + x) for _ in range(50)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0, 1, 2, 3]
    for pairs in results.values():
        for got, want in pairs:
            torch.testing.assert_close(got, want)


def test_backward_through_fallback_ops(sim) -> None:
    w = torch.randn(16, 8, requires_grad=True)
    nw = w.detach().to("npu").requires_grad_(True)
    x = torch.randn(4, 16)
    for _ in range(2):
        (torch.relu(x @ w) * 3).sum().backward()
        (torch.relu(x.to("npu") @ nw) * 3).sum().backward()
    _same(nw.grad, w.grad)
