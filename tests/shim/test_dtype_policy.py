"""dtype policy on the simulated NPU (910B in process, 310P in a subprocess) and on CPU fallback."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from tests.conftest import ROOT, _clean_env


@pytest.fixture
def shim(sim):
    """Activate the shim in this process for one test; deactivate (exact restore) after it."""
    from ascend_compat import cuda_shim
    from ascend_compat.cuda_shim import dtype_policy

    torch = sim
    before = (dict(vars(torch.Tensor)), {n: getattr(torch, n) for n in ("zeros", "tensor", "arange", "ones")})
    dtype_policy.reset_substitutions()
    yield cuda_shim
    while cuda_shim.is_activated() or cuda_shim._DEPTH:
        cuda_shim.deactivate()
    dtype_policy.set_default_policy("keep")
    assert not dtype_policy.is_installed()
    assert dict(vars(torch.Tensor)) == before[0]
    assert all(getattr(torch, n) is f for n, f in before[1].items())


def _policy_warnings(record):
    from ascend_compat.cuda_shim.dtype_policy import DtypePolicyWarning

    return [w for w in record if issubclass(w.category, DtypePolicyWarning)]


def test_device_dtype_support_follows_chip_profiles():
    from ascend_compat.cuda_shim.dtype_policy import device_dtype_support
    from ascend_compat.simulate import _state

    profiles = _state.chip_profiles()
    for chip, profile in profiles.items():
        support = device_dtype_support("npu", chip)
        assert support["float64"].status == "limited"
        assert ("bfloat16" in support) is (not profile["bf16"]), chip
        for entry in support.values():
            assert entry.source and entry.note
    assert device_dtype_support("cpu") == {}


def test_keep_is_the_default_and_changes_nothing(shim, sim):
    torch = sim
    assert shim.activate() == "npu"
    from ascend_compat.cuda_shim import dtype_policy

    assert dtype_policy.current_policy() == "keep" and not dtype_policy.is_installed()
    x = torch.from_numpy(np.arange(4.0))
    assert x.cuda().dtype == torch.float64
    assert torch.zeros(2, dtype=torch.float64, device="cuda").dtype == torch.float64


def test_substitute_float64_everywhere_it_lands_on_the_npu(shim, sim):
    torch = sim
    from ascend_compat.cuda_shim import dtype_policy

    shim.activate(dtype_policy="substitute")
    assert dtype_policy.is_installed()
    x = torch.from_numpy(np.arange(4.0))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            moved = x.to("cuda")  # one site, three times
        assert moved.device.type == "npu" and moved.dtype == torch.float32
        torch.testing.assert_close(moved.cpu(), x.float())
        assert x.cuda().dtype == torch.float32
        assert torch.zeros(2, dtype=torch.float64, device="cuda").dtype == torch.float32
        assert torch.tensor(np.ones(3), device="cuda").dtype == torch.float32
        assert torch.tensor([1, 2], device="cuda").dtype == torch.int64  # integers untouched
        model = torch.nn.Linear(2, 2).double().cuda()
        assert model.weight.dtype == torch.float32 and model.weight.device.type == "npu"
        assert torch.nn.Linear(2, 2).cuda().double().weight.dtype == torch.float32
        assert torch.ones(2).double().dtype == torch.float64  # on the CPU float64 is fine
    got = _policy_warnings(record)
    sites = [(w.filename, w.lineno) for w in got]
    assert len(sites) == len(set(sites)) == 6, [str(w.message) for w in got]
    assert all(w.filename == __file__ for w in got)
    rows = dtype_policy.substitutions()
    first = next(r for r in rows if r["count"] == 3)
    assert first["from"] == "float64" and first["to"] == "float32" and first["site"].startswith(__file__)


def test_substituted_parameters_stay_trainable_leaves(shim, sim):
    torch = sim
    shim.activate(dtype_policy="substitute")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = torch.tensor(np.array([1.0, 2.0]), device="cuda", requires_grad=True)  # float64 inferred from data
    assert w.dtype == torch.float32 and w.is_leaf and w.requires_grad
    (w * w).sum().backward()
    torch.testing.assert_close(w.grad.cpu(), torch.tensor([2.0, 4.0]))
    torch.optim.SGD([w], lr=0.1).step()  # an optimizer refuses non-leaf tensors


def test_warn_keeps_values_and_context_overrides(shim, sim):
    torch = sim
    from ascend_compat.cuda_shim.dtype_policy import dtype_policy

    shim.activate()
    x = torch.from_numpy(np.arange(3.0))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with dtype_policy("warn"):
            for _ in range(2):
                assert x.cuda().dtype == torch.float64
            with dtype_policy("substitute"):
                assert x.cuda().dtype == torch.float32
                with dtype_policy("keep"):
                    assert x.cuda().dtype == torch.float64
        assert x.cuda().dtype == torch.float64  # back to the activation's keep
    messages = [str(w.message) for w in _policy_warnings(record)]
    assert len(messages) == 2, messages  # one for the warn site, one for the substitute site
    assert "'warn'" in messages[0] and "'substitute'" in messages[1]


@pytest.mark.filterwarnings("ignore::ascend_compat.cuda_shim.dtype_policy.DtypePolicyWarning")
def test_env_variable_bad_names_and_cpu_fallback(shim, sim, monkeypatch):
    torch = sim
    from ascend_compat.cuda_shim import dtype_policy

    with pytest.raises(ValueError, match="dtype policy must be one of"):
        shim.activate(dtype_policy="fast")
    assert not shim.is_activated()
    monkeypatch.setenv("ASCEND_COMPAT_DTYPE_POLICY", "substitute")
    shim.activate()
    assert dtype_policy.current_policy() == "substitute"
    assert torch.from_numpy(np.ones(2)).cuda().dtype == torch.float32
    shim.deactivate()
    monkeypatch.setenv("ASCEND_COMPAT_DTYPE_POLICY", "sometimes")
    with pytest.raises(ValueError, match="ASCEND_COMPAT_DTYPE_POLICY"):
        shim.activate()
    monkeypatch.delenv("ASCEND_COMPAT_DTYPE_POLICY")
    # CPU fallback lacks no dtype: even 'substitute' patches nothing and keeps float64.
    assert shim.activate("cpu", dtype_policy="substitute") == "cpu"
    assert not dtype_policy.is_installed()
    assert torch.from_numpy(np.ones(2)).cuda().dtype == torch.float64


@pytest.mark.slow
def test_310p_substitutes_bf16_and_run_reports_it(tmp_path):
    # One interpreter (`ascend-compat run` on a simulated 310P) for the whole check: starting one costs seconds.
    script = tmp_path / "train.py"
    script.write_text(
        """
import json, torch
from ascend_compat.cuda_shim.dtype_policy import dtype_policy
with dtype_policy("keep"):
    try:
        torch.ones(2).cuda().bfloat16()
        kept = "no error"
    except RuntimeError as exc:
        kept = str(exc)
for _ in range(3):
    a = torch.ones(2).cuda().bfloat16()
m = torch.nn.Linear(2, 2).bfloat16().cuda()
z = torch.zeros(2, dtype=torch.bfloat16, device="cuda")
d = torch.ones(2, dtype=torch.float64).cuda()
print(json.dumps({"kept": kept, "dtypes": [str(t.dtype) for t in (a, m.weight, z, d)]}))
"""
    )
    env = {**_clean_env(), "ASCEND_COMPAT_SIM_CHIP": "310P"}
    proc = subprocess.run(
        [sys.executable, "-m", "ascend_compat", "run", "--simulate", "npu", "--dtype-policy", "substitute",
         "--report", str(script)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "bfloat16 is not supported" in data["kept"]
    assert data["dtypes"] == ["torch.float16", "torch.float16", "torch.float16", "torch.float32"]
    assert "dtype policy 'substitute'" in proc.stderr
    assert f"3  bfloat16 -> float16  at {script}:11" in proc.stderr
    assert f"1  float64 -> float32  at {script}:14" in proc.stderr


def test_context_without_the_shim_and_activation_inside_it(shim, sim):
    torch = sim
    from ascend_compat.cuda_shim import dtype_policy as dp

    x = torch.from_numpy(np.arange(3.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.DtypePolicyWarning)
        with dp.dtype_policy("substitute"):  # native torch_npu style code: no shim, device "npu"
            assert dp.is_installed()
            assert x.to("npu").dtype == torch.float32 and x.npu().dtype == torch.float32
            shim.activate()  # the shim's patches go under the policy's, which move on top of them
            assert x.cuda().dtype == torch.float32
        assert dp.is_installed()  # now owned by the activation: it stays until deactivate
        assert x.cuda().dtype == torch.float64  # the block's policy is over
        shim.deactivate()
    assert not dp.is_installed() and x.to("npu").dtype == torch.float64


def test_dtype_support_data_is_well_formed_and_sourced():
    import json
    from importlib import resources

    import torch

    data = json.loads(resources.files("ascend_compat.cuda_shim").joinpath("dtype_support.json").read_text("utf-8"))
    assert data["schema_version"] == 1 and data["backends"]
    for backend, dtypes in data["backends"].items():
        for name, entry in dtypes.items():
            assert isinstance(getattr(torch, name), torch.dtype), (backend, name)
            assert entry["status"] in ("limited", "unsupported"), (backend, name)
            assert entry["note"] and entry["source"], (backend, name)


def test_policy_lifetimes_follow_activations_and_blocks(shim, sim):
    torch = sim
    from ascend_compat.cuda_shim import dtype_policy as dp

    x = torch.from_numpy(np.arange(3.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.DtypePolicyWarning)
        shim.activate(dtype_policy="substitute")
        shim.activate(dtype_policy="keep")  # a nested activation's policy lasts until its own deactivate
        assert dp.current_policy() == "keep" and x.cuda().dtype == torch.float64
        shim.deactivate()
        assert dp.current_policy() == "substitute" and x.cuda().dtype == torch.float32
        shim.deactivate()
        assert dp.current_policy() == "keep" and not dp.is_installed()  # nothing stale for later activations

        with dp.dtype_policy("substitute"):
            shim.activate()
            shim.deactivate()  # the shim goes; the open block keeps substituting on its own
            assert dp.is_installed() and x.to("npu").dtype == torch.float32
        assert not dp.is_installed()
