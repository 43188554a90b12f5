"""The simulated torch.npu module: the torch_npu surface user code and libraries call."""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest


def test_availability_and_properties(sim):
    torch = sim
    assert torch.npu.is_available() and torch.npu.is_initialized()
    assert torch.npu.device_count() == 2
    props = torch.npu.get_device_properties(0)
    assert props.name == "Ascend910B3" == torch.npu.get_device_name()
    assert props.total_memory == 64 << 30
    assert props.cube_core_num > 0 and props.vector_core_num > 0 and props.L2_cache_size > 0
    assert torch.npu.is_bf16_supported()
    assert torch.npu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    assert torch.accelerator.current_accelerator() == torch.device("npu")
    assert torch.accelerator.device_count() == 2


def test_torch_npu_lookalike_is_visible_to_libraries(sim):
    import torch_npu

    assert importlib.util.find_spec("torch_npu") is not None
    assert importlib.metadata.version("torch_npu") == torch_npu.__version__
    assert torch_npu.npu is sim.npu
    from accelerate.utils import is_npu_available
    from transformers.utils import is_torch_npu_available

    assert is_torch_npu_available() and is_npu_available()
    import torch_npu.npu as tnn

    assert tnn.device_count() == 2


def test_memory_accounting(sim):
    torch = sim
    torch.npu.reset_peak_memory_stats(1)
    before = torch.npu.memory_allocated(1)
    x = torch.empty(1024, 1024, device="npu:1")  # 4 MiB
    assert torch.npu.memory_allocated(1) - before == 4 << 20
    assert torch.npu.max_memory_allocated(1) >= before + (4 << 20)
    assert torch.npu.memory_reserved(1) >= torch.npu.memory_allocated(1)
    stats = torch.npu.memory_stats(1)
    assert stats["allocated_bytes.all.current"] == torch.npu.memory_allocated(1)
    free, total = torch.npu.mem_get_info(1)
    assert total == 64 << 30 and free == total - torch.npu.memory_allocated(1)
    y = x * 2  # a kernel output is accounted too
    assert torch.npu.memory_allocated(1) - before == 8 << 20
    del x, y
    assert torch.npu.memory_allocated(1) == before
    torch.npu.empty_cache()
    torch.npu.reset_peak_memory_stats(1)
    assert torch.npu.max_memory_allocated(1) == before
    assert "Simulated NPU 1" in torch.npu.memory_summary(1)


def test_memory_fraction_limit_raises_oom(sim):
    torch = sim
    try:
        torch.npu.set_per_process_memory_fraction(1e-6, 1)  # ~68 KiB
        _ = torch.empty(100, device="npu:1")
        with pytest.raises(torch.OutOfMemoryError, match="NPU out of memory"):
            torch.empty(1 << 20, device="npu:1")
        assert torch.npu.memory_stats(1)["num_ooms"] >= 1
        assert torch.npu.mem_get_info(1)[0] < 70_000
    finally:
        torch.npu.set_per_process_memory_fraction(1.0, 1)


def test_rng_state_is_philox_shaped(sim):
    """As torch_npu's and CUDA's generators: 16 bytes, a uint64 seed then a uint64 offset that code may edit
    (DTensor's RNG tracker asserts this shape), and the state fully determines the next draw."""
    torch = sim
    torch.npu.manual_seed(5)
    state = torch.npu.get_rng_state()
    assert state.numel() == 16
    assert state[:8].view(torch.int64).item() == 5 and state[8:].view(torch.int64).item() == 0
    first = torch.randn(6, device="npu").cpu()
    after = torch.npu.get_rng_state()
    assert after[8:].view(torch.int64).item() > 0  # the offset moved on
    assert not torch.equal(torch.randn(6, device="npu").cpu(), first)
    moved = state.clone()
    moved[8:] = torch.tensor([1024], dtype=torch.int64).view(torch.uint8)
    torch.npu.set_rng_state(moved)
    shifted = torch.randn(6, device="npu").cpu()
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.randn(6, device="npu").cpu(), first)
    assert not torch.equal(shifted, first)
    cpu_state = torch.get_rng_state()  # what earlier simulator versions saved: still accepted
    torch.npu.set_rng_state(cpu_state)
    torch.npu.set_rng_state(cpu_state)
    a = torch.rand(3, device="npu").cpu()
    torch.npu.set_rng_state(cpu_state)
    assert torch.equal(torch.rand(3, device="npu").cpu(), a)


def test_rng_state_roundtrip(sim):
    torch = sim
    torch.npu.manual_seed_all(3)
    assert torch.npu.initial_seed() == 3
    state = torch.npu.get_rng_state()
    assert state.device.type == "cpu" and state.dtype == torch.uint8
    a = torch.randn(4, device="npu")
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.randn(4, device="npu").cpu(), a.cpu())
    states = torch.npu.get_rng_state_all()
    assert len(states) == 2
    torch.npu.set_rng_state_all(states)
    g = torch.Generator(device="npu")
    assert g.device.type == "npu"
    g.manual_seed(11)
    b = torch.rand(3, device="npu", generator=g)
    g.manual_seed(11)
    assert torch.equal(torch.rand(3, device="npu", generator=g).cpu(), b.cpu())
    with pytest.raises(RuntimeError, match="Expected a 'npu' device type for generator"):
        torch.rand(3, device="npu", generator=torch.Generator())


def test_streams_and_events(sim):
    torch = sim
    s = torch.npu.Stream()
    assert isinstance(s, torch.Stream) and s.device == torch.device("npu", 0)
    assert torch.npu.current_stream() == torch.npu.default_stream()
    with torch.npu.stream(s):
        assert torch.npu.current_stream() == s
    assert torch.npu.current_stream() == torch.npu.default_stream()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    torch.randn(200, 200, device="npu") @ torch.randn(200, 200, device="npu")
    end.record()
    torch.npu.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    with pytest.raises(RuntimeError, match="enable_timing"):
        torch.npu.Event().elapsed_time(torch.npu.Event())
    s.synchronize()
    assert s.query()


def test_device_context_and_capability(sim):
    torch = sim
    with torch.npu.device(1):
        assert torch.npu.current_device() == 1
    assert torch.npu.current_device() == 0
    x = torch.ones(1, device="npu:1")
    with torch.npu.device_of(x):
        assert torch.npu.current_device() == 1
    assert torch.npu.get_device_capability() is None
    torch.npu.synchronize(1)
    with pytest.raises(RuntimeError, match="Invalid NPU device ordinal"):
        torch.npu.synchronize(7)


def test_device_minus_one_and_none_are_noops_as_on_cuda(sim):
    torch = sim
    torch.npu.set_device(1)
    for arg in (-1, -2, None):
        with torch.npu.device(arg):  # torch.cuda.device: "a no-op if ... a negative integer or None"
            assert torch.npu.current_device() == 1
            x = torch.ones(1, device="npu")
        assert torch.npu.current_device() == 1 and x.device == torch.device("npu:1")
    with pytest.raises(RuntimeError, match="Invalid NPU device ordinal"):
        torch.npu.device(7)


def test_caching_allocator_reuses_freed_blocks(sim):
    """Freed blocks of 64 KiB and more stay cached per device (memory_reserved counts them) and come back for the
    next allocation of that size, also for outputs the CPU kernels compute; empty_cache() returns them."""
    torch = sim
    torch.npu.empty_cache()
    base = torch.npu.memory_allocated()
    x = torch.empty(1 << 18, device="npu")  # 1 MiB
    ptr = x.data_ptr()
    del x
    assert torch.npu.memory_allocated() == base
    assert torch.npu.memory_reserved() >= base + (1 << 20)
    y = torch.empty(1 << 18, device="npu")
    assert y.data_ptr() == ptr
    a = torch.ones(1 << 18, device="npu")
    out = a + y.fill_(2.0)
    out_ptr = out.data_ptr()
    del out
    again = a + y
    assert again.data_ptr() == out_ptr and again.device.type == "npu"
    assert torch.equal(again.cpu(), torch.full((1 << 18,), 3.0))
    del again
    on_one = torch.empty(1 << 18, device="npu:1")  # each device has its own cache
    assert on_one.data_ptr() != out_ptr
    assert torch.empty(1 << 18, device="npu:0").data_ptr() == out_ptr
    del a, y, on_one
    assert torch.npu.memory_reserved() > torch.npu.memory_allocated()
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() == torch.npu.memory_allocated() == base
    assert torch.npu.memory_stats()["reserved_bytes.all.current"] == base


def test_complex_views_track_autograd_and_inference_like_torch(sim):
    """Views the CPU-kernel fallback makes (complex .real/.imag, view_as_real) are ordinary tensors outside
    inference mode, differentiable, and inference tensors only when their base is one."""
    torch = sim
    z = torch.tensor([1 + 2j, 3 - 1j], device="npu")
    assert z.real.cpu().tolist() == [1.0, 3.0] and z.imag.cpu().tolist() == [2.0, -1.0]
    assert torch.view_as_real(z).cpu().tolist() == [[1.0, 2.0], [3.0, -1.0]]
    w = torch.randn(3, dtype=torch.complex64, device="npu", requires_grad=True)
    (w.real * 2).sum().backward()
    assert torch.equal(w.grad.cpu(), torch.full((3,), 2 + 0j, dtype=torch.complex64))
    with torch.inference_mode():
        assert not z.real.is_inference()
        assert torch.ones(2, dtype=torch.complex64, device="npu").real.is_inference()


def test_copies_resolve_conjugate_and_negative_bits(sim):
    """z.conj().resolve_conj() recursed without end (torch's conjugate fallback cloned into _copy_from again)."""
    torch = sim
    z = torch.tensor([1 + 2j, 3 - 1j], device="npu")
    assert z.conj().resolve_conj().cpu().tolist() == [1 - 2j, 3 + 1j]
    assert torch.tensor([1 + 2j]).conj().to("npu").cpu().tolist() == [1 - 2j]
    assert torch._neg_view(torch.tensor([1.0, 2.0], device="npu")).resolve_neg().cpu().tolist() == [-1.0, -2.0]
