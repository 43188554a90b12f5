"""DLPack export rules, dtype views, complex arg-reductions with NaN and ``make_aligned_dtype`` of
ascend_compat.cupy, on the CPU and the simulated NPU, compared with NumPy / CuPy behaviour."""

from __future__ import annotations

import warnings

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def test_dlpack_device_rules(dev: str) -> None:  # noqa: F811
    a = cp.arange(6, dtype=cp.float32)
    own = a.__dlpack_device__()
    b = cp.from_dlpack(a)
    assert b.data.ptr == a.data.ptr  # zero copy
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(own[0], 2**30))
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(9, 0))
    with pytest.raises(BufferError):
        cp.from_dlpack(a, copy=True)  # device copies are not offered, as in CuPy
    with pytest.raises(NotImplementedError):
        cp.from_dlpack(a, device=a.device)
    host = numpy.from_dlpack(_Capsule(a.__dlpack__(dl_device=(1, 0), copy=True), (1, 0)))
    assert host.ctypes.data != a.data.ptr and host.tolist() == [0, 1, 2, 3, 4, 5]  # a host copy
    if dev == "npu":  # device memory reaches the host only through a copy
        with pytest.raises(ValueError):
            a.__dlpack__(dl_device=(1, 0), copy=False)


def test_dlpack_capsule_read_once_and_stream_zero_warns(dev: str) -> None:  # noqa: F811
    a = cp.arange(4)
    cap = a.toDlpack()
    b = cp.fromDlpack(cap)
    assert b.data.ptr == a.data.ptr
    with pytest.raises(ValueError, match="consumed multiple times"):
        cp.fromDlpack(cap)
    with pytest.warns(UserWarning, match="Stream 0"):
        c = cp.from_dlpack(_Capsule(a.__dlpack__(stream=0), a.__dlpack_device__()))
    assert c.data.ptr == a.data.ptr


class _Capsule:
    def __init__(self, capsule: object, device: tuple[int, int]) -> None:
        self.capsule, self.device = capsule, device

    def __dlpack__(self, *args: object, **kwargs: object) -> object:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


@pytest.mark.parametrize("make", [
    lambda xp: xp.moveaxis(xp.arange(15, dtype=xp.float64).reshape(1, 3, 5), 0, 2),  # last axis of length 1
    lambda xp: xp.ones((3, 4), xp.int32)[:, :1:2],
    lambda xp: xp.ones((3, 20), xp.int16)[:0, ::2],
])
def test_view_with_another_itemsize_follows_numpy(dev: str, make: object) -> None:  # noqa: F811
    want = make(numpy)  # type: ignore[operator]
    got = make(cp)  # type: ignore[operator]
    target = numpy.int32 if want.dtype.itemsize != 4 else numpy.int16
    w, g = want.view(target), got.view(target)
    assert g.shape == w.shape and (g.strides == w.strides or w.size == 0)
    numpy.testing.assert_array_equal(g.get(), w)


def test_view_refuses_what_numpy_refuses(dev: str) -> None:  # noqa: F811
    with pytest.raises(ValueError):
        cp.arange(3, dtype=cp.int32).view(cp.int64)  # 12 bytes are not whole int64s
    with pytest.raises(ValueError):
        cp.arange(8, dtype=cp.int32)[::2].view(cp.int16)  # the last axis is not contiguous


@pytest.mark.parametrize("values", [[complex("nan"), 1, -1], [1j * float("nan"), 1j, -1j],
                                    [1, 2 + 1j, complex("nan"), 3]])
@pytest.mark.parametrize("dtype", ["F", "D"])
def test_complex_argmax_argmin_pick_the_first_nan(dev: str, values: list, dtype: str) -> None:  # noqa: F811
    host = numpy.array(values, dtype)
    a = cp.asarray(host)
    assert int(a.argmax()) == host.argmax() and int(a.argmin()) == host.argmin()
    host2 = numpy.stack([host, host[::-1]])
    numpy.testing.assert_array_equal(cp.asarray(host2).argmax(axis=1).get(), host2.argmax(axis=1))


def test_sum_of_complex_into_real_warns() -> None:
    with pytest.warns(numpy.exceptions.ComplexWarning):
        r = cp.ones((8,), dtype=cp.complex64).sum(dtype=cp.float32)
    assert float(r) == 8.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cp.ones((8,), dtype=cp.complex64).sum()


@pytest.mark.parametrize("dt, itemsize", [("?,c8", 16), ("c8,?", 16), ("?,(3,)c8", 32), ("(3,)c8,?", 32),
                                          (numpy.dtype([("a", "c8,?"), ("b", "?")]), 24), ("?,(4,)V3", 13)])
def test_make_aligned_dtype(dt: object, itemsize: int) -> None:
    out = cp.make_aligned_dtype(dt)
    assert out.itemsize == itemsize and out.names == numpy.dtype(dt).names


def test_make_aligned_dtype_errors() -> None:
    for dt in ("c16", "V3"):
        with pytest.raises(ValueError, match="only supports structured dtypes"):
            cp.make_aligned_dtype(dt)
    with pytest.raises(ValueError, match="smaller than minimum alignment"):
        cp.make_aligned_dtype("?,f8", alignment=4)
    assert cp.make_aligned_dtype("?,f8", alignment=16).itemsize == 16
