"""Arrays over existing memory and layout rules, on the CPU and the simulated NPU: ``ndarray(memptr=, strides=)``,
``cuda.alloc``, pinned host buffers, ``byte_bounds``, NumPy's strides for copies, device OOM as CuPy's error,
and the scatter-style ufunc methods (``.at``, ``.reduceat``)."""

from __future__ import annotations

import numpy
import pytest
import torch

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def test_ndarray_over_memptr_shares_memory(dev):  # noqa: F811
    a = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    b = cp.ndarray((2, 3), cp.float32, a.data)
    b += 1
    numpy.testing.assert_array_equal(a.get(), numpy.arange(1, 7, dtype=numpy.float32).reshape(2, 3))
    buf = cp.cuda.alloc(20)
    c = cp.ndarray((2, 3), cp.float32, buf, strides=(8, 4))  # self-overlapping rows
    assert c.strides == (8, 4)
    c[:] = 1
    c[0, 2] = 4
    assert float(c[1, 0]) == 4.0
    low, high = cp.byte_bounds(c)
    assert low == c.data.ptr and high - low == 20


def test_ndarray_bad_strides_and_shape(dev):  # noqa: F811
    with pytest.raises(ValueError, match=r"ndarray\(\) with strides"):
        cp.ndarray((2, 3, 4), strides=(8, 128, 1024))
    with pytest.raises(ValueError, match=r"ndarray\(\) with strides"):
        cp.ndarray((2, 3, 4), strides=(-8, 8, 8))
    with pytest.raises(ValueError):
        cp.ndarray([1] * 65, dtype=cp.int8)
    with pytest.raises(TypeError, match=r"Use \(\)"):
        cp.empty(None)
    with pytest.raises(ValueError, match="byte-order"):
        cp.zeros(3, dtype=">i4")


def test_pinned_buffer_round_trip(dev):  # noqa: F811
    mem = cp.cuda.alloc_pinned_memory(4 * 6)
    host = numpy.frombuffer(mem, dtype=numpy.float32, count=6).reshape(2, 3)
    host[...] = numpy.arange(6).reshape(2, 3)
    assert mem.ptr == host.ctypes.data and mem.size == 24
    try:
        cp.cuda.set_pinned_memory_allocator(lambda size: None)  # a failing allocator falls back to plain memory
        assert cp.cuda.alloc_pinned_memory(8).size == 8
    finally:
        cp.cuda.set_pinned_memory_allocator(cp.get_default_pinned_memory_pool().malloc)
    numpy.testing.assert_array_equal(cp.asarray(host, order="F").get(), host)


def test_copies_follow_numpy_strides(dev):  # noqa: F811
    a = cp.ones((1, 4, 1), dtype=cp.float64)  # both C and F contiguous
    for order in "CFAK":
        assert cp.array(a, order=order).strides == numpy.array(numpy.ones((1, 4, 1)), order=order).strides
    assert cp.ascontiguousarray(cp.ones(())).shape == (1,)
    assert cp.empty((1, 0, 2)).strides == numpy.empty((1, 0, 2)).strides
    ragged = [cp.arange(12).reshape(3, 4).T.copy(order="F"), cp.arange(12).reshape(3, 4).T]
    assert cp.array(ragged).strides == numpy.array([x.get() for x in ragged]).strides
    src = cp.arange(24, dtype=cp.float32).reshape(2, 3, 4)[:, ::2, :].swapaxes(0, 1)
    host = numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4)[:, ::2, :].swapaxes(0, 1)  # src's layout
    assert src.get().flags.c_contiguous and src.get(order="F").flags.f_contiguous  # get() gives C order by default
    assert cp.empty_like(src, shape=(2, 2, 4)).strides == numpy.empty_like(host, shape=(2, 2, 4)).strides
    with pytest.warns(numpy.exceptions.ComplexWarning):
        cp.ones(3, dtype=cp.complex64).astype(cp.float32)


def test_device_oom_is_cupy_error(sim):
    with cp._core.use_device_kind("npu"), pytest.raises(cp.cuda.OutOfMemoryError) as info:
        cp.empty((2**20, 2**20), dtype=cp.float64)  # 8 TiB
    assert isinstance(info.value, torch.OutOfMemoryError)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint16", "uint32", "uint64"])
def test_ufunc_at_accumulates_repeats(dev, dtype):  # noqa: F811
    idx = [0, 1, 1, 3, 3, 3]
    host = numpy.zeros(5, dtype=dtype)
    a = cp.asarray(host)
    numpy.add.at(host, idx, numpy.array(7, dtype=dtype))
    cp.add.at(a, cp.asarray(idx), cp.asarray(numpy.array(7, dtype=dtype)))
    numpy.testing.assert_array_equal(a.get(), host)
    big = numpy.array([2**63 + 5, 1, 2**63 + 1], dtype=numpy.uint64) if dtype == "uint64" else \
        numpy.array([9, 1, 4], dtype=dtype)
    host2, a2 = numpy.zeros(2, dtype=dtype), cp.zeros(2, dtype=dtype)
    numpy.maximum.at(host2, [0, 0, 1], big)
    cp.maximum.at(a2, cp.asarray([0, 0, 1]), cp.asarray(big))
    numpy.testing.assert_array_equal(a2.get(), host2)


def test_reduceat_matches_numpy(dev):  # noqa: F811
    host = numpy.arange(60, dtype=numpy.int8).reshape(3, 4, 5)
    idx = [0, 3, 1, 2, 2]
    got = cp.add.reduceat(cp.asarray(host), cp.asarray(idx), axis=1)
    want = numpy.add.reduceat(host, idx, axis=1)
    assert got.dtype == want.dtype
    numpy.testing.assert_array_equal(got.get(), want)
    with pytest.raises(IndexError):
        cp.add.reduceat(cp.asarray(host), [5], axis=1)


def test_view_with_an_ndarray_class_is_a_view(dev):  # noqa: F811
    # NumPy: a.view(ndarray) and a.view(type=ndarray) are views of the same memory with the same dtype.
    a = cp.arange(6, dtype=cp.float32)
    for v in (a.view(cp.ndarray), a.view(type=cp.ndarray)):
        assert isinstance(v, cp.ndarray) and v.dtype == numpy.float32 and v.shape == (6,)
        v[0] = 42
        assert float(a[0]) == 42.0
        a[0] = 0


def test_ndarray_over_memptr_with_negative_strides(dev):  # noqa: F811
    # As CuPy: memptr points at element 0; the other elements lie below it (a view made by a negative-step slice).
    host = numpy.arange(12, dtype=numpy.float32)
    a = cp.asarray(host)
    v = cp.ndarray((2, 3), cp.float32, memptr=a.data + 40, strides=(-12, -4))
    hv = numpy.ndarray((2, 3), numpy.float32, buffer=host, offset=40, strides=(-12, -4))
    numpy.testing.assert_array_equal(v.get(), hv)
    assert v.strides == (-12, -4) and v.data.ptr == a.data.ptr + 40
    assert cp.shares_memory(v, a) and cp.byte_bounds(v) == (a.data.ptr + 20, a.data.ptr + 44)
    v[0] = cp.asarray([-1.0, -2.0, -3.0], dtype=cp.float32)  # writes reach the memory
    hv[0] = [-1.0, -2.0, -3.0]
    numpy.testing.assert_array_equal(a.get(), host)
    mixed = cp.ndarray((3, 2), cp.float32, memptr=a.data + 8, strides=(-4, 16))  # one axis backwards
    numpy.testing.assert_array_equal(mixed.get(), numpy.ndarray((3, 2), numpy.float32, buffer=host, offset=8,
                                                                strides=(-4, 16)))
    back = cp.ndarray((3,), cp.float32, memptr=a[::-1].data, strides=(-8,))  # memptr of a negative-stride view
    numpy.testing.assert_array_equal(back.get(), host[11:5:-2])


def test_ndarray_with_negative_strides_outside_the_memory_raises(dev):  # noqa: F811
    a = cp.arange(4, dtype=cp.float32)
    with pytest.raises(ValueError, match=r"ndarray\(\) with strides \(-4,\) reaches outside its 16-byte memory"):
        cp.ndarray((3,), cp.float32, memptr=a.data + 4, strides=(-4,))  # element 2 would be at byte -4
    with pytest.raises(ValueError, match="reaches outside"):
        cp.ndarray((2, 2), cp.float32, memptr=a.data + 12, strides=(8, -4))  # element [1, 0] at byte 20
    assert cp.ndarray((0,), cp.float32, memptr=a.data, strides=(-4,)).size == 0  # an empty view reaches nothing
    with pytest.raises(ValueError, match=r"ndarray\(\) with strides currently does not allow negative strides"):
        cp.ndarray((3,), cp.float32, strides=(-4,))  # new memory: CuPy refuses negative strides
