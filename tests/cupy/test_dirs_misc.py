"""Padding, bit packing, file I/O and formatting, memory ranges, ``who``, ``vectorize``'s NumPy typing and the
``errstate`` linalg mode, on the CPU and the simulated NPU, against NumPy."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("dtype", [numpy.int8, numpy.uint16, numpy.float32, numpy.bool_])
def test_pad_odd_reflection_wider_than_the_array(dev: str, mode: str, dtype: type) -> None:  # noqa: F811
    host = (numpy.arange(1, 5).reshape(1, 4) * 3).astype(dtype)
    for width in [(0, 9), (7, 2), (11, 13)]:
        got = cp.pad(cp.asarray(host), ((0, 0), width), mode, reflect_type="odd")
        want = numpy.pad(host, ((0, 0), width), mode, reflect_type="odd")
        assert got.dtype == want.dtype
        numpy.testing.assert_array_equal(got.get(), want)


def test_pad_callable_mode_and_bad_arguments(dev: str) -> None:  # noqa: F811
    def tens(vector, width, axis, kwargs):  # NumPy's callable protocol: edit the padded vector in place
        vector[:width[0]] = 10
        vector[vector.size - width[1]:] = 10

    host = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    numpy.testing.assert_array_equal(cp.pad(cp.asarray(host), 2, tens).get(), numpy.pad(host, 2, tens))
    with pytest.raises(ValueError, match="unsupported keyword"):
        cp.pad(cp.arange(4), 1, "edge", constant_values=3)
    with pytest.raises(TypeError):
        cp.pad(cp.arange(4), [], "edge")


def test_packbits_unpackbits_bitwise_count(dev: str) -> None:  # noqa: F811
    bits = numpy.arange(27).reshape(3, 9) % 3 == 0
    for order in ("big", "little"):
        for axis in (None, 1):
            got = cp.packbits(cp.asarray(bits), axis=axis, bitorder=order)
            numpy.testing.assert_array_equal(got.get(), numpy.packbits(bits, axis=axis, bitorder=order))
            packed = numpy.packbits(bits, axis=axis, bitorder=order)
            numpy.testing.assert_array_equal(
                cp.unpackbits(cp.asarray(packed), axis=axis, bitorder=order, count=7).get(),
                numpy.unpackbits(packed, axis=axis, bitorder=order, count=7))
    with pytest.raises(TypeError):
        cp.packbits(cp.ones(3))
    with pytest.raises(ValueError):
        cp.unpackbits(cp.ones(3, dtype=cp.uint8), bitorder="r")
    for dt in (numpy.int8, numpy.int64, numpy.uint32, numpy.uint64):
        info = numpy.iinfo(dt)
        host = numpy.array([0, 1, info.max, info.min, info.max // 3], dtype=dt)
        got = cp.bitwise_count(cp.asarray(host))
        assert got.dtype == numpy.uint8
        numpy.testing.assert_array_equal(got.get(), numpy.bitwise_count(host))


def test_save_load_savez_dump_and_formatting(dev: str, tmp_path) -> None:  # noqa: F811
    host = numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4)
    a = cp.asarray(host)
    buf = io.BytesIO()
    cp.save(buf, a)
    numpy.testing.assert_array_equal(numpy.load(io.BytesIO(buf.getvalue())), host)  # a plain .npy file
    back = cp.load(io.BytesIO(buf.getvalue()))
    assert isinstance(back, cp.ndarray)
    numpy.testing.assert_array_equal(back.get(), host)
    path = tmp_path / "x.npz"
    cp.savez_compressed(path, a, b=a[0])
    with cp.load(path) as npz:
        numpy.testing.assert_array_equal(npz["b"].get(), host[0])
        assert sorted(npz.files) == ["arr_0", "b"]
    dumped = io.BytesIO()
    a.dump(dumped)
    with pytest.raises(ValueError):
        cp.load(io.BytesIO(dumped.getvalue()))  # a pickle needs allow_pickle=True
    numpy.testing.assert_array_equal(cp.load(io.BytesIO(dumped.getvalue()), allow_pickle=True).get(), host)
    cp.savetxt(tmp_path / "a.txt", a[0])
    numpy.savetxt(tmp_path / "n.txt", host[0])
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "n.txt").read_text()
    assert cp.array_repr(a) == numpy.array_repr(host) and cp.array2string(a) == numpy.array2string(host)


def test_memory_ranges(dev: str) -> None:  # noqa: F811
    x = cp.arange(100)
    assert cp.shares_memory(x, x[1::4]) is True
    assert cp.shares_memory(x[0::2], x[1::4]) is False  # bounds overlap, elements do not
    assert cp.may_share_memory(x[0::2], x[1::4]) is True
    assert cp.shares_memory(x[0::9], x[1::11]) is True
    y = cp.arange(100).reshape(10, 10)
    assert cp.shares_memory(y[0::2], y[1::4]) is False and cp.shares_memory(y[0::2], y[:, 1::2]) is True
    assert cp.shares_memory(x, cp.arange(100)) is False
    for dt in (numpy.uint16, numpy.float64):
        a = cp.zeros((4, 7), dtype=dt)
        b = a[::2, ::2]
        assert cp.byte_bounds(b) == (a.data.ptr, a.data.ptr + (2 * 7 + 6 + 1) * a.itemsize)


def test_who_lists_the_callers_arrays(dev: str, capsys) -> None:  # noqa: F811
    cp.who({"x": cp.ones(10), "y": cp.ones(20, dtype=cp.int32), "n": 3})
    lines = capsys.readouterr().out.split("\n")
    assert lines[-5].split() == ["x", "10", "80", "float64"] and lines[-4].split() == ["y", "20", "80", "int32"]
    assert lines[-2] == "Upper bound on total bytes  =       160"


def test_vectorize_follows_numpy_scalar_typing(dev: str) -> None:  # noqa: F811
    host = numpy.linspace(0.1, 3.0, 12, dtype=numpy.float16).reshape(3, 4)

    def f(a, b):
        return a + b * a ** 3

    got = cp.vectorize(f)(cp.asarray(host), 1)
    want = numpy.vectorize(f)(host, 1)
    assert got.dtype == want.dtype
    numpy.testing.assert_allclose(got.get(), want, rtol=1e-6)  # computed in float64, as NumPy does
    x = cp.arange(5)
    acc = cp.vectorize(lambda v: v.__iadd__(1))  # a function updating its argument leaves the input alone
    acc(x)
    numpy.testing.assert_array_equal(x.get(), numpy.arange(5))
    with pytest.raises(TypeError):
        cp.vectorize(lambda a, b: a < b)(cp.ones(3, dtype=cp.complex64), cp.ones(3))


def test_errstate_linalg_mode(dev: str) -> None:  # noqa: F811
    from ascend_compat.cupy._errstate import errstate, geterr, seterr

    singular, empty = cp.zeros((3, 3)), cp.empty((3, 0))
    assert cp.linalg.solve(singular, empty).size == 0  # CuPy's default: nothing to solve, no error
    with errstate(linalg="raise"):
        assert geterr()["linalg"] == "raise"
        with pytest.raises(numpy.linalg.LinAlgError):
            cp.linalg.solve(singular, empty)
    assert geterr()["linalg"] == "ignore"
    with pytest.raises(ValueError):
        seterr(linalg="warn")


def test_import_cupy_polynomial_and_lib_modules() -> None:
    code = ("import ascend_compat.cupy as c; c.install_as_cupy(); import cupy.polynomial.polyutils as pu; "
            "from cupy.lib import stride_tricks; print(pu.trimseq(c.asarray([1, 0])).size, "
            "stride_tricks.as_strided.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "ascend_compat.cupy.lib.stride_tricks"]
