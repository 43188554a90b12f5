"""What a new CuPy user ran into: C semantics of translated ``ElementwiseKernel``/``ReductionKernel`` bodies
(integer division, ``round``, casts, comments, ``i`` and ``_ind.size()``, constants, the reduce type) on the CPU
and the simulated NPU, and the CuPy modules this package does not provide (``cupyx.scipy``...) under
``install_as_cupy``."""

from __future__ import annotations

from typing import Any

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.conftest import run_python
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def _ek(in_params: str, out_params: str, body: str) -> Any:
    return cp.ElementwiseKernel(in_params, out_params, body, "review_kernel")


def _eq(got: Any, expected: Any) -> None:
    host = cp.asnumpy(got)
    want = numpy.asarray(expected)
    assert (host.dtype, host.shape) == (want.dtype, want.shape)
    numpy.testing.assert_array_equal(host, expected)


def test_integer_division_truncates_as_in_c(dev: str) -> None:  # noqa: F811
    x = cp.arange(-3, 4, dtype=numpy.int32)
    # C: 3 / 2 * 2 is 2 and -3 / 2 * 2 is -2 (the quotient truncates toward zero before the product)
    _eq(_ek("int32 x", "int32 y", "y = x / 2 * 2")(x), numpy.array([-2, -2, 0, 0, 0, 2, 2], numpy.int32))
    _eq(_ek("int32 x", "int32 y", "y = x / -2")(x), numpy.array([1, 1, 0, 0, 0, -1, -1], numpy.int32))
    f = cp.zeros(2, dtype=numpy.float32)
    _eq(_ek("float32 x", "float32 y", "y = x + 1 / 2")(f), numpy.zeros(2, numpy.float32))  # 1 / 2 is 0 in C
    _eq(_ek("float32 x", "float32 y", "y = x + 1.0 / 2")(f), numpy.full(2, 0.5, numpy.float32))
    _eq(_ek("float32 x", "float32 y", "y = x / 2")(cp.arange(3, dtype=numpy.float32)),
        numpy.array([0, 0.5, 1], numpy.float32))


def test_round_rounds_halfway_cases_away_from_zero(dev: str) -> None:  # noqa: F811
    x = cp.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 3.2], dtype=numpy.float32)
    expected = numpy.array([1, 2, 3, -1, -3, 0, 3], numpy.float32)
    _eq(_ek("float32 x", "float32 y", "y = round(x)")(x), expected)
    _eq(_ek("float32 x", "float32 y", "y = roundf(x)")(x), expected)
    _eq(_ek("float32 x", "float32 y", "y = rint(x)")(x), numpy.rint(cp.asnumpy(x)))  # rint: to even


@pytest.mark.parametrize(("body", "expected"), [
    ("y = (float)x * 2", [0, 2, 4, 6]),
    ("y = max(x, (T)1.5)", [1.5, 1.5, 2, 3]),
    ("y = (T)0.5 + x", [0.5, 1.5, 2.5, 3.5]),
    ("y = x > T(1) ? x : T(0)", [0, 0, 2, 3]),
    ("y = (T)(x * 2) + (float)sqrt(x * x)", [0, 3, 6, 9]),
    ("y = ~((int)x) + 0", [-1, -2, -3, -4]),
    ("y = (float)-x * 2 + (int)(x / 2) * 2", [0, -2, -2, -4]),
    ("y = (float)(T)x + (T)(T)(T)x", [0, 2, 4, 6]),
    ("y = x /* half */ * 0.5; // done", [0, 0.5, 1, 1.5]),
    ("y = x * i", [0, 1, 4, 9]),
    ("y = _ind.size() - x", [4, 3, 2, 1]),
    ("y = true ? x : 0", [0, 1, 2, 3]),
    ("y = x * M_PI / M_PI", [0, 1, 2, 3]),
    ("y = fmaxf(x, 1.5f) + fmod(x, 2) - 1u", [0.5, 1.5, 1, 3]),
])
def test_c_constructs_in_kernel_bodies(dev: str, body: str, expected: list[float]) -> None:  # noqa: F811
    x = cp.arange(4, dtype=numpy.float32)
    _eq(_ek("T x", "T y", body)(x), numpy.array(expected, numpy.float32))


def test_index_variable_follows_the_broadcast_shape(dev: str) -> None:  # noqa: F811
    got = _ek("T x, T b", "T y", "y = x + i")(cp.zeros((2, 3), dtype=numpy.float32),
                                             cp.zeros(3, dtype=numpy.float32))
    _eq(got, numpy.arange(6, dtype=numpy.float32).reshape(2, 3))


def test_kernel_size_argument(dev: str) -> None:  # noqa: F811
    """No array argument: ``size=`` gives the extent (it raised torch's "expand" error)."""
    _eq(_ek("", "int32 y", "y = 7")(size=3), numpy.full(3, 7, numpy.int32))
    _eq(_ek("", "int32 y", "y = i")(size=5), numpy.arange(5, dtype=numpy.int32))


def test_kernel_no_return(dev: str) -> None:  # noqa: F811
    copy = cp.ElementwiseKernel("T x", "T y", "y = x", "copy_into", no_return=True)
    out = cp.zeros(3, dtype=numpy.float32)
    assert copy(cp.ones(3, dtype=numpy.float32), out) is None
    _eq(out, numpy.ones(3, numpy.float32))


def test_reduction_reduces_in_the_output_type_by_default(dev: str) -> None:  # noqa: F811
    x = cp.arange(4, dtype=numpy.float32)
    count = cp.ReductionKernel("T x", "int64 y", "x > 1", "a + b", "y = a", "0", "count_big")
    _eq(count(x), numpy.array(2, numpy.int64))  # not a sum of booleans (True)
    mean = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a / _type_reduce(_in_ind.size() / _out_ind.size())",
                              "0", "my_mean")
    _eq(mean(cp.arange(6, dtype=numpy.float32).reshape(2, 3), axis=1), numpy.array([1, 4], numpy.float32))
    _eq(mean(x), numpy.array(1.5, numpy.float32))
    ones = cp.ReductionKernel("T x", "int64 y", "1", "a + b", "y = a", "0", "count_all")  # one 1 per element
    _eq(ones(cp.zeros((2, 3), dtype=numpy.float32), axis=1), numpy.array([3, 3], numpy.int64))


_U64 = [2**63 + 1, 5, 2**64 - 1, 7, 2**63, 0, 2**63 - 1]


@pytest.mark.parametrize("name", ["max", "min", "ptp", "max initial", "min where", "maximum", "minimum", "fmax",
                                  "floor_divide", "remainder", "divmod", "maximum.accumulate", "searchsorted",
                                  "maximum out="])
def test_uint64_order_and_division_above_2_63(dev: str, name: str) -> None:  # noqa: F811
    """uint64 is held as the int64 bit pattern; its order and division must still be the unsigned ones (they
    returned the bits of a float64, or 5 as the larger of 5 and 2**63 + 1)."""
    def run(xp: Any) -> Any:
        a = xp.array(_U64, dtype=numpy.uint64)
        b = xp.array([3, 2**63 + 2, 2**64 - 2, 0, 2**63, 9, 1], dtype=numpy.uint64)
        ops: dict[str, Any] = {
            "max": lambda: a.max(), "min": lambda: a[:5].min(), "ptp": lambda: xp.ptp(a),
            "max initial": lambda: a[1:2].max(initial=2**63 + 7),
            "min where": lambda: a.min(where=a > 4, initial=2**64 - 1),
            "maximum": lambda: xp.maximum(a, b), "minimum": lambda: xp.minimum(a, b), "fmax": lambda: xp.fmax(a, 6),
            "floor_divide": lambda: a // b, "remainder": lambda: a % b, "divmod": lambda: xp.stack(xp.divmod(a, b)),
            "maximum.accumulate": lambda: xp.maximum.accumulate(a),
            "searchsorted": lambda: xp.searchsorted(xp.sort(a), b),
            "maximum out=": lambda: xp.maximum(a, b, out=xp.empty_like(a)),
        }
        with numpy.errstate(divide="ignore"):
            return ops[name]()

    _eq(run(cp), run(numpy))


def test_stream_host_callbacks_run_after_the_queued_work(dev: str) -> None:  # noqa: F811
    stream, seen = cp.cuda.Stream(), []
    with stream:
        a = cp.arange(5) * 2
    stream.launch_host_func(seen.append, "host func")
    stream.add_callback(lambda s, status, arg: seen.append((s is stream, status, arg)), "callback")
    assert seen == ["host func", (True, 0, "callback")]
    assert a.sum().item() == 20


def test_modules_not_provided_say_so_and_what_to_use() -> None:
    res = run_python("""
        import importlib
        from ascend_compat.cupy import install_as_cupy
        install_as_cupy()
        import cupy, cupyx
        for name in ("cupyx.scipy.ndimage", "cupyx.profiler", "cupyx.jit", "cupy.cuda.nvtx", "cupy.testing"):
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                print(exc.name, "|", exc)
        print(hasattr(cupy, "testing"), hasattr(cupyx, "scipy"), hasattr(cupy.cuda, "nvtx"))
        try:
            cupyx.scipy
        except AttributeError as exc:
            print(exc)
        try:
            import cupy.no_such_module
        except ModuleNotFoundError as exc:
            print(exc)
        print(cupyx.rsqrt(cupy.full(2, 4.0)).tolist())
    """)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == ("cupyx.scipy | No module named 'cupyx.scipy': ascend_compat.cupy, which `import cupyx` "
                        "resolves to here, does not provide cupyx.scipy; run SciPy on a host copy "
                        "(cupy.asnumpy(a)), or use cupy.fft / cupy.linalg / torch")
    assert lines[1].startswith("cupyx.profiler | No module named 'cupyx.profiler': ") and "torch.profiler" in lines[1]
    assert lines[2].startswith("cupyx.jit | ") and "Triton" in lines[2]
    assert lines[3].startswith("cupy.cuda.nvtx | ") and "does not provide cupy.cuda.nvtx" in lines[3]
    assert lines[4].startswith("cupy.testing | ") and "numpy.testing" in lines[4]
    assert lines[5] == "False False False"
    assert lines[6].startswith("No attribute or module 'cupyx.scipy': ")
    assert lines[7] == "No module named 'cupy.no_such_module'"
    assert lines[8] == "[0.5, 0.5]"
