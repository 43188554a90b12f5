"""The float64 policy (``ASCEND_COMPAT_CUPY_FLOAT64``) applies where arrays are created and in ``astype``, on the
simulated NPU; the CPU always computes float64."""

from __future__ import annotations

import warnings

import numpy
import pytest
import torch

from ascend_compat.cupy import _float64
from ascend_compat.cupy._core import use_device_kind
from tests.conftest import run_python

# Calls that make a float64 (or complex128) array by default or by request.
_MAKERS = {
    "zeros": lambda cp: cp.zeros(3),
    "ones": lambda cp: cp.ones((2, 2), order="F"),
    "empty": lambda cp: cp.empty(3),
    "full": lambda cp: cp.full(3, 1.5),
    "full complex": lambda cp: cp.full(2, 1 + 2j),
    "zeros_like": lambda cp: cp.zeros_like(cp.arange(3), dtype=float),
    "ones_like": lambda cp: cp.ones_like(cp.arange(3), dtype=numpy.complex128),
    "arange": lambda cp: cp.arange(0.0, 2.0, 0.5),
    "linspace": lambda cp: cp.linspace(0, 1, 5),
    "logspace": lambda cp: cp.logspace(0, 2, 3),
    "eye": lambda cp: cp.eye(2),
    "identity": lambda cp: cp.identity(2),
    "tri": lambda cp: cp.tri(3),
    "astype": lambda cp: cp.arange(3, dtype=cp.float32).astype(cp.float64),
    "astype complex": lambda cp: cp.arange(3, dtype=cp.float32).astype("complex128"),
    # host float64 data copied to the device
    "asarray numpy": lambda cp: cp.asarray(numpy.linspace(0, 1, 3)),
    "array list": lambda cp: cp.array([0.5, 1.5]),
    "asarray scalar": lambda cp: cp.asarray(2.5),
    "asarray numpy complex": lambda cp: cp.asarray(numpy.ones(2, dtype=numpy.complex128)),
    "asarray cpu tensor": lambda cp: cp.asarray(torch.linspace(0, 1, 3, dtype=torch.float64)),
    # ufuncs whose NumPy loop computes in float64
    "cos int64": lambda cp: cp.cos(cp.arange(3)),
    "int64 + float": lambda cp: cp.arange(3) + 1.5,
    "int64 / int64": lambda cp: cp.arange(1, 4) / cp.arange(1, 4),
    "int64 * 1j": lambda cp: cp.arange(3) * 1j,
    "sqrt int32 dtype=": lambda cp: cp.sqrt(cp.arange(3, dtype=cp.int32), dtype=cp.float64),
}
_SINGLE = {numpy.dtype(numpy.float64): numpy.float32, numpy.dtype(numpy.complex128): numpy.complex64}


@pytest.fixture()
def cp(sim):
    import ascend_compat.cupy as cupy

    return cupy


@pytest.mark.parametrize("name", sorted(_MAKERS))
def test_error_policy_refuses_float64_creation(cp, monkeypatch, name):
    monkeypatch.setenv(_float64.ENV, "native")
    wide = _MAKERS[name](cp).dtype
    assert wide in _SINGLE
    monkeypatch.setenv(_float64.ENV, "error")
    with pytest.raises(_float64.Float64Error, match=f"{wide} arrays are refused on the npu device"):
        _MAKERS[name](cp)


@pytest.mark.parametrize("name", sorted(_MAKERS))
def test_downcast_policy_makes_single_precision_with_a_warning(cp, monkeypatch, name):
    monkeypatch.setenv(_float64.ENV, "native")
    expected = _MAKERS[name](cp)
    monkeypatch.setenv(_float64.ENV, "downcast-warn")
    with pytest.warns(_float64.Float64DowncastWarning, match="downcast to") as record:
        got = _MAKERS[name](cp)
    assert got.dtype == _SINGLE[expected.dtype]
    assert got._t.device.type == "npu" and got.shape == expected.shape
    if name != "empty":  # (uninitialised values)
        numpy.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(expected).astype(got.dtype), rtol=1e-6)
    assert record[0].filename == __file__  # the warning names the user's line


def test_downcast_warning_points_at_the_callers_line(cp, monkeypatch):
    monkeypatch.setenv(_float64.ENV, "downcast-warn")
    with pytest.warns(_float64.Float64DowncastWarning) as record:
        cp.zeros(2)
        cp.arange(3, dtype=cp.float32).astype(cp.float64)
    assert [r.filename for r in record] == [__file__, __file__]


def test_single_precision_and_integers_pass_every_policy(cp, monkeypatch):
    monkeypatch.setenv(_float64.ENV, "error")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cp.zeros(3, dtype=cp.float32).dtype == numpy.float32
        assert cp.arange(4).dtype == numpy.int64
        assert cp.linspace(0, 1, 3, dtype=cp.float32).dtype == numpy.float32
        assert cp.full(2, 1.5, dtype=cp.float16).dtype == numpy.float16
        assert cp.arange(3).astype(cp.complex64).dtype == numpy.complex64


def test_cpu_arrays_keep_float64_under_every_policy(cp, monkeypatch):
    for chosen in ("error", "downcast-warn"):
        monkeypatch.setenv(_float64.ENV, chosen)
        with use_device_kind("cpu"), warnings.catch_warnings():
            warnings.simplefilter("error")
            assert cp.zeros(3).dtype == numpy.float64
            assert cp.arange(3).astype(cp.float64).dtype == numpy.float64
            assert cp.linspace(0, 1, 3)._t.device.type == "cpu"


def test_ufunc_loop_remembered_on_the_cpu_still_follows_the_policy_on_the_npu(cp, monkeypatch):
    """A float64 loop first run on the CPU (where its fast path is remembered) is still checked on the npu."""
    monkeypatch.setenv(_float64.ENV, "error")
    with use_device_kind("cpu"):
        ints = cp.arange(4)
        for _ in range(2):
            assert cp.cos(ints).dtype == numpy.float64 and (ints + 0.5).dtype == numpy.float64
        out = cp.empty(4)
    on_npu = cp.arange(4)
    with pytest.raises(_float64.Float64Error):
        cp.cos(on_npu)
    with pytest.raises(_float64.Float64Error):
        on_npu + 0.5
    monkeypatch.setenv(_float64.ENV, "downcast-warn")
    with pytest.warns(_float64.Float64DowncastWarning):
        assert cp.cos(on_npu).dtype == numpy.float32
    assert cp.cos(ints, out=out) is out  # the CPU is not affected


def test_single_precision_ufuncs_and_host_data_pass_the_error_policy(cp, monkeypatch):
    monkeypatch.setenv(_float64.ENV, "error")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = cp.asarray(numpy.ones(3, dtype=numpy.float32))
        assert (cp.cos(x) + 1.5).dtype == numpy.float32
        assert cp.cos(cp.arange(3, dtype=cp.int16)).dtype == numpy.float32  # NumPy: int16 -> float32 loop
        assert cp.asarray([1, 2]).dtype == numpy.int64
        assert cp.asarray(numpy.ones(2), dtype=cp.float32).dtype == numpy.float32


_FRESH = """
    import warnings
    from ascend_compat import simulate
    simulate.install()
    import numpy
    import ascend_compat.cupy as cp
    warnings.simplefilter("always")
    for name, make in [("cos", lambda: cp.cos(cp.arange(3))), ("asarray", lambda: cp.asarray(numpy.ones(2)))]:
        with warnings.catch_warnings(record=True) as caught:
            try:
                a = make()
                print(name, a.dtype, a._t.device.type, [w.category.__name__ for w in caught])
            except cp.Float64Error as exc:
                print(name, "Float64Error", "ASCEND_COMPAT_CUPY_FLOAT64=error" in str(exc))
"""


@pytest.mark.parametrize(("chosen", "expect"), [
    ("native", ["cos float64 npu []", "asarray float64 npu []"]),
    ("error", ["cos Float64Error True", "asarray Float64Error True"]),
    ("downcast-warn", ["cos float32 npu ['Float64DowncastWarning']",
                       "asarray float32 npu ['Float64DowncastWarning']"]),
])
def test_policy_from_the_environment_in_a_fresh_interpreter(chosen, expect):
    proc = run_python(_FRESH, env={_float64.ENV: chosen})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == expect
