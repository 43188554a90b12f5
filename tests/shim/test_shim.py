"""The runtime shim on CPU fallback and on the simulated NPU (each in its own interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_python

SNAPSHOT = """
import torch, torch.nn as nn, torch.distributed as dist, copyreg
from ascend_compat import cuda_shim
from ascend_compat.cuda_shim import _LEDGER

def snapshot():
    return {
        "device": torch.device, "zeros": torch.zeros, "load": torch.load, "to": torch.Tensor.__dict__.get("to"),
        "cuda": torch.Tensor.__dict__.get("cuda"), "is_cuda": torch.Tensor.__dict__.get("is_cuda"),
        "mto": nn.Module.__dict__["to"], "mcuda": nn.Module.__dict__["cuda"],
        "avail": torch.cuda.is_available, "count": torch.cuda.device_count,
        "autocast": torch.amp.autocast_mode.autocast.__dict__["__init__"],
        "ipg": dist.init_process_group, "reduce": copyreg.dispatch_table.get(torch.device),
    }
"""


def _ok(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_rollback_identity_and_fault_injection_at_every_patch_point():
    out = _ok(
        run_python(
            SNAPSHOT
            + """
before = snapshot()
assert cuda_shim.activate() == "cpu"
n = len(_LEDGER)
assert n > 40, n
assert torch.zeros is not before["zeros"]
cuda_shim.deactivate()
after = snapshot()
assert all(after[k] is before[k] for k in before), [k for k in before if after[k] is not before[k]]
import inspect
from ascend_compat.cuda_shim.ledger import Ledger
assert "_fail_at" not in inspect.signature(cuda_shim.activate).parameters  # no test hook in the public API

class FailBeforeRecord(Ledger):  # test-only: a failure before patch point N
    def __init__(self, at):
        super().__init__()
        self.at, self.n = at, 0

    def _step(self, stage, label):
        if stage == "record":
            self.n += 1
            if self.n - 1 == self.at:
                raise RuntimeError(f"injected failure at patch {self.at} ({label})")

for k in range(n):
    cuda_shim._LEDGER = FailBeforeRecord(k)
    try:
        cuda_shim.activate()
    except RuntimeError as e:
        assert "injected failure" in str(e)
    else:
        raise AssertionError(f"no failure injected at {k}")
    now = snapshot()
    assert all(now[key] is before[key] for key in before), (k, [key for key in before if now[key] is not before[key]])
    assert not cuda_shim.is_activated() and len(cuda_shim._LEDGER) == 0
print("patch points", n)
"""
        )
    )
    assert "patch points" in out


def test_nested_activation_and_eight_thread_race():
    _ok(
        run_python(
            SNAPSHOT
            + """
import threading, random
before = snapshot()
with cuda_shim.activated():
    with cuda_shim.activated():
        assert cuda_shim.is_activated()
    assert cuda_shim.is_activated()
assert not cuda_shim.is_activated()

failures = []  # an assert inside a thread never fails the test: threads report here, the main thread asserts

def worker(seed):
    rnd = random.Random(seed)
    try:
        for i in range(40):
            cuda_shim.activate()
            if not (cuda_shim.is_activated() and torch.zeros is not before["zeros"]):
                failures.append(f"thread {seed}, cycle {i}: not activated after activate()")
            if rnd.random() < 0.5:
                torch.zeros(2, device="cuda")
            cuda_shim.deactivate()
    except BaseException as exc:
        failures.append(f"thread {seed}: {exc!r}")

threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
assert not failures, (len(failures), failures[:5])
assert not cuda_shim.is_activated()
after = snapshot()
assert all(after[k] is before[k] for k in before)
print("OK")
"""
        )
    )


def test_redirects_on_cpu_fallback(tmp_path):
    _ok(
        run_python(
            f"""
import pickle, torch
from ascend_compat import cuda_shim
from ascend_compat.cuda_shim.devices import map_device
with cuda_shim.activated() as target:
    assert target == "cpu"
    d = torch.device("cuda", 1)
    assert d == torch.device("cpu") and isinstance(d, torch.device)
    assert isinstance(torch.device("cuda:0"), torch.device)
    assert (int | torch.device) is not None
    assert pickle.loads(pickle.dumps(torch.device("cuda"))) == torch.device("cpu")
    assert torch.zeros(2, device="cuda").device.type == "cpu"
    assert torch.ones(2).cuda().is_cuda and torch.ones(2).to("cuda:0").device.type == "cpu"
    assert torch.nn.Linear(2, 2).cuda().weight.device.type == "cpu"
    assert torch.ones(1).new_zeros(3, device="cuda").device.type == "cpu"
    path = r"{tmp_path}/cuda_ckpt.pt"
    assert map_device(path) == path and map_device("cudas") == "cudas"
    torch.save({{"w": torch.ones(2)}}, path)
    assert torch.load(path, map_location="cuda:0")["w"].device.type == "cpu"
    # Issue 16: on CPU fallback the CPU is the device CUDA gates should find (policy auto).
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    assert torch.cuda.get_device_capability() == (8, 0)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = torch.nn.Linear(4, 4)(torch.randn(2, 4))
    assert y.dtype == torch.bfloat16, y.dtype
    try:
        torch.cuda.graph
        torch.cuda.graph(None)
    except Exception as e:
        assert "no equivalent on the cpu backend" in str(e)
    else:
        raise AssertionError("torch.cuda.graph did not refuse")
assert torch.device("cuda").type == "cuda"  # restored
print("OK")
"""
        )
    )


def test_redirects_on_simulated_npu():
    _ok(
        run_python(
            """
import torch
from ascend_compat import cuda_shim
with cuda_shim.activated() as target:
    assert target == "npu"
    assert torch.device("cuda") == torch.device("npu") and torch.device("cuda", 1) == torch.device("npu", 1)
    assert torch.cuda.is_available() and torch.cuda.device_count() == 2
    x = torch.randn(3, device="cuda:1")
    assert x.device == torch.device("npu", 1) and x.is_cuda
    m = torch.nn.Linear(3, 3).cuda()
    assert m.weight.device.type == "npu" and m.to(0).weight.device == torch.device("npu", 0)
    with torch.cuda.amp.autocast():
        assert (m(torch.randn(2, 3).cuda())).dtype == torch.float16
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() > 0
    assert torch.cuda.get_device_name() == "Ascend910B3"
print("OK")
""",
            env={"ASCEND_COMPAT_SIMULATE": "npu", "ASCEND_COMPAT_SIM_DEVICES": "2"},
        )
    )


@pytest.mark.parametrize("simulate", [True, False])
def test_cuda_device_minus_one_is_a_noop_context(simulate):
    # torch.cuda.device(-1) / (None) select nothing; torch_npu's transfer_to_npu tests check the same.
    env = {"ASCEND_COMPAT_SIMULATE": "npu", "ASCEND_COMPAT_SIM_DEVICES": "2"} if simulate else {}
    _ok(
        run_python(
            """
import torch
from ascend_compat import cuda_shim
with cuda_shim.activated() as target:
    torch.cuda.set_device(1 if target == "npu" else 0)
    before = torch.cuda.current_device()
    for arg in (-1, -2, None):
        with torch.cuda.device(arg):
            assert torch.cuda.current_device() == before
            x = torch.ones(1, device="cuda")
        assert torch.cuda.current_device() == before
    print("OK", target, x.device)
""",
            env=env,
        )
    )


def test_no_patch_env_makes_activation_a_noop():
    _ok(
        run_python(
            """
import torch
from ascend_compat import cuda_shim
z = torch.zeros
assert cuda_shim.activate() is None and torch.zeros is z and not cuda_shim.is_activated()
cuda_shim.deactivate()
print("OK")
""",
            env={"ASCEND_COMPAT_NO_PATCH": "1"},
        )
    )


@pytest.mark.parametrize("simulate", [False, True])
def test_auto_activate_waits_for_torch_then_loads_the_adapter(simulate):
    out = _ok(
        run_python(
            """
import sys
import ascend_compat
assert "torch" not in sys.modules, "auto-activation must not import torch by itself"
import torch
assert ascend_compat.is_activated()
assert torch.__spec__.loader.__class__.__name__ != "_CallbackLoader"  # the real loader is put back
dev = torch.zeros(1, device="cuda").device.type
print("DEVICE", dev, "torch_npu loaded:", "torch_npu" in sys.modules)
""",
            env={"ASCEND_COMPAT_AUTO_ACTIVATE": "1", **({"ASCEND_COMPAT_SIMULATE": "npu"} if simulate else {})},
        )
    )
    assert ("DEVICE npu torch_npu loaded: True" if simulate else "DEVICE cpu torch_npu loaded: False") in out


def test_when_imported_runs_after_import_and_at_once_when_already_imported():
    _ok(
        run_python(
            """
import sys
from ascend_compat._import_hooks import when_imported, pending
seen = []
when_imported("sys", lambda m: seen.append(("sys", m is sys)))
assert seen == [("sys", True)]  # already imported: called at once
when_imported("colorsys", lambda m: seen.append(("colorsys", hasattr(m, "rgb_to_hsv"))))
assert pending() == {"colorsys": 1}
import colorsys
assert ("colorsys", True) in seen and pending() == {}
when_imported("colorsys", lambda m: seen.append("again"))
assert seen[-1] == "again"
print("OK")
"""
        )
    )


@pytest.mark.parametrize("simulate", [True, False])
def test_example_cuda_script_runs_unchanged(simulate):
    cmd = [sys.executable, "-m", "ascend_compat", "run", "--report"]
    if simulate:
        cmd += ["--simulate", "npu"]
    proc = subprocess.run([*cmd, str(ROOT / "examples" / "train_cuda.py")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = "npu:0" if simulate else "cpu"
    assert f"device: {expected}" in proc.stdout
    assert f"checkpoint reloaded on {expected}" in proc.stdout
    assert "ascend-compat report: CUDA calls redirected to" in proc.stderr
    assert "Tensor.cuda" in proc.stderr and "autocast" in proc.stderr


@pytest.mark.parametrize("simulate", [False, True])
def test_generator_default_device_dataloader_mesh_compile_and_jit(simulate, tmp_path):
    jit_src = tmp_path / "jmod.py"
    jit_src.write_text(
        "import torch\n\ndef move(x: torch.Tensor, d: torch.device) -> torch.Tensor:\n    return x.to(d)\n"
    )
    out = _ok(
        run_python(
            f"""
            import importlib.util, torch, torch.distributed as dist
            from ascend_compat import cuda_shim
            target = cuda_shim.activate()
            want = "npu" if target == "npu" else "cpu"
            g = torch.Generator(device="cuda")
            assert isinstance(g, torch.Generator) and g.device.type == want
            assert torch.rand(2, device="cuda", generator=g).device.type == want
            torch.set_default_device("cuda")
            assert torch.empty(1).device.type == want and torch.zeros(2).device.type == want
            torch.set_default_device("cpu")
            loader = torch.utils.data.DataLoader(list(range(4)), batch_size=2, pin_memory=True,
                                                 pin_memory_device="cuda")
            assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
            assert dist.get_backend() == ("hccl" if target == "npu" else "gloo")
            from torch.distributed.device_mesh import init_device_mesh
            mesh = init_device_mesh("cuda", (1,))
            assert mesh.device_type == want
            dist.destroy_process_group()
            compiled = torch.compile(lambda x: x.to(torch.device("cuda")) * 2, backend="eager")
            assert compiled(torch.ones(2)).device.type == want
            spec = importlib.util.spec_from_file_location("jmod", r"{jit_src}")
            mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
            scripted = torch.jit.script(mod.move)
            assert scripted(torch.ones(1), torch.device("cuda")).device.type == want
            cuda_shim.deactivate()
            assert torch.Generator is torch._C.Generator
            print("OK", target)
            """,
            env={"ASCEND_COMPAT_SIMULATE": "npu"} if simulate else None,
        )
    )
    assert ("OK npu" if simulate else "OK cpu") in out


def test_debug_log_level_logs_translations():
    proc = run_python(
        """
        import torch, ascend_compat
        ascend_compat.activate()
        torch.zeros(1, device="cuda")
        """,
        env={"ASCEND_COMPAT_LOG_LEVEL": "DEBUG"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "redirected torch.zeros(device=cuda) to cpu" in proc.stderr


def test_flags_env_policy_and_properties():
    out = _ok(
        run_python(
            """
            import os, warnings, torch
            from ascend_compat import cuda_shim
            with cuda_shim.activated():
                torch.backends.cudnn.benchmark = True
                torch.backends.cudnn.deterministic = True
                torch.backends.cuda.matmul.allow_tf32 = True
                torch.backends.cudnn.allow_tf32 = False
                assert torch.backends.cudnn.benchmark and torch.backends.cudnn.deterministic
                assert torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
                assert os.environ["ASCEND_RT_VISIBLE_DEVICES"] == "1,0"
                assert torch.cuda.is_available() is False  # policy forced off
                props = torch.cuda.get_device_properties(0)
                assert (props.major, props.minor) == (9, 0) and props.multi_processor_count == 8
                assert props.name == "Ascend310P3"
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        y = torch.nn.Linear(4, 4).cuda()(torch.randn(2, 4).cuda())
                assert y.dtype == torch.float16, y.dtype
                assert any("bfloat16 autocast requested" in str(m.message) for m in w)
                m = torch.nn.Linear(2, 2, device="meta").to_empty(device="cuda")
                assert m.weight.device.type == "npu"
            assert "ASCEND_RT_VISIBLE_DEVICES" not in os.environ
            print("OK")
            """,
            env={
                "ASCEND_COMPAT_SIMULATE": "npu",
                "ASCEND_COMPAT_SIM_CHIP": "310P",
                "ASCEND_COMPAT_SIM_DEVICES": "2",
                "CUDA_VISIBLE_DEVICES": "1,0",
                "ASCEND_COMPAT_CUDA_AVAILABLE": "false",
                "ASCEND_COMPAT_CUDA_CAPABILITY": "9.0",
            },
        )
    )
    assert "OK" in out


def test_availability_policy_true_on_cpu_and_run_backend_override(tmp_path):
    out = _ok(run_python("import torch, ascend_compat\nascend_compat.activate()\nprint(torch.cuda.is_available())",
                         env={"ASCEND_COMPAT_CUDA_AVAILABLE": "true"}))  # fmt: skip
    assert out.strip() == "True"
    script = tmp_path / "where.py"
    script.write_text("import torch\nprint('on', torch.zeros(1, device='cuda').device.type)\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ascend_compat", "run", "--simulate", "npu", "--backend", "cpu", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "on cpu" in proc.stdout  # --backend overrides detection of the (simulated) NPU
