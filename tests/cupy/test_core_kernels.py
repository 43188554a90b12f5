"""User-defined computations of ascend_compat.cupy on the CPU and the simulated NPU: generalized ufuncs
(``cupy._core._gufuncs._GUFunc``, ``matmul(axes=)``), ``create_reduction_func`` / ``ReductionKernel`` and
``ElementwiseKernel`` (type-signature caches, argument checks), compared with NumPy."""

from __future__ import annotations

import threading

import numpy
import pytest

import ascend_compat.cupy as cp
from ascend_compat.cupy import _core
from ascend_compat.cupy._gufuncs import _GUFunc, _parse_gufunc_signature
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def _arange(shape: tuple[int, ...], dtype: str = "f8") -> tuple[numpy.ndarray, cp.ndarray]:
    host = numpy.arange(1, numpy.prod(shape) + 1, dtype=dtype).reshape(shape)
    return host, cp.asarray(host)


def test_signature_parsing() -> None:
    ins, outs, n = _parse_gufunc_signature("(i?,j|1),(i?,j)->(i?,j)")
    assert ins == [(("i", True, False), ("j", False, True)), (("i", True, False), ("j", False, False))]
    assert outs == [(("i", True, False), ("j", False, False))] and n == 2
    assert _parse_gufunc_signature("(i, j),(j,k)->(k,l)")[2] == 4
    for bad in ("(i,j)(i,j)", "(i,j)-(i,j)", "(i,j)(i,j)->(i,j)", "j->(i", "", "()->()->"):
        with pytest.raises(ValueError):
            _parse_gufunc_signature(bad)


def test_gufunc_moves_core_axes_and_reduces(dev: str) -> None:  # noqa: F811
    host, x = _arange((2, 3, 4, 5))
    ident = _GUFunc(lambda v: v, "(i,j)->(i,j)")
    got = ident(x, axes=[(0, 3), (1, 2)])
    assert got._t.device.type == dev
    numpy.testing.assert_array_equal(got.get(), numpy.moveaxis(host, (0, 3), (1, 2)))
    total = _GUFunc(lambda v: v.sum(), "(i)->()")  # one call per loop position
    for axis in range(4):
        for keepdims in (False, True):
            want = host.sum(axis=axis, keepdims=keepdims)
            numpy.testing.assert_array_equal(total(x, axis=axis, keepdims=keepdims).get(), want)
    with pytest.raises(ValueError):
        ident(x, axis=0)  # two core dimensions: axis= is ambiguous


def test_gufunc_batched_out_and_dtype(dev: str) -> None:  # noqa: F811
    host, x = _arange((2, 3, 4))
    calls = []

    def batched(v: cp.ndarray, out: cp.ndarray) -> None:
        calls.append(v.shape)
        v.sum(axis=-1, out=out)

    g = _GUFunc(batched, "(i)->()", supports_batched=True, supports_out=True)
    out = cp.empty((2, 3))
    assert g(x, out=out) is out and calls == [(2, 3, 4)]
    numpy.testing.assert_array_equal(out.get(), host.sum(-1))
    ident = _GUFunc(lambda v: v, "(i,j)->(i,j)")
    assert ident(x, dtype="i2").dtype == numpy.int16
    with pytest.raises(ValueError):
        ident(x, out=cp.empty((3, 3, 4)))
    with pytest.raises(TypeError):
        ident(x, out=cp.empty((2, 3, 4), dtype="h"))  # float64 -> int16 is not same_kind


def test_gufunc_typed_loops_and_signature_lookup(dev: str) -> None:  # noqa: F811
    used = []
    g = _GUFunc(lambda a, b: used.append("default") or a + b, "(i),(i)->(i)",
                signatures=(("ii->i", lambda a, b: used.append("int") or a + b),))
    g(cp.array([1], dtype="i"), cp.array([2], dtype="i"), casting="no")
    g(cp.array([1], dtype="q"), cp.array([2], dtype="q"), casting="no")
    z = g(cp.array([1.5]), cp.array([2.5]), casting="unsafe", signature="ii->i")
    assert used == ["int", "default", "int"] and z.dtype == numpy.int32 and z.tolist() == [3]
    with pytest.raises(TypeError):
        g(cp.array([1.0]), cp.array([1.0]), casting="unsafe", signature="id->i")
    with pytest.raises(ValueError):
        _GUFunc(lambda a, b: a, "(i),(i)->(i)", signatures=(("iii->i", None),))


def test_gufunc_optional_and_broadcastable_dims(dev: str) -> None:  # noqa: F811
    mm = _GUFunc(lambda a, b: cp.ones(cp.broadcast_shapes(a.shape, b.shape)), "(i|1,j|1),(i|1,j)->(i,j)")
    assert mm(cp.ones((2, 1)), cp.ones((2, 3))).shape == (2, 3)
    with pytest.raises(ValueError):
        mm(cp.ones((2, 3)), cp.ones((2, 1)))  # the second operand's j is not broadcastable
    forbidden = _GUFunc(lambda a, b: a, "(a?,b?),(b,a?)->(a?,b?)")
    with pytest.raises(ValueError):
        forbidden(cp.ones(2), cp.ones((2, 2)))  # a skipped in one input only


def test_matmul_with_axes(dev: str) -> None:  # noqa: F811
    host, x = _arange((3, 3, 3, 3))
    axes = [(-2, -1), (-3, 0), (-1, -3)]
    numpy.testing.assert_array_equal(cp.matmul(x, x, axes=axes).get(), numpy.matmul(host, host, axes=axes))
    with pytest.raises(numpy.exceptions.AxisError):
        cp.matmul(cp.ones((2, 3)), cp.ones((2, 3)), axes=[(0,), (0,), ()])


def test_create_reduction_func_loops_and_cache(dev: str) -> None:  # noqa: F811
    my_sum = _core.create_reduction_func("my_sum", ("b->b", "q->q", "f->f"), ("in0", "a + b", "out0 = a", None), 0)
    host = numpy.arange(-100, 100, dtype=numpy.int8).reshape(4, 50)
    got = my_sum(cp.asarray(host), axis=1)
    assert got.dtype == numpy.int8  # accumulates and wraps in int8, as the b->b loop does
    numpy.testing.assert_array_equal(got.get(), host.sum(axis=1, dtype=numpy.int8))
    my_sum(cp.arange(10))
    my_sum(cp.arange(10))
    assert float(my_sum(cp.arange(10, dtype=cp.float32))) == 45.0
    assert len(my_sum._cached_codes) == 3  # one loop per input dtype seen
    with pytest.raises(TypeError, match="Argument 'a' has incorrect type"):
        my_sum(numpy.array([1, 2, 3]))


def test_reduction_kernel(dev: str) -> None:  # noqa: F811
    l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    host, x = _arange((3, 4))
    numpy.testing.assert_allclose(l2(x, axis=1).get(), numpy.sqrt((host * host).sum(axis=1)))
    assert len(l2._cached_codes) == 1
    out = cp.empty((3,))
    assert l2(x, out, axis=1) is out  # the output may be given positionally
    numpy.testing.assert_allclose(out.get(), numpy.sqrt((host * host).sum(axis=1)))
    with pytest.raises(ValueError, match="Invalid kernel name"):
        cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", name="1")


def test_elementwise_kernel_checks_and_memo(dev: str) -> None:  # noqa: F811
    with pytest.raises(ValueError, match="Invalid kernel name"):
        cp.ElementwiseKernel("T x", "", "", "1")
    add = cp.ElementwiseKernel("T x", "T y", "y += x", "acc")
    with pytest.raises(ValueError, match="Out shape is mismatched"):
        add(cp.arange(12).reshape(3, 4), cp.arange(4))
    copy = cp.ElementwiseKernel("T x", "T y", "y = x;", "copy")
    seen = []

    def worker() -> None:
        copy(cp.ones(10))
        seen.append(next(iter(copy._elementwise_kernel_memo.values())))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(copy._elementwise_kernel_memo) == 1 and len(seen) == 4
    assert all(s is seen[0] for s in seen)  # every thread used the one translation


def test_reduction_accelerators_are_kept_but_unknown_names_refused() -> None:
    old = _core.get_reduction_accelerators()
    try:
        _core.set_reduction_accelerators(["cub"])
        assert _core.get_reduction_accelerators() == [1]
        with pytest.raises(ValueError, match="Unknown accelerator"):
            _core.set_reduction_accelerators(["warp-drive"])
    finally:
        _core.set_reduction_accelerators([])
    assert old == []
