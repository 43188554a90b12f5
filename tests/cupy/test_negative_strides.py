"""Negative-stride views (``a[::-1]``, ``flip``, ``flipud``, ``fliplr``, ``rot90``) behave as NumPy's, on the CPU and
the simulated NPU: the same values, strides, flags and ``base``; reads see later writes to the memory and writes
through the view (and through views of it) reach the memory, by every write path of the package."""

from __future__ import annotations

from typing import Any, Callable

import numpy
import pytest
import torch

import ascend_compat.cupy as cp
from ascend_compat.cupy import _cupyx
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def _xp(x: Any) -> Any:
    return cp if isinstance(x, cp.ndarray) else numpy


# View chains, each applied to a (4, 6) float32 array by NumPy and by ascend_compat.cupy.
VIEWS: dict[str, Callable[[Any], Any]] = {
    "[::-1]": lambda x: x[::-1],
    "[::-2, 1::-1]": lambda x: x[::-2, 1::-1],
    "[1:-1][::-1]": lambda x: x[1:-1][::-1],
    "flip().T": lambda x: _xp(x).flip(x).T,
    "flip(0)[::-1]": lambda x: _xp(x).flip(x, 0)[::-1],
    "flip()[1]": lambda x: _xp(x).flip(x)[1],
    "flip()[None, ..., 1:]": lambda x: _xp(x).flip(x)[None, ..., 1:],
    "flip().reshape(-1)": lambda x: _xp(x).flip(x).reshape(-1),
    "fliplr().reshape(4,3,2)": lambda x: _xp(x).fliplr(x).reshape(4, 3, 2),
    "flipud()": lambda x: _xp(x).flipud(x),
    "rot90": lambda x: _xp(x).rot90(x),
    "rot90(k=2)": lambda x: _xp(x).rot90(x, 2),
    "rot90(k=3).T[1]": lambda x: _xp(x).rot90(x, 3).T[1],
    "flip().diagonal()": lambda x: _xp(x).flip(x).diagonal(),
    "swapaxes(flip(1))": lambda x: _xp(x).swapaxes(_xp(x).flip(x, 1), 0, 1),
    "[None, ::-1].squeeze()": lambda x: x[None, ::-1].squeeze(),
    "[::-1].view(int32)": lambda x: x[::-1].view(numpy.int32),
    "[::-1].view(int16)": lambda x: x[::-1].view(numpy.int16),
    "[::-1].mT": lambda x: x[::-1].mT,
    "split([::-1])[1]": lambda x: _xp(x).split(x[::-1], 2)[1],
    "broadcast_to([::-1, 0])": lambda x: _xp(x).broadcast_to(x[::-1, 0], (3, 4)),
    "flip(flip())": lambda x: _xp(x).flip(_xp(x).flip(x)),
}


def _pair() -> tuple[Any, numpy.ndarray]:
    host = numpy.arange(24, dtype=numpy.float32).reshape(4, 6)
    return cp.asarray(host), host


@pytest.mark.parametrize("name", list(VIEWS))
def test_views_match_numpy_and_share_memory(dev: str, name: str) -> None:  # noqa: F811
    view = VIEWS[name]
    a, h = _pair()
    v, hv = view(a), view(h)
    numpy.testing.assert_array_equal(v.get(), hv)
    assert v.strides == hv.strides and v.shape == hv.shape
    assert (v.flags.c_contiguous, v.flags.f_contiguous) == (hv.flags.c_contiguous, hv.flags.f_contiguous)
    assert v.base is not None and not v.flags.owndata
    assert cp.shares_memory(v, a) and cp.may_share_memory(v, a)
    lo, hi = cp.byte_bounds(v)  # as NumPy's, relative to the memory's start
    h_lo = hv.__array_interface__["data"][0] + sum(min(0, (n - 1) * s) for n, s in zip(hv.shape, hv.strides))
    h_hi = hv.__array_interface__["data"][0] + sum(max(0, (n - 1) * s) for n, s in zip(hv.shape, hv.strides))
    assert (lo - a.data.ptr, hi - a.data.ptr) == (h_lo - h.ctypes.data, h_hi + hv.itemsize - h.ctypes.data)
    rng = numpy.random.default_rng(0)
    h[...] = rng.standard_normal(h.shape).astype(numpy.float32)  # the memory changes: the view reads it
    a[...] = cp.asarray(h)
    numpy.testing.assert_array_equal(v.get(), hv)
    if hv.flags.writeable:  # writes through the view reach the memory
        vals = rng.standard_normal(hv.shape).astype(hv.dtype) if hv.dtype == numpy.float32 else hv[::-1].copy()
        hv[...] = vals
        v[...] = cp.asarray(vals)
        numpy.testing.assert_array_equal(a.get(), h)


def test_flip_family_are_views(dev: str) -> None:  # noqa: F811
    a = cp.arange(12.0).reshape(3, 4)
    for f in (cp.flip(a), cp.flipud(a), cp.fliplr(a), cp.rot90(a), cp.rot90(a, 2), cp.rot90(a, -1), a[::-1]):
        assert f.base is a.base and cp.shares_memory(f, a)
    f = cp.fliplr(a)
    a[0, 0] = 100.0
    assert float(f[0, -1]) == 100.0
    f[2, 0] = -1.0
    assert float(a[2, 3]) == -1.0
    assert cp.flip(cp.asarray(5.0)).shape == ()


def _np_or_cp(x: Any, name: str) -> Any:
    return getattr(_xp(x), name)


# In-place operations, run on a negative-stride view by NumPy and by ascend_compat.cupy: the view and the memory
# must end up as NumPy's.
WRITES: dict[str, Callable[[Any], Any]] = {
    "setitem basic": lambda x: x.__setitem__((1, slice(None, None, 2)), 7),
    "setitem negative step": lambda x: x.__setitem__((slice(None, None, -2),), -2),
    "setitem advanced": lambda x: x.__setitem__(([0, 2], [1, 3]), -3),
    "setitem mask": lambda x: x.__setitem__(x > 10, 0),
    "setitem from itself reversed": lambda x: x.__setitem__(Ellipsis, x[::-1].copy()),
    "fill": lambda x: x.fill(3),
    "iadd": lambda x: x.__iadd__(1),
    "imul overlapping": lambda x: x.__imul__(x[::-1]),
    "ufunc out=": lambda x: _np_or_cp(x, "add")(x, 2, out=x),
    "ufunc out= where=": lambda x: _np_or_cp(x, "multiply")(x, 2, out=x, where=x > 5),
    "two outputs": lambda x: _np_or_cp(x, "modf")(x * 0.7, out=(x, _np_or_cp(x, "empty_like")(x))),
    "ufunc.at": lambda x: _np_or_cp(x, "add").at(x, ([0, 0, 1], [1, 1, 2]), 1),
    "maximum.at": lambda x: _np_or_cp(x, "maximum").at(x, ([0, 0, 1], [1, 1, 2]), 100),
    "reduce out=": lambda x: _np_or_cp(x, "add").reduce(x.copy(), axis=1, out=x[:, 0]),
    "accumulate out=": lambda x: _np_or_cp(x, "add").accumulate(x.copy(), axis=0, out=x),
    "sum out=": lambda x: _np_or_cp(x, "sum")(x.copy(), axis=0, out=x[1]),
    "cumsum out=": lambda x: _np_or_cp(x, "cumsum")(x, axis=0, out=x),
    "clip out=": lambda x: _np_or_cp(x, "clip")(x, 3, 10, out=x),
    "matmul out=": lambda x: _np_or_cp(x, "matmul")(x[:, :4].copy(), x[:4, :4].copy(), out=x[:, :4]),
    "dot out=": lambda x: _np_or_cp(x, "dot")(x[:, :4].copy(), x[:4, :4].copy(), out=x[:, 2:]),
    "copyto": lambda x: _np_or_cp(x, "copyto")(x, 9.5),
    "copyto where=": lambda x: _np_or_cp(x, "copyto")(x, -1, where=x < 4),
    "compress out=": lambda x: _np_or_cp(x, "compress")([False, True], x.copy(), axis=0, out=x[:1]),
    "put": lambda x: x.put([0, 3, 1], [1, 2, 3]),  # (in range: CuPy's default mode wraps, NumPy's raises)
    "putmask": lambda x: _np_or_cp(x, "putmask")(x, x > 12, 0),
    "place": lambda x: _np_or_cp(x, "place")(x, x > 12, [1, 2]),
    "put_along_axis": lambda x: _np_or_cp(x, "put_along_axis")(x, _xp(x).asarray([[1]] * x.shape[0]), 99, 1),
    "fill_diagonal": lambda x: _np_or_cp(x, "fill_diagonal")(x, 42),
    "nan_to_num copy=False": lambda x: _np_or_cp(x, "nan_to_num")(x, copy=False),
    "flat[...] =": lambda x: x.flat.__setitem__(slice(0, 5), 1),
    "T[...] =": lambda x: x.T.__setitem__((0,), 8),
    "real[...] =": lambda x: x.real.__setitem__(Ellipsis, 4),
    "set()": lambda x: x.__setitem__(Ellipsis, numpy.arange(x.size, dtype=x.dtype).reshape(x.shape))
    if isinstance(x, numpy.ndarray) else x.set(numpy.arange(x.size, dtype=x.dtype).reshape(x.shape)),
    "ElementwiseKernel out": lambda x: x.__imul__(2) if isinstance(x, numpy.ndarray) else
    cp.ElementwiseKernel("T a", "T b", "b = a * 2", "twice")(x.copy(), x),
}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("view", ["[::-1]", "[::-2, 1::-1]", "rot90", "flip().T"])
def test_every_write_path_reaches_memory(dev: str, view: str, write: str) -> None:  # noqa: F811
    a, h = _pair()
    v, hv = VIEWS[view](a), VIEWS[view](h)
    assert type(v).__name__ == "FlipView"  # (the views under test have negative strides)
    try:
        WRITES[write](hv)
    except (ValueError, IndexError) as exc:  # NumPy refuses this combination: so must we
        with pytest.raises(type(exc)):
            WRITES[write](v)
        return
    WRITES[write](v)
    numpy.testing.assert_allclose(v.get(), hv, rtol=1e-6)
    numpy.testing.assert_allclose(a.get(), h, rtol=1e-6)


def test_random_fills_and_scatter_reach_memory(dev: str) -> None:  # noqa: F811
    for shuffle in (cp.random.shuffle, cp.random.default_rng(3).shuffle):
        a = cp.arange(40.0).reshape(10, 4)
        v = a[::-1, ::-1]
        shuffle(v)
        assert sorted(a[:, 0].tolist()) == [float(i) for i in range(0, 40, 4)] and a[:, 0].tolist() != sorted(
            a[:, 0].tolist())
        numpy.testing.assert_array_equal(v.get(), a.get()[::-1, ::-1])
    a = cp.zeros(6)
    _cupyx.scatter_add(a[::-1], [0, 0, 2], 1.0)
    assert a.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0, 2.0]
    a[::-1].scatter_max([1], 5.0)
    assert a.tolist() == [0.0, 0.0, 0.0, 1.0, 5.0, 2.0]
    out = cp.zeros((1, 3))[::-1]  # negative strides, C-contiguous (the reversed axis has length 1)
    assert out.flags.c_contiguous and out.strides == (-24, 8)
    cp.random.default_rng(0).random(out=out)
    assert bool((out.base > 0).all())


def test_copies_where_numpy_copies(dev: str) -> None:  # noqa: F811
    a = cp.arange(24.0).reshape(4, 6)
    for r in (a[::-1].ravel(), a[::-1].flatten(), a[::-1].reshape(6, 4), a[::-1][[0, 1]], a[::-1].copy(),
              cp.ascontiguousarray(a[::-1]), a[::-1].astype(cp.float32)):
        assert r.base is None and not cp.shares_memory(r, a)
        r[...] = -1  # a copy: the memory is untouched
    assert float(a.sum()) == float(sum(range(24)))
    with pytest.raises(ValueError, match="copy"):
        a[::-1].reshape((6, 4), copy=False)
    r = cp.flip(a).reshape(-1, copy=False)  # expressible with negative strides: a view, as NumPy's
    assert r.base is a.base and r.strides == (-8,)
    h = numpy.arange(24.0).reshape(4, 6)
    assert cp.empty_like(cp.rot90(a)).strides == numpy.empty_like(numpy.rot90(h)).strides
    for make in (lambda x: x.copy(order="K"), lambda x: x.astype(numpy.float32), lambda x: _xp(x).array(x, order="K"),
                 lambda x: x.ravel("K"), lambda x: x.T.ravel("K")):
        got, want = make(cp.rot90(a)), make(numpy.rot90(h))  # order K: the memory's axis order, as NumPy
        assert got.strides == want.strides
        numpy.testing.assert_array_equal(got.get(), want)


def test_host_transfer_and_exchange(dev: str) -> None:  # noqa: F811
    a = cp.arange(6.0)
    v = a[::-1]
    host = cp.asnumpy(v)
    numpy.testing.assert_array_equal(host, numpy.arange(6.0)[::-1])
    assert host.flags.c_contiguous and v.get(order="F").flags.f_contiguous and v.tolist()[0] == 5.0
    t = torch.from_dlpack(v)  # torch's DLPack has no negative strides: a copy, in the view's order
    assert t.tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0] and t.data_ptr() != a.data.ptr
    with pytest.raises(BufferError, match="negative strides"):
        v.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="negative strides"):
        v.toDlpack()
    if dev != "cuda":
        with pytest.raises(AttributeError, match="DLPack"):
            _ = v.__cuda_array_interface__
    w = cp.from_dlpack(v)  # an array of ours: the same memory, the same layout
    assert w.strides == (-8,) and cp.shares_memory(w, a)
    assert v.data.ptr == a.data.ptr + 5 * 8  # CuPy's data.ptr: the first element
    m = cp.ndarray((1,), cp.float64, memptr=v.data)
    m[0] = 50.0
    assert float(a[5]) == 50.0
    s = cp.lib.stride_tricks.as_strided(a[4:], (3,), (-16,))  # negative strides, as NumPy's as_strided
    assert s.tolist() == [4.0, 2.0, 0.0] and s.strides == (-16,)


def test_a_write_into_a_read_copy_raises(dev: str) -> None:  # noqa: F811
    # Internal guard: ``_t`` of a negative-stride view is a copy; a write into it would be lost, so it raises.
    v = cp.arange(4.0)[::-1]
    with pytest.raises(RuntimeError, match=r"[Ii]nplace"):
        v._t.add_(1)
    with pytest.raises(RuntimeError, match=r"[Ii]nplace"):
        torch.add(v._t, 1, out=v._t)


def test_dtypes_and_bad_input(dev: str) -> None:  # noqa: F811
    for dt in (numpy.uint16, numpy.uint32, numpy.uint64, numpy.bool_, numpy.complex64, numpy.int8, numpy.float16):
        h = (numpy.arange(12) % 5).astype(dt).reshape(3, 4)
        a = cp.asarray(h)
        v, hv = a[::-1, ::-1], h[::-1, ::-1]
        assert v.strides == hv.strides and v.dtype == hv.dtype
        v[0] = h[0, 0]
        hv[0] = h[0, 0]
        numpy.testing.assert_array_equal(a.get(), h)
    c = cp.arange(4, dtype=cp.complex64)[::-1]
    c.imag[...] = 2
    assert c.real.strides == (-8,) and c.base.tolist() == [2j, 1 + 2j, 2 + 2j, 3 + 2j]
    v = cp.arange(6.0)[::-1]
    with pytest.raises(IndexError, match="out of bounds"):
        v[6]
    with pytest.raises(IndexError, match="too many indices"):
        v[0, 0]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        v[::0]
    with pytest.raises(ValueError, match="last axis must be contiguous"):
        v.view(cp.int32)
    s = cp.arange(12.0).reshape(2, 6)[::-1, ::2]  # the last axis runs forwards, with gaps: NumPy refuses too
    with pytest.raises(ValueError, match="last axis must be contiguous"):
        s.view(cp.int32)  # (not a copy of the elements, which writes would miss)
    assert s.view(cp.int64).strides == (-48, 16) and cp.shares_memory(s.view(cp.int64), s)
    with pytest.raises(AttributeError, match="in-place"):
        v.shape = (2, 3)


def test_views_alive_at_interpreter_exit_are_quiet() -> None:
    from tests.conftest import run_python

    proc = run_python("""
        from ascend_compat import simulate
        simulate.install()
        import ascend_compat.cupy as cp
        a = cp.arange(12.0).reshape(3, 4)
        kept = [a[::-1], cp.rot90(a), cp.flip(a)[1:]]
        kept[0][0, 0] = 7.0
        print(cp.current_torch_device(), float(a[2, 0]), kept[1].strides)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["npu:0", "7.0", "(-8,", "32)"] and "Exception ignored" not in proc.stderr


def test_views_stay_views_under_torch_inference_mode(dev: str) -> None:  # noqa: F811
    # Under torch.inference_mode every tensor is an inference tensor, as the read copies of negative-stride views
    # are: only those copies may be copied when wrapped, a user's views must still write into their memory.
    alive = cp.arange(3.0)[::-1]  # (a negative-stride view alive elsewhere in the program)
    with torch.inference_mode():
        a = cp.zeros((2, 4))
        a[1:][...] = 1.0
        a.reshape(8)[:2] = 2.0
        v = a[::-1]
        v[0, 0] = 5.0
        v.T[1] += 3.0
        assert a.tolist() == [[2.0, 5.0, 0.0, 0.0], [5.0, 4.0, 1.0, 1.0]]
        c = v.copy()  # a copy stays a copy
        c[...] = -1.0
    assert float(a.sum()) == 18.0 and alive.tolist() == [2.0, 1.0, 0.0]


def test_concurrent_reads_keep_each_threads_views(dev: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    # Each read of a negative-stride view records its copy, so that views made from it (v.T, v[1:], ...) map back
    # onto the memory. Thread A is held inside its read while thread B reads: B's record must survive A's.
    import threading
    import weakref

    from ascend_compat.cupy import _core_flip

    a = cp.arange(24.0).reshape(4, 6)
    v = a[::-1]
    inside, release = threading.Event(), threading.Event()

    def ref(x: Any, *callback: Any) -> Any:
        if threading.current_thread().name == "reader-A":
            inside.set()
            release.wait(5)
        return weakref.ref(x, *callback)

    monkeypatch.setattr(_core_flip, "weakref", type("W", (), {"ref": staticmethod(ref)}))
    got: list[torch.Tensor] = []
    reader_a = threading.Thread(target=lambda: v._t, name="reader-A")
    reader_b = threading.Thread(target=lambda: got.append(v._t), name="reader-B")
    reader_a.start()
    assert inside.wait(5)
    reader_b.start()
    reader_b.join(0.5)  # (with the reads serialised, B waits for A here)
    release.set()
    reader_a.join(5)
    reader_b.join(5)
    monkeypatch.undo()
    w = _core_flip.derive(got[0].t(), v)  # what B's v.T makes of its read
    assert cp.shares_memory(w, a) and w.strides == (8, -48)
    w[0, 0] = -1.0
    assert float(a[3, 0]) == -1.0


# Divergences from NumPy found by a differential fuzzer (random view chains, reads and writes run on NumPy and here);
# each test is the minimal program, on the CPU and the simulated NPU.
def test_assignment_from_overlapping_memory_reads_it_first(dev: str) -> None:  # noqa: F811
    # NumPy reads the source as it was before the write when both are views of the same memory
    for write in (lambda x: x.__setitem__(slice(1, None), x[:-1]), lambda x: x.__setitem__(Ellipsis, x.T),
                  lambda x: _np_or_cp(x, "copyto")(x, x.T), lambda x: x.T.__setitem__(Ellipsis, x),
                  lambda x: _np_or_cp(x, "copyto")(x[1:], x[:-1], where=x[:-1] > 1)):
        h = numpy.arange(9.0).reshape(3, 3)
        a = cp.asarray(h)
        write(h)
        write(a)
        numpy.testing.assert_array_equal(a.get(), h)


def test_place_into_a_non_contiguous_view(dev: str) -> None:  # noqa: F811
    h = numpy.arange(6.0).reshape(2, 3)
    a = cp.asarray(h)
    mask = numpy.array([[True, False], [False, False], [True, True]])
    numpy.place(h.T, mask, [0.5, -2.5])
    cp.place(a.T, cp.asarray(mask), cp.asarray([0.5, -2.5]))
    numpy.testing.assert_array_equal(a.get(), h)
    with pytest.raises(ValueError, match="same size"):
        cp.place(a.T, cp.asarray(mask[:2]), cp.asarray([1.0]))


def test_dtype_view_of_an_empty_array(dev: str) -> None:  # noqa: F811
    for shape, key in (((2, 3), (slice(None), slice(3, None))), ((1, 2, 4, 0), Ellipsis), ((3, 4), slice(3, 0, 1))):
        h = numpy.zeros(shape, numpy.int16)[key]
        a = cp.zeros(shape, cp.int16)[key]
        for dt in (numpy.float32, numpy.int8, numpy.int64):
            try:
                want = h.view(dt)
            except ValueError:
                with pytest.raises(ValueError):
                    a.view(dt)
                continue
            got = a.view(dt)
            assert got.shape == want.shape and got.dtype == want.dtype and got.size == 0


def test_fortran_order_reshape_of_and_to_zero_dimensions(dev: str) -> None:  # noqa: F811
    for shape, target in (((), (1, 1, 1)), ((1,), ()), ((), ())):
        h = numpy.full(shape, 2.5)
        got = cp.asarray(h).reshape(target, order="F")
        assert got.shape == h.reshape(target, order="F").shape and float(got.sum()) == 2.5


def test_asnumpy_honours_order(dev: str) -> None:  # noqa: F811
    a = cp.arange(6.0).reshape(2, 3)
    for v in (a, a[::-1], cp.rot90(a)):
        for order, flag in (("F", "f_contiguous"), ("C", "c_contiguous")):
            host = cp.asnumpy(v, order=order)
            assert getattr(host.flags, flag) and host.tolist() == v.tolist()
