"""Real DeepSpeed on the simulated NPU, in fresh interpreters: accelerator, init_distributed, ZeRO 1/2, timers.

DeepSpeed picks its NPU accelerator by itself; the shim adds one library patch (``deepspeed.npu-cann-path-unset``).
Each subprocess does several checks because importing DeepSpeed takes a few seconds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, _clean_env, run_python

pytest.importorskip("deepspeed")
SIM = {"ASCEND_COMPAT_SIMULATE": "npu", "OMP_NUM_THREADS": "1"}

# Shared by the workers: ZeRO training of a 2-layer MLP; returns the losses after checking that they went down,
# that the parameters stayed on this rank's npu and that every rank holds the same parameters.
TRAIN = """
import os, socket, tempfile
import torch, torch.distributed as dist
import deepspeed
from deepspeed.accelerator import get_accelerator

def train(stage, dtype, client_optimizer=False, steps=8, breakdown=False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    config = {
        "train_micro_batch_size_per_gpu": 16,
        "zero_optimization": {"stage": stage},
        "wall_clock_breakdown": breakdown,
        "bf16": {"enabled": dtype == torch.bfloat16},
        "fp16": {"enabled": dtype == torch.float16, "initial_scale_power": 8},
    }
    device = torch.device("npu", int(os.environ["LOCAL_RANK"]))
    optimizer = None
    if client_optimizer:
        # On the device first: the simulator does not yet keep Parameter objects across Module.to("npu") as
        # torch_npu does (its _has_compatible_shallow_copy_type override), so an optimizer built on the CPU
        # model would hold stale parameters here.
        model.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    else:  # DeepSpeed's FusedAdam: on NPU it calls torch._fused_adamw_, nothing is compiled
        config["optimizer"] = {"type": "AdamW", "params": {"lr": 1e-2}}
    engine, ds_optimizer, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), optimizer=optimizer, config=config)
    assert type(ds_optimizer).__name__ == "DeepSpeedZeroOptimizer", type(ds_optimizer)
    inner = type(ds_optimizer.optimizer).__name__
    assert inner == ("AdamW" if client_optimizer else "FusedAdam"), inner
    assert engine.device == device, engine.device
    g = torch.Generator().manual_seed(100 + dist.get_rank())
    x = torch.randn(16, 8, generator=g)
    y = x.sum(dim=1, keepdim=True) / 4
    x, y = x.to(device, dtype), y.to(device, dtype)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
    flat = torch.cat([p.detach().float().flatten() for p in engine.module.parameters()])
    assert flat.device == device and all(p.dtype == dtype for p in engine.module.parameters())
    gathered = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(gathered[0], t) for t in gathered), "ranks hold different parameters"
    print(f"rank {dist.get_rank()} stage {stage} {dtype} {inner} loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses

def single_process_env():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
"""


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc.stdout


NATIVE = """
import warnings
from deepspeed.accelerator.npu_accelerator import NPU_Accelerator
acc = get_accelerator()
assert isinstance(acc, NPU_Accelerator), type(acc)
assert (acc.device_name(), acc.communication_backend_name()) == ("npu", "hccl")
assert acc.is_available() and acc.device_count() == 1 and acc.current_device_name() == "npu:0"

# torch_npu names the accelerator calls, which the simulator models.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    t = acc.IntTensor([0])
    assert acc.memory_cached() == torch.npu.memory_reserved()
    assert acc.max_memory_cached() == torch.npu.max_memory_reserved()
assert t.device == torch.device("npu", 0) and t.dtype == torch.int32 and isinstance(t, acc.IntTensor)
assert not isinstance(t.float(), acc.IntTensor) and not isinstance(t.cpu(), acc.IntTensor)
assert acc.FloatTensor(2, 3).shape == (2, 3) and acc.BFloat16Tensor().numel() == 0
assert {UserWarning, DeprecationWarning} <= {type(w.message) for w in caught}
called = []
acc.lazy_call(lambda: called.append(True))
assert called

# Upstream bug (DeepSpeed 0.19.8): with ASCEND_HOME_PATH unset, NPUOpBuilder raises KeyError. If this stops
# failing, DeepSpeed fixed it: limit deepspeed.npu-cann-path-unset to the versions before.
single_process_env()
os.environ.pop("ASCEND_HOME_PATH", None)
try:
    deepspeed.init_distributed()
except KeyError as exc:
    assert exc.args == ("ASCEND_HOME_PATH",), exc
    print("UPSTREAM-KEYERROR")
os.environ["ASCEND_HOME_PATH"] = tempfile.mkdtemp()  # as CANN's set_env.sh provides
deepspeed.init_distributed()
assert dist.is_initialized() and dist.get_backend() == "hccl" and dist.get_world_size() == 1

train(1, torch.float32, client_optimizer=True)

from deepspeed.utils.timer import SynchronizedWallClockTimer
timers = SynchronizedWallClockTimer()
timers("matmul").start()
a = torch.randn(128, 128, device="npu")
for _ in range(20):
    a = a @ a / 128
acc.synchronize()
timers("matmul").stop()
assert timers("matmul").elapsed(reset=False) > 0
assert "cache_allocated" in timers.memory_usage()
timers.log(["matmul"])
print("NATIVE-OK")
"""


@pytest.mark.slow
def test_native_accelerator_init_distributed_zero1_and_timers():
    """Without the shim: DeepSpeed's own NPU support on the simulator, and the upstream bug the patch fixes."""
    prelude = "from ascend_compat import simulate\nsimulate.install(device_count=1)\n"
    out = _ok(run_python(prelude + TRAIN + NATIVE, env={"OMP_NUM_THREADS": "1"}))
    assert "UPSTREAM-KEYERROR" in out and "NATIVE-OK" in out
    assert "time (ms) | matmul:" in out


SHIM = """
from deepspeed.accelerator.npu_accelerator import NPU_Accelerator
acc = get_accelerator()
assert isinstance(acc, NPU_Accelerator) and acc.communication_backend_name() == "hccl", type(acc)
assert patching.status()["deepspeed.npu-cann-path-unset"] == "applied"  # `import deepspeed` imported the builders
single_process_env()
deepspeed.init_distributed()  # builds an NPU op builder: KeyError without the patch
assert dist.get_backend() == "hccl"

from deepspeed.ops.op_builder.npu.builder import NPUOpBuilder
assert NPUOpBuilder.installed_cann_path(None) is None
train(2, torch.bfloat16, breakdown=True)
train(1, torch.float16)

patched = NPUOpBuilder.__dict__["installed_cann_path"]
ascend_compat.deactivate()
original = NPUOpBuilder.__dict__["installed_cann_path"]
assert original is not patched and original.__module__ == "deepspeed.ops.op_builder.npu.builder"
try:
    NPUOpBuilder.installed_cann_path(None)
except KeyError:
    print("RESTORED")
"""


@pytest.mark.slow
def test_shim_patch_zero2_half_precision_wall_clock_breakdown_and_restore():
    """With the shim: the patch lets init_distributed() and FusedAdam run without ASCEND_HOME_PATH; deactivation
    restores DeepSpeed's original method."""
    prelude = (
        "import os\nos.environ.pop('ASCEND_HOME_PATH', None)\n"
        "import ascend_compat\nascend_compat.activate()\nfrom ascend_compat.ecosystem import patching\n"
        "assert 'waiting' in patching.status()['deepspeed.npu-cann-path-unset']\n"
    )
    proc = run_python(prelude + TRAIN + SHIM, env=SIM)
    out = _ok(proc)
    assert "RESTORED" in out
    assert "stage 2 torch.bfloat16 FusedAdam" in out and "stage 1 torch.float16 FusedAdam" in out
    # wall_clock_breakdown: DeepSpeed's event timers (npu Events, stream sync) ran during the steps.
    assert "time (ms) | fwd_microstep:" in out + proc.stderr


def test_natively_handled_is_listed_for_info():
    from ascend_compat.ecosystem import deepspeed as ds_support

    notes = ds_support.natively_handled()
    assert any("NPU_Accelerator" in n for n in notes) and any("hccl" in n for n in notes)


WORKER = """
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
assert type(get_accelerator()).__name__ == "NPU_Accelerator"
get_accelerator().set_device(local)
deepspeed.init_distributed()
assert dist.get_backend() == "hccl" and dist.get_world_size() == 2

# The tensor collectives ZeRO uses, by the names torch 2.13 dispatches (all_gather_single, reduce_scatter_single, ...).
from torch.distributed.distributed_c10d import _coalescing_manager
dev = torch.device("npu", local)
out = torch.empty(4, device=dev)
dist.all_gather_into_tensor(out, torch.full((2,), float(rank), device=dev))
assert out.cpu().tolist() == [0.0, 0.0, 1.0, 1.0], out
rs = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(rs, torch.arange(4.0, device=dev) + rank)
assert rs.cpu().tolist() == [[1.0, 3.0], [5.0, 7.0]][rank], rs
a2a = torch.empty(2, device=dev)
dist.all_to_all_single(a2a, torch.tensor([rank * 10.0, rank * 10.0 + 1], device=dev))
assert a2a.cpu().tolist() == [float(rank), 10.0 + rank], a2a
outs = [torch.empty(4, device=dev) for _ in range(2)]
with _coalescing_manager(device=dev):
    for i, o in enumerate(outs):
        dist.all_gather_into_tensor(o, torch.full((2,), float(rank + i), device=dev))
assert [o.cpu().tolist() for o in outs] == [[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 2.0, 2.0]], outs

train(1, torch.float32, client_optimizer=True)
train(2, torch.float16, client_optimizer=True)
print(f"rank {rank} WORKER-OK")
"""


def _torchrun(args: list[str], ascend_home: str | None) -> subprocess.CompletedProcess[str]:
    env = {**_clean_env(), **SIM}
    env.pop("ASCEND_HOME_PATH", None)
    if ascend_home is not None:
        env["ASCEND_HOME_PATH"] = ascend_home
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *args],
        capture_output=True, text=True, timeout=300, cwd=str(ROOT), env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_torchrun_native_hccl_collectives_and_zero(tmp_path: Path):
    script = tmp_path / "worker.py"
    prelude = "from ascend_compat import simulate\nsimulate.install_from_env(default=True)\n"
    script.write_text(prelude + TRAIN + WORKER)
    cann = tmp_path / "cann"  # what CANN's set_env.sh would export: the patch is not active without the shim
    cann.mkdir()
    out = _ok(_torchrun([str(script)], ascend_home=str(cann)))
    assert "rank 0 WORKER-OK" in out and "rank 1 WORKER-OK" in out


@pytest.mark.slow
def test_torchrun_unchanged_cuda_deepspeed_example_under_the_shim():
    # ZeRO-2, bf16, FusedAdam, NCCL asked for; ASCEND_HOME_PATH unset, so the library patch is needed too.
    out = _ok(_torchrun(["-m", "ascend_compat", "run", "--simulate", "npu", "examples/deepspeed_cuda.py"], None))
    for rank in (0, 1):
        assert f"rank {rank}: DeepSpeedZeroOptimizer stage 2 bf16, backend hccl, device npu:{rank}" in out, out
