"""The torch.cuda classification table: complete for the running torch, consistent, and true at run time."""

from __future__ import annotations

import pytest

from ascend_compat.cuda_shim.patches import cuda_api_table
from tests.conftest import run_python

torch = pytest.importorskip("torch")

KINDS = {"direct", "adapted", "noop", "unsupported", "keep", "submodule"}
SUBMODULES = ("amp", "random", "memory", "nvtx", "graphs")


def _table():
    import json
    from importlib import resources

    return json.loads(resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_text("utf-8"))


def test_every_torch_cuda_name_is_classified():
    names = cuda_api_table()
    unclassified = sorted(set(torch.cuda.__all__) - set(names))
    assert not unclassified, f"classify these in cuda_api.json: {unclassified}"


@pytest.mark.parametrize("sub", SUBMODULES)
def test_every_submodule_name_is_classified(sub):
    data = _table()
    spec = data["submodules"][sub]
    module = getattr(torch.cuda, sub)
    known = set(data["names"]) if spec == "top-level" else set(spec)
    unclassified = sorted(set(getattr(module, "__all__", [])) - known)
    assert not unclassified, f"classify torch.cuda.{sub}: {unclassified}"


def test_entries_are_well_formed():
    data = _table()
    assert data["source"]
    entries = list(data["names"].items()) + [
        (f"{sub}.{n}", e) for sub, spec in data["submodules"].items() if isinstance(spec, dict) for n, e in spec.items()
    ]
    for name, entry in entries:
        assert entry["kind"] in KINDS, name
        assert entry["note"].strip(), name
        if entry["kind"] == "unsupported":
            assert "alternative" in entry or name in ("GreenContext",), f"{name}: say what to use instead"


@pytest.mark.parametrize("simulate", [False, True])
def test_classification_holds_at_run_time(simulate):
    proc = run_python(
        """
        import json, torch
        from importlib import resources
        from ascend_compat import cuda_shim
        data = json.loads(resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_text())
        before = {n: getattr(torch.cuda, n) for n in data["names"]}
        nvtx_before = torch.cuda.nvtx.range_push
        with cuda_shim.activated() as target:
            for name, entry in data["names"].items():
                now = getattr(torch.cuda, name)
                if entry["kind"] in ("keep", "submodule"):
                    assert now is before[name], name
                elif callable(before[name]):  # plain values (has_magma = False) may already be right
                    assert now is not before[name], name
                if entry["kind"] == "unsupported":
                    assert isinstance(now, type) == isinstance(before[name], type), name
                    try:
                        now()
                    except cuda_shim.patches.UnsupportedCudaAPIError as e:
                        assert f"torch.cuda.{name}" in str(e) and target in str(e)
                    else:
                        raise AssertionError(f"{name} did not refuse")
            # Issue 17: device telemetry is the backend's own (torch_npu has utilization), else a clear refusal.
            for name in ("utilization", "temperature", "power_draw", "clock_rate"):
                try:
                    value = getattr(torch.cuda, name)()
                except cuda_shim.patches.UnsupportedCudaAPIError as e:
                    assert f"torch.cuda.{name}" in str(e) and "npu-smi" in str(e), e
                    assert not (name == "utilization" and target == "npu"), "torch.npu.utilization exists"
                else:
                    assert name == "utilization" and target == "npu" and isinstance(value, int), (name, value)
            noop_calls = {"is_tf32_supported": (), "get_arch_list": (),
                          "memory_snapshot": (), "can_device_access_peer": (0, 1), "list_gpu_processes": (),
                          "host_memory_stats": (), "get_allocator_backend": ()}
            for name, args in noop_calls.items():
                getattr(torch.cuda, name)(*args)
            x = torch.cuda.FloatTensor(2, 3)
            assert x.dtype == torch.float32 and x.device.type == target and isinstance(x, torch.cuda.FloatTensor)
            y = torch.cuda.LongTensor([1, 2])
            assert y.tolist() == [1, 2] and not isinstance(y, torch.cuda.FloatTensor)
            with torch.cuda.nvtx.range("step"):
                torch.cuda.nvtx.range_push("a"); torch.cuda.nvtx.range_pop()
            s = torch.cuda.Stream()
            with torch.cuda.StreamContext(s):
                pass
            assert torch.cuda.random.manual_seed is torch.cuda.manual_seed
            assert isinstance(torch.cuda.default_generators[0], torch.Generator)
            assert "allocated_bytes" in torch.cuda.memory_stats_as_nested_dict()
            assert torch.cuda.get_per_process_memory_fraction() <= 1.0
            ann = torch.cuda.CUDAGraph | None  # annotations with unsupported classes keep working
        assert all(getattr(torch.cuda, n) is v for n, v in before.items())
        assert torch.cuda.nvtx.range_push is nvtx_before
        print("OK", target)
        """,
        env={"ASCEND_COMPAT_SIMULATE": "npu"} if simulate else None,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("OK npu" if simulate else "OK cpu") in proc.stdout


@pytest.mark.parametrize("chip", ["910B", "310P"])
def test_device_capability_says_bf16_or_not_and_the_reason_is_data(chip):
    from ascend_compat.cuda_shim.patches import cuda_api_table

    entry = cuda_api_table()["get_device_capability"]
    assert "(8, 0)" in entry["note"] and "310P" in entry["note"] and "bf16" in entry["note"] and entry["source"]
    proc = run_python(
        """
        import torch
        from ascend_compat import cuda_shim
        with cuda_shim.activated():
            print(torch.cuda.get_device_capability(), torch.cuda.get_device_properties(0).major)
        """,
        env={"ASCEND_COMPAT_SIMULATE": "npu", "ASCEND_COMPAT_SIM_CHIP": chip},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == (["(8,", "0)", "8"] if chip == "910B" else ["(7,", "5)", "7"])
