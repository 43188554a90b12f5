"""cupy.cuda on the simulated NPU (2 devices): Device, streams, events, memory pool, CUDA-only refusals, and the
float64 policy with show_config."""

from __future__ import annotations

import io
import pickle
import warnings

import numpy
import pytest
import torch

from tests.conftest import run_python


@pytest.fixture()
def cp(sim):
    import ascend_compat.cupy as cupy

    return cupy


def test_device_count_and_current(cp):
    assert cp.cuda.runtime.getDeviceCount() == 2
    assert cp.cuda.Device().id == 0
    assert cp.cuda.is_available()


def test_device_context_places_arrays_and_restores(cp, sim):
    with cp.cuda.Device(1) as dev:
        assert dev.id == 1 and cp.cuda.get_device_id() == 1
        a = cp.arange(4)
        assert a._t.device == sim.device("npu", 1)
        with cp.cuda.Device(0):
            assert cp.zeros(2)._t.device == sim.device("npu", 0)
        assert cp.cuda.get_device_id() == 1
        assert cp.asnumpy(a * 2).tolist() == [0, 2, 4, 6]
    assert cp.cuda.get_device_id() == 0
    assert cp.arange(2)._t.device == sim.device("npu", 0)


def test_device_bad_ordinal_and_type(cp):
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="invalid device ordinal 2"):
        cp.cuda.Device(2)
    with pytest.raises(TypeError, match="Device id"):
        cp.cuda.Device("npu:0")


def test_device_equality_synchronize_mem_info(cp):
    assert cp.cuda.Device(1) == cp.cuda.Device(1) != cp.cuda.Device(0)
    cp.cuda.Device(1).synchronize()
    free, total = cp.cuda.Device(1).mem_info
    assert total == 64 * 2**30 and 0 < free <= total  # the 910B profile
    assert cp.cuda.runtime.getDeviceProperties(1)["totalGlobalMem"] == total


def test_memory_pool_follows_allocator_per_device(cp):
    pool = cp.get_default_memory_pool()
    assert pool is cp.cuda.get_default_memory_pool()
    with cp.cuda.Device(1):
        before = pool.used_bytes()
        a = cp.zeros((256, 1024), dtype=cp.float32)  # 1 MiB
        assert pool.used_bytes() - before == 2**20
        assert pool.total_bytes() >= pool.used_bytes()
        del a
        pool.free_all_blocks()
        assert pool.used_bytes() == before
    assert cp.get_default_pinned_memory_pool().used_bytes() == 0


def test_memory_pool_limit_and_oom_type(cp, sim):
    pool = cp.get_default_memory_pool()
    assert issubclass(cp.cuda.memory.OutOfMemoryError, sim.OutOfMemoryError)
    err = pickle.loads(pickle.dumps(cp.cuda.memory.OutOfMemoryError(10, 20, 30)))
    assert (err.size, err.total, err.limit) == (10, 20, 30)
    with cp.cuda.Device(1):
        pool.set_limit(size=2**20)
        try:
            assert pool.get_limit() == 2**20
            with pytest.raises(cp.cuda.memory.OutOfMemoryError):
                with cp.cuda.memory.oom_as_cupy_error():
                    cp.zeros((4, 2**20), dtype=cp.float32)
        finally:
            pool.set_limit(fraction=1.0)
        assert pool.get_limit() == 0
    with pytest.raises(ValueError):
        pool.set_limit(size=1, fraction=0.5)


def test_stream_and_event(cp):
    with cp.cuda.Device(1):
        s = cp.cuda.Stream()
        assert s.device_id == 1
        assert cp.cuda.get_current_stream() == cp.cuda.Stream.null
        with s:
            assert cp.cuda.get_current_stream() == s
            y = cp.arange(3) + 1
        assert cp.cuda.get_current_stream() == cp.cuda.Stream.null
        start = cp.cuda.Event()
        start.record()
        end = s.record()
        s.synchronize()
        assert s.done and end.done
        assert cp.cuda.get_elapsed_time(start, end) >= 0
        assert cp.asnumpy(y).tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="timing"):
        cp.cuda.get_elapsed_time(cp.cuda.Event(disable_timing=True), cp.cuda.Event())


def test_cuda_only_apis_name_the_alternative(cp):
    with pytest.raises(cp.cuda.CUDAOnlyError, match=r"RawKernel is CUDA-only.*'npu'.*scaffold"):
        cp.cuda.RawKernel("extern \"C\" __global__ void k() {}", "k")
    with pytest.raises(NotImplementedError, match=r"cublas.*cupy\.matmul"):
        cp.cuda.cublas.create()
    with pytest.raises(cp.cuda.CUDAOnlyError, match=r"cuFFT|cufft"):
        cp.cuda.cufft.Plan1d(8, 0, 1)
    with pytest.raises(cp.cuda.CUDAOnlyError, match="compute_capability"):
        _ = cp.cuda.Device(0).compute_capability
    assert cp.cuda.runtime.runtimeGetVersion() == 0


def test_float64_policy_error_and_downcast(cp, monkeypatch):
    from ascend_compat.cupy import _float64

    monkeypatch.setenv(_float64.ENV, "error")
    with pytest.raises(_float64.Float64Error, match="float64 arrays are refused on the npu"):
        cp.random.rand(3)
    with pytest.raises(TypeError):
        cp.linalg.inv(cp.eye(2, dtype=cp.int32))
    assert cp.random.rand(3, dtype=cp.float32).dtype == numpy.float32
    monkeypatch.setenv(_float64.ENV, "downcast-warn")
    with pytest.warns(_float64.Float64DowncastWarning, match="float64 downcast to float32"):
        x = cp.random.rand(3)
    assert x.dtype == numpy.float32
    monkeypatch.setenv(_float64.ENV, "native")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cp.random.rand(3).dtype == numpy.float64
    monkeypatch.setenv(_float64.ENV, "bogus")
    with pytest.raises(ValueError, match=r"ASCEND_COMPAT_CUPY_FLOAT64='bogus'.*downcast-warn"):
        cp.random.rand(3)


def test_float64_policy_ignores_cpu_and_show_config(cp, monkeypatch):
    from ascend_compat.cupy import _float64

    monkeypatch.setenv(_float64.ENV, "error")
    assert _float64.policy(torch.device("cpu")) == "native"
    out = io.StringIO()
    cp.show_config(file=out)
    text = out.getvalue()
    assert "float64 policy  : error (ASCEND_COMPAT_CUPY_FLOAT64=error)" in text
    assert "Device count    : 2" in text and "Simulated NPU   : chip 910B" in text


def test_float64_default_follows_the_simulated_chip():
    code = """
        from ascend_compat import simulate
        simulate.install(device_count=1, float64="error")
        import ascend_compat.cupy as cp
        from ascend_compat.cupy import _float64
        print(_float64.policy())
        try:
            cp.random.rand(2)
        except _float64.Float64Error as exc:
            print("refused", exc)
        cp.show_config()
    """
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "error"
    assert lines[1].startswith("refused float64 arrays are refused on the npu")
    assert any("float64 policy  : error (default: the simulated chip 910B was installed with float64='error')" in ln
               for ln in lines)


def test_per_thread_default_stream(cp):
    ptds, null = cp.cuda.Stream.ptds, cp.cuda.Stream.null
    assert ptds == cp.cuda.Stream(ptds=True) and null == cp.cuda.Stream(null=True)
    assert ptds != null and ptds != cp.cuda.Stream() and hash(ptds) != hash(null)
    assert (ptds.ptr, null.ptr) == (cp.cuda.runtime.streamPerThread, 0)  # CuPy's handles
    with cp.cuda.Device(1):
        with ptds:
            assert cp.cuda.get_current_stream() == ptds and ptds.device_id == 1
            y = cp.arange(3) * 2
            ptds.synchronize()
            assert ptds.done
        assert cp.cuda.get_current_stream() == null
    assert cp.asnumpy(y).tolist() == [0, 2, 4] and y._t.device.index == 1


def test_set_allocator_accepts_none_pools_and_callables(cp):
    from ascend_compat.cupy.cuda import memory

    default = cp.cuda.get_allocator()
    pool = cp.cuda.MemoryPool()
    cp.cuda.set_allocator(pool.malloc)  # a pool here is a view of the backend's allocator: the same allocator
    assert cp.cuda.get_allocator() is default
    before = cp.get_default_memory_pool().used_bytes()
    mem = cp.cuda.alloc(1 << 20)
    assert cp.get_default_memory_pool().used_bytes() >= before + (1 << 20)  # from the backend's allocator
    del mem
    sizes: list[int] = []

    def counting(size: int):
        sizes.append(size)
        return pool.malloc(size)

    cp.cuda.set_allocator(counting)
    try:
        arr = cp.ndarray((4,), cp.float32, memptr=cp.cuda.alloc(16))
        arr[...] = 1.5
        assert sizes == [16] and cp.asnumpy(arr).tolist() == [1.5] * 4
        with cp.cuda.using_allocator(None):
            cp.cuda.alloc(8)
            with pytest.raises(ValueError, match="using_allocator"):
                cp.cuda.set_allocator(None)
        assert sizes == [16] and memory.get_allocator() is counting
    finally:
        cp.cuda.set_allocator(None)
    assert cp.cuda.get_allocator() is default
    with pytest.raises(TypeError, match="callable"):
        cp.cuda.set_allocator(42)


def test_set_pinned_memory_allocator(cp):
    pool = cp.cuda.PinnedMemoryPool()
    try:
        cp.cuda.set_pinned_memory_allocator(pool.malloc)
        buf = cp.cuda.alloc_pinned_memory(64)
        host = numpy.frombuffer(buf, numpy.float32, 16)
        host[:] = 3.0
        assert cp.asnumpy(cp.asarray(host)).tolist() == [3.0] * 16
        cp.cuda.set_pinned_memory_allocator(None)
        assert len(memoryview(cp.cuda.alloc_pinned_memory(32))) == 32
        with pytest.raises(TypeError, match="callable"):
            cp.cuda.set_pinned_memory_allocator("pool")
    finally:
        cp.cuda.set_pinned_memory_allocator(pool.malloc)


def test_device_can_access_peer(cp):
    rt = cp.cuda.runtime
    assert rt.deviceCanAccessPeer(0, 1) == 0  # simulated chips: separate memories, no peer access
    assert rt.deviceCanAccessPeer(1, 1) == 0
    with pytest.raises(rt.CUDARuntimeError, match="invalid device ordinal 2") as err:
        rt.deviceCanAccessPeer(0, 2)
    assert err.value.status == rt.errorInvalidDevice


def test_cuda_only_types_import_and_refuse_on_use(cp):
    from ascend_compat.cupy.cuda.texture import ChannelFormatDescriptor, TextureObject

    with pytest.raises(cp.cuda.CUDAOnlyError, match=r"texture\.ChannelFormatDescriptor is CUDA-only"):
        ChannelFormatDescriptor(32, 0, 0, 0, cp.cuda.runtime.cudaChannelFormatKindFloat)

    class Sub(cp.cuda._compiler_cache.DiskKernelCacheBackend):  # subclassing at import time works, as on CUDA
        pass

    with pytest.raises(cp.cuda.CUDAOnlyError):
        Sub()
    assert not isinstance(object(), TextureObject)
    with pytest.raises(cp.cuda.CUDAOnlyError):
        cp.cuda.texture.no_such_function()


def test_global_random_state_is_per_device_kind(cp):
    # cpu and npu:0 both have device id 0: a RandomState first used on the CPU must not serve the npu afterwards.
    from ascend_compat.cupy._core import use_device_kind

    with use_device_kind("cpu"):
        assert cp.random.rand(2)._t.device.type == "cpu"
    assert cp.random.rand(2)._t.device.type == "npu"
