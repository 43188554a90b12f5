"""Sparse COO tensors and torch.compile on the simulated npu (issue 16, classes 2 and 3)."""

from __future__ import annotations

import warnings

import pytest

from tests.conftest import run_python


def _coo(torch, device="cpu"):
    i = torch.tensor([[0, 1, 1], [2, 0, 2]])
    v = torch.tensor([3.0, 4.0, 5.0])
    return torch.sparse_coo_tensor(i, v, (2, 3)).to(device)


def test_sparse_coo_to_npu_and_back(sim):
    torch = sim
    cpu = _coo(torch)
    s = cpu.to("npu")
    assert s.is_sparse and s.device.type == "npu" and s._values().device.type == "npu"
    assert s._nnz() == 3 and s.sparse_dim() == 2
    direct = torch.sparse_coo_tensor(cpu._indices().npu(), cpu._values().npu(), (2, 3))
    assert direct.device.type == "npu"
    dense = s.to_dense()
    assert dense.device.type == "npu" and torch.equal(dense.cpu(), cpu.to_dense())
    back = s.cpu()
    assert back.is_sparse and back.device.type == "cpu" and torch.equal(back.to_dense(), cpu.to_dense())
    on1 = cpu.to("npu:1")
    assert on1.device == torch.device("npu:1") and on1.to_dense().device == torch.device("npu:1")


def test_sparse_ops_run_with_fallback_warning(sim):
    torch = sim
    s = (_coo(torch) + _coo(torch)).to("npu")  # uncoalesced: duplicates
    w = torch.arange(6.0).reshape(3, 2)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        c = s.coalesce()
        assert c.is_coalesced() and c.device.type == "npu" and c._nnz() == 3
        mm = torch.sparse.mm(s, w.npu())
        at = s @ w.npu()
    expected = s.cpu().to_dense() @ w
    assert mm.device.type == "npu" and torch.equal(mm.cpu(), expected) and torch.equal(at.cpu(), expected)
    assert "aten::_coalesce" in __import__("ascend_compat").simulate.fallback_counts()


def test_sparse_mm_backward_on_npu(sim):
    torch = sim
    s = _coo(torch, "npu")
    x = torch.randn(3, 2, device="npu", requires_grad=True)
    torch.sparse.mm(s, x).sum().backward()
    assert x.grad.device.type == "npu"
    assert torch.equal(x.grad.cpu(), s.cpu().to_dense().t() @ torch.ones(2, 2))


def test_sparse_fallback_warning_wording():
    proc = run_python(
        """
        import warnings, torch
        from ascend_compat import simulate
        simulate.install()
        s = torch.sparse_coo_tensor(torch.tensor([[0], [1]]), torch.tensor([2.0]), (2, 2)).npu()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s.to_dense()
        assert any("The operator 'aten::_to_dense' is not currently supported on the NPU backend and will fall "
                   "back to run on the CPU" in str(w.message) for w in caught), [str(w.message) for w in caught]
        print("OK")
        """
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_torch_compile_default_backend_on_npu():
    proc = run_python(
        """
        import torch
        from ascend_compat import simulate
        simulate.install()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                                    torch.nn.Linear(16, 1)).npu()
        compiled = torch.compile(model)
        x = torch.randn(4, 8, device="npu")
        out = compiled(x)
        out.sum().backward()
        grad = model[0].weight.grad.clone()
        model.zero_grad()
        model(x).sum().backward()
        assert out.device.type == "npu" and torch.allclose(out, model(x))
        assert torch.allclose(grad, model[0].weight.grad)
        print("OK")
        """
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr[-4000:]
    assert proc.stderr.count("uses the 'aot_eager' backend") == 1
