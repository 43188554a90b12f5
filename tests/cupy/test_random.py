"""cupy.random on the simulated NPU: per-device states, seeds, CuPy's dtype= arguments, Generator, errors."""

from __future__ import annotations

import numpy
import pytest


@pytest.fixture()
def cp(sim):
    import ascend_compat.cupy as cupy

    return cupy


def test_seed_reproduces_every_stream(cp):
    def draw():
        rs = cp.random.RandomState(1234)
        return [cp.asnumpy(x) for x in (rs.rand(5), rs.normal(size=4), rs.randint(0, 100, 6), rs.gamma(2.0, size=3),
                                          rs.permutation(7))]

    first, second = draw(), draw()
    for a, b in zip(first, second):
        assert (a == b).all()
    other = cp.random.RandomState(1235).rand(5)
    assert not (cp.asnumpy(other) == first[0]).all()


def test_global_state_is_per_device(cp, sim):
    cp.random.seed(7)
    a = cp.asnumpy(cp.random.rand(4))
    with cp.cuda.Device(1):
        state1 = cp.random.get_random_state()
        x = cp.random.rand(4)
        assert x._t.device == sim.device("npu", 1)
    assert state1 is not cp.random.get_random_state()
    cp.random.seed(7)
    assert (cp.asnumpy(cp.random.rand(4)) == a).all()


@pytest.mark.parametrize("name,args", [("rand", (3, 2)), ("randn", (3, 2))])
def test_dtype_argument(cp, name, args):
    x = getattr(cp.random, name)(*args, dtype=cp.float32)
    assert x.dtype == numpy.float32 and x.shape == args
    with pytest.raises(TypeError, match="float32 and float64"):
        cp.random.random_sample((2,), dtype=cp.float16)
    assert cp.random.beta(2.0, 3.0, size=5, dtype=cp.float16).dtype == numpy.float16
    assert cp.random.poisson(3.0, size=4, dtype=cp.int32).dtype == numpy.int32
    assert cp.random.standard_normal(size=None).shape == ()  # 0-d, not a Python scalar, as in CuPy


def test_distributions_look_right(cp):
    rs = cp.random.RandomState(0)
    u = cp.asnumpy(rs.uniform(-2.0, 3.0, size=20000))
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = cp.asnumpy(rs.normal(1.0, 2.0, size=20000))
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    r = cp.asnumpy(rs.randint(3, 7, size=5000, dtype=cp.int8))
    assert r.dtype == numpy.int8 and set(numpy.unique(r)) == {3, 4, 5, 6}
    e = cp.asnumpy(rs.exponential(2.0, size=20000))
    assert abs(e.mean() - 2.0) < 0.1
    d = cp.asnumpy(rs.dirichlet([1.0, 2.0, 3.0], size=4))
    numpy.testing.assert_allclose(d.sum(axis=1), 1.0)
    c = cp.asnumpy(rs.choice(5, size=1000, p=[0.0, 0.0, 0.5, 0.5, 0.0]))
    assert set(numpy.unique(c)) == {2, 3}


def test_shuffle_and_permutation(cp):
    a = cp.arange(10)
    cp.random.shuffle(a)
    assert sorted(cp.asnumpy(a).tolist()) == list(range(10))
    p = cp.random.permutation(cp.arange(12).reshape(6, 2))
    assert sorted(cp.asnumpy(p)[:, 0].tolist()) == list(range(0, 12, 2))
    with pytest.raises(TypeError):
        cp.random.shuffle(numpy.arange(3))


def test_generator_api(cp, sim):
    g = cp.random.default_rng(42)
    assert cp.random.default_rng(g) is g
    x = g.random((3, 2), dtype=cp.float32)
    assert x.dtype == numpy.float32 and x._t.device.type == "npu"
    out = cp.empty((2, 2), dtype=cp.float64)
    assert g.standard_normal((2, 2), out=out) is out
    with pytest.raises(TypeError):
        g.standard_normal((2, 2), out=cp.empty((2, 2), dtype=cp.float32))
    ints = cp.asnumpy(g.integers(5, 10, size=100))
    assert ints.min() >= 5 and ints.max() < 10
    h1 = cp.random.Generator(cp.random.Philox4x3210(5)).gamma(2.0, size=4)
    h2 = cp.random.Generator(cp.random.Philox4x3210(5)).gamma(2.0, size=4)
    assert (cp.asnumpy(h1) == cp.asnumpy(h2)).all()


def test_bad_arguments(cp):
    with pytest.raises(TypeError, match="Seed must be an integer"):
        cp.random.RandomState(1.5)
    with pytest.raises(ValueError, match="low >= high"):
        cp.random.randint(5, 5)
    with pytest.raises(ValueError, match="out of bounds"):
        cp.random.randint(0, 300, dtype=cp.uint8)
    with pytest.raises(TypeError, match="at most"):
        cp.random.beta(1.0, 2.0, 3, float, 5)
    with pytest.raises(ValueError):
        cp.random.logseries(1.5)
