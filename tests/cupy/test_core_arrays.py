"""ascend_compat.cupy core behaviour users see, on the CPU and on the simulated NPU: device placement, host
transfer, views and flags, DLPack, ufunc arguments, indexing, reductions, errors, user kernels."""

from __future__ import annotations

import numpy
import pytest
import torch

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def test_arrays_live_on_the_current_device(dev: str) -> None:  # noqa: F811
    a = cp.arange(6, dtype=numpy.float32).reshape(2, 3)
    assert a._t.device.type == dev
    assert cp.current_torch_device().type == dev
    assert isinstance(a.dtype, numpy.dtype) and a.dtype == numpy.float32
    assert a.shape == (2, 3) and a.strides == (12, 4) and a.nbytes == 24 and a.itemsize == 4


def test_host_transfer_copies_and_keeps_layout(dev: str) -> None:  # noqa: F811
    host = numpy.asfortranarray(numpy.arange(12.0).reshape(3, 4))
    a = cp.asarray(host)
    assert a.flags.f_contiguous and not a.flags.c_contiguous and a.strides == host.strides
    back = a.get()
    numpy.testing.assert_array_equal(back, host)
    back[0, 0] = 99  # a copy: the device array is unchanged
    assert a[0, 0].item() == 0
    a.set(numpy.ones((3, 4)))
    assert cp.asnumpy(a).sum() == 12
    with pytest.raises(ValueError):
        a.set(numpy.ones((2, 2)))


def test_implicit_host_conversion_is_refused(dev: str) -> None:  # noqa: F811
    a = cp.arange(3)
    with pytest.raises(TypeError, match="Implicit conversion"):
        numpy.asarray(a)
    with pytest.raises(TypeError):
        cp.add(a, numpy.arange(3))
    with pytest.raises(TypeError):
        a + numpy.arange(3)
    assert cp.get_array_module(a) is cp and cp.get_array_module(numpy.arange(2)) is numpy


def test_views_share_memory_and_copies_do_not(dev: str) -> None:  # noqa: F811
    a = cp.zeros((4, 4))
    v = a[1:3, ::2]
    v[...] = 5
    assert float(a.sum()) == 20.0
    assert v.base is a and not v.flags.c_contiguous
    t = a.T
    assert t.flags.f_contiguous and t.strides == (8, 32)
    c = a.copy()
    c[...] = 1
    assert float(a.sum()) == 20.0
    r = a[::-1]  # negative steps: a view with negative strides (tests/cupy/test_negative_strides.py)
    a[::-1, 0] = cp.arange(4.0)
    assert r.shape == (4, 4) and a[:, 0].tolist() == [3.0, 2.0, 1.0, 0.0]
    assert r[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0] and r.strides == (-32, 8)


def test_zero_dim_arrays(dev: str) -> None:  # noqa: F811
    s = cp.arange(5).sum()
    assert isinstance(s, cp.ndarray) and s.ndim == 0 and int(s) == 10
    assert cp.asarray(3.5).shape == () and float(cp.asarray(3.5) * 2) == 7.0


def test_dlpack_round_trip_shares_memory(dev: str) -> None:  # noqa: F811
    a = cp.arange(4, dtype=numpy.float32)
    t = torch.from_dlpack(a)
    assert t.device.type == dev
    t[0] = 42
    assert a[0].item() == 42
    b = cp.from_dlpack(t)
    b[1] = 7
    assert a[1].item() == 7
    c = cp.fromDlpack(a.toDlpack())
    assert c._t.data_ptr() == a._t.data_ptr()
    # torch's own __dlpack_device__ only knows the PrivateUse1 name, so the NPU is reported as DLPack's ExtDev (12).
    assert a.__dlpack_device__() == ((12, 0) if dev == "npu" else t.__dlpack_device__())


def test_asarray_of_a_device_tensor_is_zero_copy(dev: str) -> None:  # noqa: F811
    t = torch.ones(3, device=cp.current_torch_device())
    a = cp.asarray(t)
    assert a._t.data_ptr() == t.data_ptr()
    with pytest.raises(AttributeError, match="DLPack"):
        a.__cuda_array_interface__  # noqa: B018 (only CUDA arrays have it)


def test_ufunc_out_dtype_where_casting(dev: str) -> None:  # noqa: F811
    a = cp.arange(4, dtype=numpy.int8)
    out = cp.zeros(4, dtype=numpy.float32)
    assert cp.add(a, a, out=out) is out and out.tolist() == [0, 2, 4, 6]
    assert cp.add(a, 1, dtype=numpy.float64).dtype == numpy.float64
    w = cp.full(4, -1.0)
    cp.multiply(a, 10, out=w, where=a > 1)
    assert w.tolist() == [-1, -1, 20, 30]
    target = cp.zeros(4, dtype=numpy.int8)
    before = target.copy()
    with pytest.raises(TypeError):
        cp.add(a, 0.5, out=target)  # float64 -> int8 under same_kind: refused before anything is written
    assert (target == before).all()
    with pytest.raises(TypeError):
        cp.add(a, a, casting="no", dtype=numpy.int16)
    with pytest.raises(ValueError):
        cp.add(cp.ones(3), cp.ones(4))
    with pytest.raises(ValueError):
        cp.add(cp.ones(3), cp.ones(3), out=cp.empty(4))


def test_ufunc_methods(dev: str) -> None:  # noqa: F811
    a = cp.arange(1, 5)
    assert cp.add.reduce(a).item() == 10
    assert cp.multiply.accumulate(a).tolist() == [1, 2, 6, 24]
    assert cp.subtract.outer(cp.arange(2), cp.arange(3)).shape == (2, 3)
    z = cp.zeros(3, dtype=numpy.int64)
    cp.add.at(z, cp.asarray([0, 0, 2]), 1)
    assert z.tolist() == [2, 0, 1]


def test_indexing_forms(dev: str) -> None:  # noqa: F811
    a = cp.arange(12).reshape(3, 4)
    assert a[1].tolist() == [4, 5, 6, 7]
    assert a[:, [0, 3]].tolist() == [[0, 3], [4, 7], [8, 11]]
    assert a[a > 9].tolist() == [10, 11]
    assert cp.take(a, [0, 5]).tolist() == [0, 5]
    assert [x.tolist() for x in cp.nonzero(a == 5)] == [[1], [1]]
    assert cp.where(a > 5, a, 0).sum().item() == 6 + 7 + 8 + 9 + 10 + 11
    assert a[cp.ix_(cp.asarray([0, 2]), cp.asarray([1]))].tolist() == [[1], [9]]
    assert cp.r_[1:3, cp.asarray([7])].tolist() == [1, 2, 7]
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises(IndexError):
        a[0, 0, 0]


def test_reductions_and_statistics(dev: str) -> None:  # noqa: F811
    host = numpy.array([[1.0, numpy.nan, 3.0], [4.0, 5.0, 6.0]])
    a = cp.asarray(host)
    for name in ("nansum", "nanmean", "nanmax", "nanmin", "nanstd", "nanvar", "nanmedian"):
        numpy.testing.assert_allclose(getattr(cp, name)(a, axis=1).get(), getattr(numpy, name)(host, axis=1))
    numpy.testing.assert_allclose(cp.median(a[1]).get(), 5.0)
    numpy.testing.assert_allclose(cp.percentile(a[1], 50).get(), 5.0)
    assert cp.argmax(a[1]).item() == 2
    with pytest.raises(numpy.exceptions.AxisError):
        a.sum(axis=2)
    with pytest.raises(ValueError):
        cp.zeros(0).max()


def test_manipulation_sorting_sets(dev: str) -> None:  # noqa: F811
    a = cp.asarray([3, 1, 2, 3])
    assert cp.sort(a).tolist() == [1, 2, 3, 3]
    assert cp.unique(a, return_counts=True)[1].tolist() == [1, 1, 2]
    assert cp.concatenate([a, a]).shape == (8,) and cp.stack([a, a], axis=1).shape == (4, 2)
    assert cp.intersect1d(a, cp.asarray([2, 3, 9])).tolist() == [2, 3]
    assert cp.pad(cp.ones(2), 1).tolist() == [0, 1, 1, 0]
    assert cp.pad(cp.arange(3), (2, 1), mode="reflect").tolist() == [2, 1, 0, 1, 2, 1]
    with pytest.raises(ValueError):
        a.reshape(3)


def test_elementwise_and_reduction_kernels(dev: str) -> None:  # noqa: F811
    sq = cp.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
    assert sq(cp.arange(3.0), cp.ones(3)).tolist() == [1.0, 0.0, 1.0]
    clip = cp.ElementwiseKernel("T x", "T y", "y = x > 1 ? 1 : x", "clip1")
    assert clip(cp.arange(3.0)).tolist() == [0.0, 1.0, 1.0]
    l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    assert l2(cp.asarray([3.0, 4.0])).item() == 5.0
    with pytest.raises(NotImplementedError, match="loops"):
        cp.ElementwiseKernel("T x", "T y", "for (int i = 0; i < 3; i++) y += x", "loop")
    with pytest.raises(NotImplementedError, match=r"RawKernel.*Ascend"):
        cp.RawKernel("extern \"C\" __global__ void k() {}", "k")


def test_readme_example_runs_on_the_simulated_npu() -> None:
    import re
    from pathlib import Path

    from tests.conftest import run_python

    text = Path(__file__).resolve().parents[2].joinpath("README.md").read_text()
    section = text[text.index("## CuPy-compatible arrays"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    proc = run_python(block)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:2] == ["npu:0 float32 [3.732051 5.       5.650282]", "int8"]
