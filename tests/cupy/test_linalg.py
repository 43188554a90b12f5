"""cupy.linalg and the top-level products on the simulated NPU: values against NumPy, NumPy's dtype rules, errors."""

from __future__ import annotations

import numpy
import pytest


@pytest.fixture()
def cp(sim):
    import ascend_compat.cupy as cupy

    return cupy


def _rand(shape, seed=0, dtype=numpy.float64):
    return numpy.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_decompositions_match_numpy_on_npu1(cp, sim):
    a = _rand((3, 4, 4)) + 4 * numpy.eye(4)
    spd = a @ a.transpose(0, 2, 1)
    with cp.cuda.Device(1):
        da, dspd = cp.asarray(a), cp.asarray(spd)
        inv = cp.linalg.inv(da)
        assert inv._t.device == sim.device("npu", 1)
        numpy.testing.assert_allclose(cp.asnumpy(inv), numpy.linalg.inv(a), rtol=1e-10)
        numpy.testing.assert_allclose(cp.asnumpy(cp.linalg.det(da)), numpy.linalg.det(a), rtol=1e-10)
        _, logdet = cp.linalg.slogdet(da)
        numpy.testing.assert_allclose(cp.asnumpy(logdet), numpy.linalg.slogdet(a)[1], rtol=1e-10)
        numpy.testing.assert_allclose(cp.asnumpy(cp.linalg.cholesky(dspd)), numpy.linalg.cholesky(spd), rtol=1e-8)
        w, _ = cp.linalg.eigh(dspd)
        numpy.testing.assert_allclose(cp.asnumpy(w), numpy.linalg.eigh(spd)[0], rtol=1e-8)
        s = cp.linalg.svd(da, compute_uv=False)
        numpy.testing.assert_allclose(cp.asnumpy(s), numpy.linalg.svd(a, compute_uv=False), rtol=1e-10)
        q, r = cp.linalg.qr(da[0])
        numpy.testing.assert_allclose(cp.asnumpy(q @ r), a[0], atol=1e-10)
        b = _rand((3, 4), 1)
        numpy.testing.assert_allclose(cp.asnumpy(cp.linalg.solve(da, cp.asarray(b[..., None]))),
                                      numpy.linalg.solve(a, b[..., None]), rtol=1e-8)
        numpy.testing.assert_allclose(cp.asnumpy(cp.linalg.pinv(da[0])), numpy.linalg.pinv(a[0]), rtol=1e-8)
        m = _rand((6, 3), 2)
        x, _, rank, _ = cp.linalg.lstsq(cp.asarray(m), cp.asarray(b[0, :3].repeat(2)), rcond=None)
        ex = numpy.linalg.lstsq(m, b[0, :3].repeat(2), rcond=None)
        numpy.testing.assert_allclose(cp.asnumpy(x), ex[0], rtol=1e-8)
        assert rank == ex[2] == 3


def test_norms_and_rank(cp):
    a = _rand((4, 5))
    da = cp.asarray(a)
    for ord_ in (None, "fro", "nuc", 1, -1, 2, numpy.inf):
        numpy.testing.assert_allclose(cp.asnumpy(cp.linalg.norm(da, ord_)), numpy.linalg.norm(a, ord_), rtol=1e-10)
    numpy.testing.assert_allclose(cp.asnumpy(cp.linalg.norm(da, 3, axis=1)), numpy.linalg.norm(a, 3, axis=1))
    assert int(cp.linalg.matrix_rank(cp.asarray(numpy.ones((3, 3))))) == 1
    assert cp.asnumpy(cp.linalg.matrix_power(cp.asarray(numpy.eye(2, dtype=numpy.int64) * 2), 3)).tolist() == \
        [[8, 0], [0, 8]]


@pytest.mark.parametrize("dtype,expect", [(numpy.int32, numpy.float64), (numpy.float32, numpy.float32),
                                          (numpy.complex64, numpy.complex64), (numpy.bool_, numpy.float64)])
def test_linalg_result_dtypes(cp, dtype, expect):
    a = cp.asarray((numpy.eye(3) * 2).astype(dtype))
    assert cp.linalg.inv(a).dtype == expect
    assert cp.linalg.svd(a)[1].dtype == numpy.dtype(expect).char.lower()


def test_linalg_errors(cp):
    with pytest.raises(numpy.linalg.LinAlgError, match="Singular"):
        cp.linalg.inv(cp.zeros((3, 3)))
    with pytest.raises(numpy.linalg.LinAlgError, match="positive definite"):
        cp.linalg.cholesky(-cp.eye(2))
    with pytest.raises(numpy.linalg.LinAlgError, match="square"):
        cp.linalg.det(cp.zeros((2, 3)))
    with pytest.raises(numpy.linalg.LinAlgError, match="two-dimensional"):
        cp.linalg.inv(cp.zeros(3))
    with pytest.raises(TypeError, match="float16"):
        cp.linalg.inv(cp.eye(2, dtype=cp.float16))
    with pytest.raises(numpy.linalg.LinAlgError, match=r"cupy\.ndarray"):
        cp.linalg.inv(numpy.eye(2))
    with pytest.raises(ValueError):
        cp.linalg.solve(cp.eye(3), cp.ones(2))


def test_products_follow_numpy(cp):
    a, b = _rand((2, 3, 4)), _rand((3, 4, 5), 1)
    numpy.testing.assert_allclose(cp.asnumpy(cp.dot(cp.asarray(a), cp.asarray(b))), numpy.dot(a, b), rtol=1e-10)
    numpy.testing.assert_allclose(cp.asnumpy(cp.tensordot(cp.asarray(a), cp.asarray(b), axes=([1, 2], [0, 1]))),
                                  numpy.tensordot(a, b, axes=([1, 2], [0, 1])), rtol=1e-10)
    numpy.testing.assert_allclose(cp.asnumpy(cp.einsum("ijk,jkl->il", cp.asarray(a), cp.asarray(b))),
                                  numpy.einsum("ijk,jkl->il", a, b), rtol=1e-10)
    i8 = numpy.arange(6, dtype=numpy.int8).reshape(2, 3)
    for fn in ("inner", "outer", "kron"):
        got = getattr(cp, fn)(cp.asarray(i8), cp.asarray(i8))
        want = getattr(numpy, fn)(i8, i8)
        assert got.dtype == want.dtype and (cp.asnumpy(got) == want).all()
    boolean = numpy.array([[True, False], [False, False]])
    got = cp.matmul(cp.asarray(boolean), cp.asarray(boolean))
    assert got.dtype == numpy.bool_ and (cp.asnumpy(got) == boolean @ boolean).all()
    assert cp.trace(cp.asarray(i8)).dtype == numpy.trace(i8).dtype
    view = cp.einsum("ij->ji", cp.asarray(i8))
    assert view.base is not None and cp.asnumpy(view).tolist() == i8.T.tolist()
    with pytest.raises(ValueError):
        cp.einsum("ij,jk", cp.asarray(a[0]), cp.asarray(a[0]))
    with pytest.raises(ValueError, match="not aligned"):
        cp.dot(cp.asarray(a), cp.asarray(a))
    with pytest.raises(TypeError, match=r"numpy\.ndarray"):
        cp.dot(cp.asarray(a[0]), b[0])


@pytest.mark.parametrize("spec,shape", [("ii->i", (3, 3)), ("jii->ij", (3, 3, 3)), ("...ii->...i", (2, 3, 3)),
                                        ("iii->i", (3, 3, 3)), ("j...i->i...j", (2, 3, 4)), ("ij->ij...", (2, 3)),
                                        ("", ())])
@pytest.mark.parametrize("dtype", [numpy.bool_, numpy.int8, numpy.float16, numpy.complex64])
def test_einsum_unary_is_a_view_in_the_input_dtype(cp, spec, shape, dtype):
    host = (numpy.arange(int(numpy.prod(shape))) % 5).astype(dtype).reshape(shape)
    a = cp.asarray(host)
    got = cp.einsum(spec, a, dtype=numpy.float64)  # NumPy ignores dtype= when the result is a view
    want = numpy.einsum(spec, host, dtype=numpy.float64)
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    assert (cp.asnumpy(got) == want).all()
    if got.ndim:
        assert got.base is a
        got[...] = 1  # writes go through to the input, as NumPy's views do
        numpy.einsum(spec, host)[...] = 1
        assert (cp.asnumpy(a) == host).all()


@pytest.mark.parametrize("spec", ["ii", "i...i->...", "ijij->", "ji->"])
def test_einsum_unary_reductions(cp, spec):
    host = numpy.arange(16, dtype=numpy.int8).reshape(2, 2, 2, 2) if spec == "ijij->" else \
        numpy.arange(9, dtype=numpy.int8).reshape(3, 3) if spec in ("ii", "ji->") else \
        numpy.arange(8, dtype=numpy.int8).reshape(2, 2, 2)
    for dtype in (None, numpy.float32):
        got = cp.einsum(spec, cp.asarray(host), dtype=dtype)
        want = numpy.einsum(spec, host, dtype=dtype)
        assert got.dtype == want.dtype and (cp.asnumpy(got) == want).all()


def test_einsum_sublists_and_errors(cp):
    a = numpy.arange(9.0).reshape(3, 3)
    got = cp.einsum(cp.asarray(a), numpy.array([0, 0]))  # integer labels, NumPy int64 ones too
    assert cp.asnumpy(got).tolist() == numpy.einsum(a, [0, 0]).tolist()
    got = cp.einsum(cp.asarray(a), [0, 1], cp.asarray(a), [1, 2], [0, 2])
    numpy.testing.assert_allclose(cp.asnumpy(got), a @ a)
    with pytest.raises(ValueError, match="collapsing index"):
        cp.einsum("ii", cp.arange(3).reshape(1, 3))
    with pytest.raises(ValueError):
        cp.einsum(cp.asarray(a), [0, 52])


def test_eigh_float16_and_empty_results(cp):
    w, v = cp.linalg.eigh(cp.asarray(numpy.array([[2, 1], [1, 2]], numpy.float16)))
    assert w.dtype == v.dtype == numpy.float16  # computed in float32, returned as CuPy does
    numpy.testing.assert_allclose(cp.asnumpy(w), [1, 3], rtol=1e-3)
    for shape in ((3, 0), (0, 2, 3), (2, 0, 3)):
        got = cp.linalg.pinv(cp.empty(shape, numpy.int32))
        assert got.dtype == numpy.linalg.pinv(numpy.empty(shape, numpy.int32)).dtype
    c = cp.linalg.cholesky(cp.empty((0, 3, 3), numpy.float32))
    assert c.flags.c_contiguous and c.flags.f_contiguous and c.shape == (0, 3, 3)


def test_cross_result_is_moved_view_like_numpy(cp):
    a, b = numpy.arange(4.0).reshape(2, 2) + 1, numpy.arange(3.0).reshape(1, 3) + 1
    with pytest.warns(DeprecationWarning):
        want = numpy.cross(a, b, axisc=0)
    got = cp.cross(cp.asarray(a), cp.asarray(b), axisc=0)
    assert cp.asnumpy(got).tolist() == want.tolist()
    assert got.flags.f_contiguous == want.flags.f_contiguous and got.flags.c_contiguous == want.flags.c_contiguous
