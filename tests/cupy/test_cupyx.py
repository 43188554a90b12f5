"""The product's ``cupyx`` subset (``ascend_compat.cupy._cupyx``, what ``import cupyx`` gives with the alias), on the
CPU and the simulated NPU."""

from __future__ import annotations

import threading

import numpy
import pytest

import ascend_compat.cupy as cp
from ascend_compat.cupy import _cupyx as cupyx
from tests.conftest import run_python
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def test_allow_synchronize_forbids_get_per_thread_and_nests(dev: str) -> None:  # noqa: F811
    a = cp.asarray([2, 3])
    with cupyx.allow_synchronize(False):
        with pytest.raises(cupyx.DeviceSynchronized, match="synchronization"):
            a.get()
        with cupyx.allow_synchronize(True):
            numpy.testing.assert_array_equal(a.get(), [2, 3])
        with pytest.raises(cupyx.DeviceSynchronized):
            cp.asnumpy(a)
        seen: list[object] = []
        worker = threading.Thread(target=lambda: seen.append(a.get()))  # another thread is not affected
        worker.start()
        worker.join()
    assert len(seen) == 1
    numpy.testing.assert_array_equal(seen[0], [2, 3])
    assert a.get().tolist() == [2, 3]  # restored after the block


def test_scatter_functions_accumulate_repeated_indices(dev: str) -> None:  # noqa: F811
    a = cp.zeros(5, dtype=numpy.float32)
    idx = cp.asarray([0, 0, 3, 3, 3])
    cupyx.scatter_add(a, idx, 1.5)
    numpy.testing.assert_array_equal(a.get(), [3.0, 0, 0, 4.5, 0])
    cupyx.scatter_max(a, idx, cp.asarray([1.0, 7.0, 2.0, 5.0, 1.0], dtype=numpy.float32))
    numpy.testing.assert_array_equal(a.get(), [7.0, 0, 0, 5.0, 0])
    cupyx.scatter_min(a, cp.asarray([1, 1]), cp.asarray([-2.0, -1.0], dtype=numpy.float32))
    numpy.testing.assert_array_equal(a.get(), [7.0, -2.0, 0, 5.0, 0])
    r = cupyx.rsqrt(cp.asarray([4.0, 16.0], dtype=numpy.float32))
    assert r.dtype == numpy.float32
    numpy.testing.assert_allclose(r.get(), [0.5, 0.25])


def test_errstate_linalg_mode_is_scoped(dev: str) -> None:  # noqa: F811
    assert cupyx.geterr()["linalg"] == "ignore"
    with cupyx.errstate(linalg="raise"):
        assert cupyx.geterr()["linalg"] == "raise"
    assert cupyx.geterr()["linalg"] == "ignore"
    with pytest.raises(ValueError, match="linalg mode"):
        cupyx.seterr(linalg="warn")


def test_runtime_info_names_the_device_and_float64_policy(dev: str) -> None:  # noqa: F811
    text = str(cupyx.get_runtime_info(full=False))
    assert "float64 policy" in text and "NumPy" in text
    assert ("npu" if dev == "npu" else "cpu") in text.lower()


def test_pinned_constructors_give_host_arrays() -> None:
    a = cupyx.empty_pinned((2, 3), dtype=numpy.int16, order="F")
    assert isinstance(a, numpy.ndarray) and a.shape == (2, 3) and a.dtype == numpy.int16 and a.flags.f_contiguous
    z = cupyx.zeros_like_pinned(a)
    assert z.flags.f_contiguous and not z.any()
    e = cupyx.empty_like_pinned(numpy.ones((4,)), dtype=numpy.float32, shape=(5,))
    assert e.shape == (5,) and e.dtype == numpy.float32
    assert cupyx.zeros_pinned(3).tolist() == [0.0, 0.0, 0.0]


def test_import_cupyx_with_the_alias_and_what_it_lacks() -> None:
    res = run_python("""
        from ascend_compat.cupy import install_as_cupy
        install_as_cupy()
        import cupy, cupyx
        print(cupyx.errstate is cupy._cupyx.errstate, hasattr(cupyx, "scipy"))
        try:
            import cupyx.scipy.sparse
        except ImportError:
            print("no scipy")
    """)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:2] == ["True False", "no scipy"]
