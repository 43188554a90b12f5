"""``vectorize`` (array path and the elementwise host fallback) and ``piecewise``, on the CPU and the simulated
NPU, against NumPy."""

from __future__ import annotations

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def test_vectorize_array_and_scalar_code(dev: str) -> None:  # noqa: F811
    host = numpy.arange(-3, 3, dtype=numpy.int16).reshape(2, 3)
    x = cp.asarray(host)
    add = cp.vectorize(lambda a, b: a * 2 + b)
    numpy.testing.assert_array_equal(add(x, cp.asarray(numpy.int16(5))).get(), host * 2 + 5)

    def relu(v):  # Python control flow: evaluated elementwise, as NumPy does
        return v if v > 0 else 0

    got = cp.vectorize(relu)(x)
    want = numpy.vectorize(relu)(host)
    assert isinstance(got, cp.ndarray) and got.dtype == want.dtype
    numpy.testing.assert_array_equal(got.get(), want)
    with pytest.raises(NotImplementedError):
        cp.vectorize(relu, signature="()->()")


def test_piecewise_matches_numpy(dev: str) -> None:  # noqa: F811
    host = numpy.linspace(-2, 20, 12)
    x = cp.asarray(host)
    got = cp.piecewise(x, [x > 15, x <= 5, x == 0], [-1, 0, 2, 3])
    want = numpy.piecewise(host, [host > 15, host <= 5, host == 0], [-1, 0, 2, 3])
    numpy.testing.assert_array_equal(got.get(), want)
    with pytest.raises(NotImplementedError):
        cp.piecewise(x, [x > 0], [lambda v: v])


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(dev: str, edge_order: int) -> None:  # noqa: F811
    host = numpy.arange(24, dtype=numpy.float64).reshape(4, 6) ** 2
    coords = numpy.array([0.0, 1.0, 1.5, 3.5])
    got = cp.gradient(cp.asarray(host), cp.asarray(coords), 2.0, edge_order=edge_order)
    want = numpy.gradient(host, coords, 2.0, edge_order=edge_order)
    for g, w in zip(got, want):
        numpy.testing.assert_allclose(g.get(), w)
    with pytest.raises(ValueError):
        cp.gradient(cp.ones(2), edge_order=2)
