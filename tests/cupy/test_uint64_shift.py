"""uint64 right shifts shift zeros in, as NumPy's do, on the CPU and the simulated NPU (uint64 is held as the int64
bit pattern, and torch's own uint64 shift copies the top bit)."""

from __future__ import annotations

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401  (fixture)


def _operands() -> tuple[numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(0)
    a = rng.integers(0, 2**64, size=600, dtype=numpy.uint64)
    a[:4] = [2**63, 2**64 - 1, 2**63 + 8, 5]  # top bit set, all ones, small
    b = rng.integers(0, 70, size=600).astype(numpy.uint64)  # 64 and over give 0
    b[:4] = [1, 63, 2, 0]
    return a, b


@pytest.mark.usefixtures("dev")
def test_uint64_right_shift_matches_numpy() -> None:
    a, b = _operands()
    ca, cb = cp.asarray(a), cp.asarray(b)
    for _ in range(2):  # the second call takes the ufunc's cached path for this dtype pair
        got = cp.right_shift(ca, cb)
        assert got.dtype == numpy.uint64
        assert numpy.array_equal(got.get(), numpy.right_shift(a, b))
    assert numpy.array_equal((ca >> 3).get(), a >> numpy.uint64(3))
    out = cp.empty_like(ca)
    cp.right_shift(ca, cb, out=out)
    assert numpy.array_equal(out.get(), numpy.right_shift(a, b))
    view = ca.reshape(20, 30)[:, ::3]
    assert numpy.array_equal(cp.right_shift(view, cb[:20].reshape(20, 1)).get(),
                             numpy.right_shift(a.reshape(20, 30)[:, ::3], b[:20].reshape(20, 1)))


@pytest.mark.usefixtures("dev")
def test_signed_right_shift_still_copies_the_sign() -> None:
    a, b = _operands()
    s = a.view(numpy.int64)
    got = cp.right_shift(cp.asarray(s), cp.asarray(b.astype(numpy.int64)))
    assert numpy.array_equal(got.get(), numpy.right_shift(s, b.astype(numpy.int64)))
