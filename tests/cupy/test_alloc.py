"""Large CPU results are advised transparent huge pages (as NumPy's are), only where that applies; the CPU write
paths of ufuncs give NumPy's values, dtypes and memory layouts."""

from __future__ import annotations

import re
import sys

import numpy
import pytest
import torch

import ascend_compat.cupy as cp
from ascend_compat.cupy import _alloc
from ascend_compat.cupy._core import use_device_kind

_CPU = torch.device("cpu")
_BIG = 4 << 20  # float32 elements: 16 MiB, over the 4 MiB threshold


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds ``address``."""
    inside = False
    with open("/proc/self/smaps", encoding="ascii") as f:
        for line in f:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
            if m:
                inside = int(m.group(1), 16) <= address < int(m.group(2), 16)
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _middle(a: cp.ndarray) -> int:
    return a._t.data_ptr() + a.nbytes // 2


needs_thp = pytest.mark.skipif(not (sys.platform.startswith("linux") and _alloc.enabled()),
                               reason="transparent huge pages are not in madvise/always mode here")


def test_thp_mode_is_read_from_the_bracketed_word(tmp_path):
    f = tmp_path / "enabled"
    f.write_text("always [madvise] never\n")
    assert _alloc._thp_mode(str(f)) == "madvise"
    f.write_text("[always] madvise never\n")
    assert _alloc._thp_mode(str(f)) == "always"
    f.write_text("always madvise [never]\n")
    assert _alloc._thp_mode(str(f)) == "never"
    assert _alloc._thp_mode(str(tmp_path / "missing")) == ""


@needs_thp
def test_large_cpu_results_are_advised_huge_pages():
    with use_device_kind("cpu"):
        host = numpy.random.default_rng(0).random(_BIG, dtype=numpy.float32)
        x = cp.asarray(host)
        made = {"asarray": x, "zeros": cp.zeros(_BIG, dtype=cp.float32), "add": cp.add(x, x), "scalar": x * 2.0,
                "cos": cp.cos(x), "ones F": cp.ones((2048, 2048), dtype=cp.float32, order="F")}
        for name, a in made.items():
            assert a._t.device == _CPU
            assert "hg" in _vm_flags(_middle(a)), name
        numpy.testing.assert_array_equal(cp.asnumpy(made["add"]), host + host)
        numpy.testing.assert_array_equal(cp.asnumpy(made["cos"]), numpy.cos(host))


def test_small_or_device_results_are_not_touched():
    assert _alloc.empty_if_large((16,), torch.float32, _CPU) is None
    assert _alloc.empty_if_large((_BIG,), torch.float32, torch.device("meta")) is None
    assert not _alloc.advise(0, 4096)
    t = _alloc.empty((3,), torch.float64, _CPU)
    assert t.shape == (3,) and t.dtype == torch.float64


def test_no_huge_pages_is_a_plain_allocation(monkeypatch):
    monkeypatch.setattr(_alloc, "_madvise", False)
    assert not _alloc.enabled()
    assert _alloc.empty_if_large((_BIG,), torch.float32, _CPU) is None
    assert not _alloc.advise(1 << 30, 64 << 20)
    with use_device_kind("cpu"):
        host = numpy.arange(_BIG, dtype=numpy.float32)
        numpy.testing.assert_array_equal(cp.asnumpy(cp.add(cp.asarray(host), 1.0)), host + 1.0)


_ALL = (numpy.float32, numpy.float64, numpy.float16, numpy.int16, numpy.uint16, numpy.complex64)


@pytest.mark.parametrize(("n", "dtypes"), [(100, _ALL), (10_000, _ALL),
                                           (1 << 20, (numpy.float32, numpy.float64, numpy.uint16))])
def test_cpu_write_paths_match_numpy(n, dtypes):
    rng = numpy.random.default_rng(1)
    with use_device_kind("cpu"):
        for dt in dtypes:
            host = (rng.random(n) * 4 - 1).astype(dt) if dt not in (numpy.int16, numpy.uint16) else \
                numpy.arange(n).astype(dt)
            x, y = cp.asarray(host), cp.asarray(host[::-1].copy())
            for name in ("cos", "sin", "exp", "log", "sqrt", "tanh", "absolute", "negative", "add", "maximum"):
                uf = getattr(cp, name)
                args = (x,) if uf.nin == 1 else (x, y)
                with numpy.errstate(all="ignore"):
                    want = getattr(numpy, name)(*(cp.asnumpy(a) for a in args))
                got = uf(*args)
                out = cp.empty_like(got)
                assert uf(*args, out=out) is out
                assert got.dtype == want.dtype and got.flags.c_contiguous, (name, dt)
                tol = {"rtol": 2e-3} if dt == numpy.float16 else {"rtol": 2e-6, "atol": 1e-7}
                for res in (got, out):
                    numpy.testing.assert_allclose(cp.asnumpy(res), want, equal_nan=True, err_msg=f"{name} {dt}",
                                                  **tol)


def test_layout_and_warnings_follow_numpy():
    host = numpy.asfortranarray(numpy.random.default_rng(2).random((2048, 2049), dtype=numpy.float32))
    with use_device_kind("cpu"), numpy.errstate(all="raise"):
        a = cp.asarray(host)
        for res in (cp.cos(a), cp.add(a, 1.0), cp.exp(a)):
            assert res.flags.f_contiguous and not res.flags.c_contiguous
        wide = cp.asarray(numpy.array([numpy.inf, -1.0, 0.0] * 4096, dtype=numpy.float32))
        cos, log = cp.asnumpy(cp.cos(wide)), cp.asnumpy(cp.log(wide))  # no FloatingPointError, as in CuPy
    assert numpy.isnan(cos[0]) and numpy.isnan(log[1]) and log[2] == -numpy.inf


def test_simulated_npu_results_stay_on_the_device(sim):
    host = numpy.random.default_rng(3).random(_BIG, dtype=numpy.float32)
    with use_device_kind("npu"):
        x = cp.asarray(host)
        for got, want in ((cp.cos(x), numpy.cos(host)), (cp.add(x, x), host + host), (cp.zeros(_BIG), 0.0)):
            assert got._t.device.type == "npu"
            numpy.testing.assert_allclose(cp.asnumpy(got), want, rtol=2e-6, atol=1e-7)
