"""``all``/``any`` of a bool array add no temporary wider than the array (CuPy's huge-size tests allocate 2 GiB
bool arrays; comparing bool with 0 would build an int64 copy, 8x the array); large reduction results on the CPU
get huge pages."""

from __future__ import annotations

import re
import sys

import numpy
import pytest

import ascend_compat.cupy as cp
from ascend_compat.cupy import _alloc
from ascend_compat.cupy._core import use_device_kind
from tests.conftest import run_python


def test_all_any_of_bool_array_need_no_wide_temporary():
    proc = run_python(
        """
        import resource
        import ascend_compat.cupy as cp
        n = 128 << 20  # 128 MiB of bool
        a = cp.ones(n, dtype=bool)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        results = (bool(cp.all(a)), bool(cp.any(a)), bool(cp.all(a, axis=0)))
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
        print(results, round(grown / n, 2))
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results, ratio = proc.stdout.rsplit(")", 1)
    assert results.strip() == "(True, True, True"
    assert float(ratio) <= 2.0, f"{ratio}x the array's size in temporaries"


def test_large_cpu_reduction_results_get_huge_pages_and_numpys_values():
    if not (sys.platform.startswith("linux") and _alloc.enabled()):
        pytest.skip("transparent huge pages are not in madvise/always mode here")

    def flags(address: int) -> str:
        inside = False
        for line in open("/proc/self/smaps", encoding="ascii"):
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
            if m:
                inside = int(m.group(1), 16) <= address < int(m.group(2), 16)
            elif inside and line.startswith("VmFlags:"):
                return line
        return ""

    host = numpy.random.default_rng(0).random((3, 2 << 20), dtype=numpy.float32)
    ints = numpy.arange(3 * (2 << 20), dtype=numpy.int8).reshape(3, -1)
    with use_device_kind("cpu"):
        a = cp.asarray(host)
        for name in ("sum", "mean", "max", "min"):
            got = getattr(a, name)(axis=0)
            assert " hg" in flags(got._t.data_ptr() + got.nbytes // 2), name
            numpy.testing.assert_allclose(cp.asnumpy(got), getattr(host, name)(axis=0), rtol=1e-6)
        assert cp.asarray(ints).sum(axis=0).dtype == ints.sum(axis=0).dtype  # integers keep NumPy's widening
        numpy.testing.assert_array_equal(cp.asnumpy(cp.asarray(ints).sum(axis=0)), ints.sum(axis=0))


def test_integer_sum_of_a_broadcast_view_needs_no_int64_copy():
    proc = run_python(
        """
        import resource
        import numpy
        import ascend_compat.cupy as cp
        from ascend_compat.cupy._core import use_device_kind
        host = numpy.random.default_rng(0).integers(-100, 100, (128, 1, 1024), dtype=numpy.int8)
        with use_device_kind("cpu"):
            a = cp.broadcast_to(cp.asarray(host), (128, 1024, 1024))  # 128 Mi elements: 1 GiB as int64
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            got = a.sum(axis=2)
            grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10
        want = numpy.broadcast_to(host, (128, 1024, 1024)).sum(axis=2)
        print(got.dtype == want.dtype, bool((cp.asnumpy(got) == want).all()), grown)
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    same_dtype, same_values, grown_mib = proc.stdout.split()
    assert same_dtype == "True" and same_values == "True"
    assert int(grown_mib) < 256, f"{grown_mib} MiB of temporaries"


@pytest.mark.parametrize("chunk", [64, 1 << 30])
def test_chunked_integer_sums_match_numpy(monkeypatch, chunk):
    from ascend_compat.cupy import _reduction

    monkeypatch.setattr(_reduction, "_CHUNK_BYTES", chunk)
    with use_device_kind("cpu"):
        for dt in (numpy.int8, numpy.uint8, numpy.bool_, numpy.int16, numpy.uint16, numpy.int32, numpy.int64):
            host = (numpy.arange(60).reshape(3, 4, 5) % 7).astype(dt)
            for axis in (0, 1, -1, (0, 2), (1, 2), (0, 1, 2)):
                for keepdims in (False, True):
                    got = cp.sum(cp.asarray(host), axis=axis, keepdims=keepdims)
                    want = host.sum(axis=axis, keepdims=keepdims)
                    assert got.dtype == want.dtype and got.shape == want.shape, (dt, axis)
                    numpy.testing.assert_array_equal(cp.asnumpy(got), want)
            numpy.testing.assert_array_equal(cp.asnumpy(cp.sum(cp.asarray(host), axis=1, initial=5)),
                                             host.sum(axis=1, initial=5))
