"""Issue 16: classes of failure seen on real-world CUDA scripts under the shim (each in its own interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import run_python

SIM = {"ASCEND_COMPAT_SIMULATE": "npu"}


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _run_cli(args: list[str], env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    import os

    from tests.conftest import _clean_env

    full = _clean_env()
    full.update(env or {})
    full.pop("ASCEND_COMPAT_AUTO_ACTIVATE", None)
    cmd = [sys.executable, "-m", "ascend_compat", "run", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=timeout, cwd=os.getcwd())


# --- 1. pinning on CPU fallback ------------------------------------------------------------------------------


def test_pinning_is_a_noop_on_cpu_fallback():
    _ok(
        run_python(
            """
            import torch
            from ascend_compat import cuda_shim
            pin = torch.Tensor.pin_memory
            with cuda_shim.activated() as target:
                assert target == "cpu"
                x = torch.arange(4.0)
                assert x.pin_memory() is x and torch.equal(x, torch.arange(4.0))
                assert torch.empty(2, pin_memory=True).device.type == "cpu"
                assert torch.zeros(2, pin_memory=True, device="cuda").device.type == "cpu"
                for workers in (0, 2):
                    loader = torch.utils.data.DataLoader(torch.arange(8.0), batch_size=4, pin_memory=True,
                                                         num_workers=workers)
                    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]], workers
                    assert not loader.pin_memory
                batch = {"x": torch.ones(2), "y": [torch.zeros(1)]}
                from torch.utils.data._utils.pin_memory import pin_memory as pin_batch
                assert pin_batch(batch)["x"] is batch["x"]
            assert torch.Tensor.pin_memory is pin
            print("OK")
            """
        )
    )


# --- 2 and 3. CUDA and torch.accelerator gates on CPU fallback ---------------------------------------------------

GATED_SPAWN = '''
import os, sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world_size, out):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:" + sys.argv[2], rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    t = torch.ones(2, device="cuda") * (rank + 1)
    dist.all_reduce(t)
    with open(os.path.join(out, f"rank{rank}"), "w") as f:
        f.write(f"{t.tolist()} {t.device.type}")
    dist.destroy_process_group()


if __name__ == "__main__":
    assert torch.cuda.is_available(), "this script needs CUDA"
    assert torch.accelerator.is_available() and torch.accelerator.device_count() >= 1
    device = torch.accelerator.current_accelerator().type
    world_size = torch.cuda.device_count()
    mp.spawn(worker, args=(world_size, sys.argv[1]), nprocs=world_size)
    print("ranks", world_size, sorted(os.listdir(sys.argv[1])), device)
'''


@pytest.mark.parametrize("simulate", [False, True])
def test_cuda_gated_mp_spawn_script_runs_under_run(simulate, tmp_path):
    script = tmp_path / "gated.py"
    script.write_text(GATED_SPAWN)
    out = tmp_path / "out"
    out.mkdir()
    port = str(29600 + (7 if simulate else 3))
    args = (["--simulate", "npu"] if simulate else []) + [str(script), str(out), port]
    proc = _run_cli(args, env={"ASCEND_COMPAT_SIM_DEVICES": "2"} if simulate else None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if simulate:
        # The script sees CUDA's accelerator answer; its tensors live on the npu.
        assert "ranks 2 ['rank0', 'rank1'] cuda" in proc.stdout
        assert (out / "rank1").read_text() == "[3.0, 3.0] npu"
    else:
        assert "ranks 1 ['rank0'] cpu" in proc.stdout  # one process, not zero
        assert (out / "rank0").read_text() == "[1.0, 1.0] cpu"


def test_accelerator_gates_see_the_target_and_torch_internals_keep_working():
    out = _ok(
        run_python(
            """
            import torch
            from ascend_compat import cuda_shim
            native = (torch.accelerator.is_available, torch.accelerator.device_count)
            with cuda_shim.activated():
                assert torch.cuda.is_available() and torch.cuda.device_count() == 1
                assert torch.accelerator.is_available() and torch.accelerator.device_count() == 1
                assert torch.accelerator.current_accelerator().type == "cpu"
                assert torch.accelerator.current_device_index() == 0
                torch.accelerator.set_device_index(0)
                torch.accelerator.synchronize()
                with torch.accelerator.device_index(0):
                    pass
                device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "x"
                assert torch.zeros(1, device=device).device.type == "cpu"
                # torch's own code (dynamo's stream tracking, the DataLoader) still sees no accelerator
                f = torch.compile(lambda x: x * 2 + torch.ones(2, device="cuda"), backend="eager")
                assert f(torch.ones(2)).tolist() == [3.0, 3.0]
            assert (torch.accelerator.is_available, torch.accelerator.device_count) == native
            assert not torch.accelerator.is_available()
            print("OK")
            """
        )
    )
    assert "OK" in out


def test_accelerator_on_the_simulated_npu_looks_like_cuda_to_the_script(tmp_path):
    """PyTorch's ImageNet example moves the model only under ``device.type == 'cuda'`` (device from
    ``torch.accelerator.current_accelerator()``): the script sees CUDA's answer, which every patched entry point maps
    to the npu; torch's own code (and installed libraries) keep the native device."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """
        import torch
        assert torch.accelerator.is_available() and torch.accelerator.device_count() == 2
        device = torch.accelerator.current_accelerator()
        assert device.type == "cuda", device
        model = torch.nn.Linear(4, 2)
        if device.type == "cuda":
            torch.cuda.set_device(1)
            model.cuda(device)
        x = torch.randn(3, 4).to(device, non_blocking=True)
        total = torch.tensor([1.0, 2.0], device=device)
        assert model(x).device == torch.device("npu", 1) and total.device.type == "npu"
        import torch.utils.data.dataloader as internals  # torch's own callers get the native answer
        native = eval("torch.accelerator.current_accelerator()", vars(internals))
        assert native.type == "npu", native
        print("OK", x.device)
        """
    ))
    out = _ok(_run_cli([str(script)], env={**SIM, "ASCEND_COMPAT_SIM_DEVICES": "2"}))
    assert "OK npu:1" in out


def test_availability_false_keeps_cpu_fallback_closed():
    out = _ok(
        run_python(
            """
            import torch, ascend_compat
            ascend_compat.activate()
            print(torch.cuda.is_available(), torch.cuda.device_count(), torch.accelerator.is_available())
            """,
            env={"ASCEND_COMPAT_CUDA_AVAILABLE": "false"},
        )
    )
    assert out.split() == ["False", "0", "False"]


# --- 4. legacy CUDA tensor types as the default type -------------------------------------------------------------


@pytest.mark.parametrize("simulate", [False, True])
def test_set_default_tensor_type_with_legacy_cuda_types(simulate):
    out = _ok(
        run_python(
            """
            import warnings, torch
            from ascend_compat import cuda_shim
            warnings.simplefilter("ignore")
            with cuda_shim.activated() as target:
                torch.set_default_tensor_type(torch.cuda.HalfTensor)
                x = torch.empty(2)
                assert torch.get_default_dtype() == torch.float16 and x.dtype == torch.float16
                assert x.device.type == target and torch.tensor([1.5]).dtype == torch.float16
                torch.set_default_tensor_type("torch.cuda.DoubleTensor")
                assert torch.ones(1).dtype == torch.float64 and torch.ones(1).device.type == target
                torch.set_default_tensor_type(torch.cuda.HalfTensor)
                # The legacy constructor follows the default type onto the target (Llama via fairscale).
                for legacy in (torch.Tensor(2, 3), torch.Tensor(torch.Size([2])), torch.Tensor([[1, 2]]),
                               torch.Tensor(), torch.nn.Parameter(torch.Tensor(4, 4))):
                    assert legacy.device.type == target and legacy.dtype == torch.float16, legacy
                torch.set_default_tensor_type(torch.cuda.FloatTensor)
                assert torch.get_default_dtype() == torch.float32
                try:
                    torch.set_default_tensor_type(torch.cuda.LongTensor)
                except TypeError as e:
                    assert "only floating-point types are supported as the default type" in str(e)
                else:
                    raise AssertionError("integer default type accepted")
                torch.set_default_tensor_type(torch.DoubleTensor)  # back to a CPU type: the device resets too
                assert torch.ones(1).dtype == torch.float64 and torch.ones(1).device.type == "cpu"
                torch.set_default_tensor_type(torch.FloatTensor)
                assert torch.Tensor(2).device.type == "cpu"
            assert "__new__" not in torch.Tensor.__dict__  # deactivate removed the constructor hook
            print("OK", target)
            """,
            env=SIM if simulate else None,
        )
    )
    assert ("OK npu" if simulate else "OK cpu") in out


# --- 5. TorchScript, torch.fx, inspect, torch.compile, and every torch submodule under the shim -------------------

FACTORY_FUNCTIONS = '''
import torch


def f_zeros(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(3) + torch.ones(3) + torch.empty(3).fill_(1) + torch.full([3], 2.0) + x


def f_random(x: torch.Tensor) -> torch.Tensor:
    return torch.rand(3) * 0 + torch.randn(3) * 0 + torch.randint(0, 1, [3]) + torch.randperm(3).sort()[0] + x


def f_ranges(x: torch.Tensor) -> torch.Tensor:
    return torch.arange(3) + torch.linspace(0, 2, 3) + torch.logspace(0, 0, 3) + x


def f_range(x: torch.Tensor) -> torch.Tensor:
    return torch.range(0, 2) + x


def f_eye(x: torch.Tensor) -> torch.Tensor:
    return torch.eye(3).sum(0) + torch.tril_indices(3, 3)[0][:3] * 0 + torch.triu_indices(3, 3)[0][:3] * 0 + x


def f_tensors(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor([1.0, 2.0, 3.0]) + torch.as_tensor([1.0, 2.0, 3.0]) + torch.scalar_tensor(1.0) + x


def f_like(x: torch.Tensor) -> torch.Tensor:
    a = torch.zeros_like(x) + torch.ones_like(x) + torch.empty_like(x).fill_(0) + torch.full_like(x, 2.0)
    return a + torch.rand_like(x) * 0 + torch.randn_like(x) * 0 + torch.randint_like(x, 0, 1)


def f_strided(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided([3], [1]).fill_(0) + torch.normal(torch.zeros(3), torch.ones(3)) * 0 + x


def f_new(x: torch.Tensor) -> torch.Tensor:
    return x.new_zeros([3]) + x.new_ones([3]) + x.new_empty([3]).fill_(0) + x.new_full([3], 1.0)


def f_new_tensor(x: torch.Tensor) -> torch.Tensor:
    return x.new_tensor([1.0, 1.0, 1.0]) + x.new_empty_strided([3], [1]).fill_(0)


def f_asarray(x: torch.Tensor) -> torch.Tensor:
    return torch.asarray(x) + x


def f_move(x: torch.Tensor, d: torch.device) -> torch.Tensor:
    return x.to(d) + torch.zeros(3, device=d)
'''

BATTERY = """
import json, sys, warnings, torch, torch.fx
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import ascend_compat
if sys.argv[2] == "shim":
    ascend_compat.activate()
import factories
from ascend_compat.cuda_shim.patches import FACTORIES, TENSOR_NEW
src = open(factories.__file__).read()
missing = [n for n in FACTORIES if f"torch.{n}(" not in src] + [n for n in TENSOR_NEW if f".{n}(" not in src]
assert not missing, missing
x, out = torch.ones(3), {}
for name, fn in sorted(vars(factories).items()):
    if not name.startswith("f_"):
        continue
    args = (x, torch.device("cpu")) if name == "f_move" else (x,)
    for how in ("jit", "fx", "compile"):
        try:
            if how == "jit":
                g = torch.jit.script(fn)
            elif how == "fx":
                g = torch.fx.symbolic_trace(fn) if name != "f_move" else torch.fx.symbolic_trace(fn, {"d": args[1]})
            else:
                g = torch.compile(fn, backend="eager")
            g(*args)
            out[f"{name}:{how}"] = "ok"
        except Exception as e:
            out[f"{name}:{how}"] = f"{type(e).__name__}: {e}"[:300]
print(json.dumps(out))
"""


def test_torchscript_fx_and_compile_of_every_wrapped_factory_behave_as_without_the_shim(tmp_path):
    (tmp_path / "factories.py").write_text(FACTORY_FUNCTIONS)
    (tmp_path / "battery.py").write_text(textwrap.dedent(BATTERY))

    def outcomes(mode: str, env: dict[str, str] | None = None) -> dict[str, str]:
        code = (
            f"import runpy, sys; sys.argv = ['battery', {str(tmp_path)!r}, {mode!r}]; "
            f"runpy.run_path({str(tmp_path / 'battery.py')!r}, run_name='__main__')"
        )
        proc = run_python(code, env=env)
        return dict(json.loads(_ok(proc).strip().splitlines()[-1]))

    native = outcomes("plain")
    assert native["f_tensors:jit"] == "ok" and native["f_zeros:fx"] == "ok", native
    for env in (None, SIM):
        shimmed = outcomes("shim", env)
        broken = {k: v for k, v in shimmed.items() if native[k] == "ok" and v != "ok"}
        assert not broken, (env, broken)


def test_every_public_torch_submodule_imports_and_inspect_works_under_the_shim():
    out = _ok(
        run_python(
            """
            import importlib, inspect, io, json, contextlib, pkgutil, warnings, torch
            import ascend_compat
            originals = {"load": inspect.signature(torch.load), "to": inspect.signature(torch.nn.Module.to),
                         "ipg": inspect.signature(torch.distributed.init_process_group)}
            ascend_compat.activate()
            warnings.simplefilter("ignore")
            names = sorted(m.name for m in pkgutil.walk_packages(torch.__path__, "torch.", onerror=lambda n: None)
                           if not any(p.startswith("_") or p in ("testing", "test") for p in m.name.split(".")))
            failed = {}
            for name in names:
                try:
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        importlib.import_module(name)
                except ModuleNotFoundError as e:  # an optional third-party dependency (tensorboard, ...)
                    if e.name and e.name.split(".")[0] == "torch":
                        failed[name] = repr(e)
                except BaseException as e:
                    failed[name] = f"{type(e).__name__}: {e}"[:300]
            assert not failed, failed
            assert len(names) > 300, len(names)
            import torch.distributed.optim  # TorchScript compiled functions calling torch.tensor at import
            assert inspect.signature(torch.load) == originals["load"]
            assert inspect.signature(torch.nn.Module.to) == originals["to"]
            assert inspect.signature(torch.distributed.init_process_group) == originals["ipg"]
            assert "def load" in inspect.getsource(torch.load) and "def to" in inspect.getsource(torch.nn.Module.to)
            assert "map_device" in inspect.getsource(torch.cuda.get_device_properties)
            print("OK", len(names))
            """,
            timeout=600,
        )
    )
    assert "OK" in out


PLAIN_SCRIPT = '''
import inspect, sys
import torch
import torch.distributed.optim  # noqa: F401
import torch.fx
from torch.utils.data import DataLoader


@torch.jit.script
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * torch.tensor(2.0) + torch.zeros_like(x)


def body(x):
    return torch.relu(x) + torch.ones_like(x)


traced = torch.fx.symbolic_trace(body)
model = torch.nn.Linear(3, 2)
loader = DataLoader(torch.arange(6.0).reshape(2, 3), batch_size=1)
total = sum(float(model(b).sum() * 0) + float(scale(b).sum()) + float(traced(b).sum()) for b in loader)
assert "def body" in inspect.getsource(body)
print("total", total, "load params", list(inspect.signature(torch.load).parameters)[:2])
'''


@pytest.mark.parametrize("simulate", [False, True])
def test_a_script_that_passes_without_the_shim_passes_with_it(simulate, tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    native = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert native.returncode == 0, native.stderr
    shimmed = _run_cli((["--simulate", "npu"] if simulate else []) + [str(script)])
    assert shimmed.returncode == 0, shimmed.stdout + shimmed.stderr
    assert shimmed.stdout == native.stdout


# --- 6. device properties with every CUDA field ------------------------------------------------------------------


@pytest.mark.parametrize("simulate", [False, True])
def test_device_properties_have_every_cuda_field(simulate):
    out = _ok(
        run_python(
            """
            import torch
            from ascend_compat import cuda_shim
            from ascend_compat.cuda_shim.properties import CUDA_FIELDS
            stub = set(getattr(torch._C, "_CudaDeviceProperties", type("x", (), {})).__dict__)
            with cuda_shim.activated() as target:
                p = torch.cuda.get_device_properties(0)
                q = torch.cuda.get_device_properties("cuda:0")
                missing = [f for f in CUDA_FIELDS if not hasattr(p, f)]
                assert not missing, missing
                assert not [f for f in stub if not f.startswith("_") and not hasattr(p, f)]
                assert (p.major, p.minor) == (8, 0) and p.gcnArchName == "" and p.warp_size == 32
                assert p.max_threads_per_multi_processor // p.warp_size > 0 and p.regs_per_multiprocessor > 0
                assert isinstance(p.uuid, str) and p.uuid == q.uuid and p.name == torch.cuda.get_device_name(0)
                assert p.total_memory > 0 and p.L2_cache_size > 0 and p.multi_processor_count >= 1
                assert "warp_size" in p.placeholders and "name" not in p.placeholders
                if target == "npu":
                    assert p.multi_processor_count == p.cube_core_num == 20 and p.L2_cache_size == 192 << 20
                    assert "L2_cache_size" not in p.placeholders
                blocks = p.max_threads_per_multi_processor // 256 * p.multi_processor_count  # replace_random's use
                assert blocks > 0
                assert repr(p).startswith("_CudaDeviceProperties(name=")
            print("OK", target)
            """,
            env=SIM if simulate else None,
        )
    )
    assert ("OK npu" if simulate else "OK cpu") in out


def test_cuda_api_json_says_how_properties_map():
    from ascend_compat.cuda_shim.patches import cuda_api_table

    note = cuda_api_table()["get_device_properties"]["note"]
    assert "AI-core" in note and "multi_processor_count" in note and "placeholder" in note


# --- 7. CUDA's signatures for every redirected torch.cuda name ---------------------------------------------------

SIGNATURES = """
import inspect, json, torch
from importlib import resources
from ascend_compat import cuda_shim

data = json.loads(resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_text())
names = [n for n, e in data["names"].items() if e["kind"] in ("direct", "adapted", "noop")]
before = {n: getattr(torch.cuda, n) for n in names}
before.update({f"nvtx.{n}": getattr(torch.cuda.nvtx, n) for n in data["submodules"]["nvtx"]})


def shape(fn):
    params = inspect.signature(fn).parameters.values()
    # A default device ("cuda") reads as the target's own default device ("cpu", "npu").
    return [(p.name, p.kind.name, "a device" if p.name == "device" and isinstance(p.default, str) else p.default)
            for p in params]  # fmt: skip


def compatible(cuda, mine):
    # Every call valid against CUDA's signature is valid against ours (classes: Event(..., external=...)).
    ours = inspect.signature(mine).parameters
    kinds = {p.kind for p in ours.values()}
    for i, p in enumerate(inspect.signature(cuda).parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            assert p.kind in kinds, (cuda, p)
            continue
        assert p.name in ours or inspect.Parameter.VAR_KEYWORD in kinds, (cuda, p.name)
        if p.default is p.empty:
            continue
        assert p.name not in ours or ours[p.name].default is not p.empty or p.name == "self", (cuda, p.name)


with cuda_shim.activated() as target:
    checked, skipped = 0, []
    for key, cuda in before.items():
        mine = getattr(torch.cuda.nvtx, key[5:]) if key.startswith("nvtx.") else getattr(torch.cuda, key)
        if not callable(cuda):  # plain values (has_magma, default_generators)
            continue
        try:
            theirs = shape(cuda)
        except (ValueError, TypeError):  # no signature to compare (the legacy tensor types are C types)
            skipped.append(key)
            continue
        if isinstance(cuda, type):
            compatible(cuda, mine)
        else:
            assert shape(mine) == theirs, (key, shape(mine), theirs)
        checked += 1
    s = torch.cuda.Stream()
    with torch.cuda.stream(stream=s):
        pass
    with torch.cuda.stream(s):
        pass
    torch.cuda.set_rng_state_all(new_states=torch.cuda.get_rng_state_all())
    torch.cuda.set_rng_state(new_state=torch.cuda.get_rng_state(device="cuda"))
    torch.cuda.Event(enable_timing=True, external=False)
    assert torch.cuda.memory_snapshot(include_traces=False) == []
    torch.cuda.synchronize(device=0)
    torch.cuda.manual_seed(seed=1)
    assert torch.cuda.get_device_capability(device=0) == (8, 0)
    try:
        torch.cuda.stream(bogus=s)
    except TypeError:
        pass
    else:
        raise AssertionError("a call CUDA refuses was accepted")
    assert sorted(skipped) == sorted(n for n in before if n.endswith("Tensor")), skipped
print("OK", target, checked)
"""


@pytest.mark.parametrize("simulate", [False, True])
def test_every_redirected_torch_cuda_name_has_cudas_signature(simulate):
    out = _ok(run_python(SIGNATURES, env=SIM if simulate else None))
    assert ("OK npu" if simulate else "OK cpu") in out


def test_cpu_fallback_counts_one_device_per_torchrun_worker():
    # "Unable to locate sufficient 2 gpus" gates (pytorch/examples' FSDP2, tensor parallel) run under torchrun
    # with 2 workers: each rank addresses the one CPU as its own device.
    proc = run_python(
        """
        import ascend_compat, torch
        ascend_compat.activate()
        torch.cuda.set_device(1)
        print(torch.cuda.device_count(), torch.accelerator.device_count())
        """,
        env={"LOCAL_WORLD_SIZE": "2"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "2"]


@pytest.mark.parametrize("simulate", [False, True], ids=["cpu fallback", "simulated npu"])
def test_the_deepspeed_launchers_local_size_counts_devices_as_torchrun_does(simulate):
    # The deepspeed launcher sets LOCAL_SIZE, not LOCAL_WORLD_SIZE: rank 1 of `deepspeed --num_gpus 2` failed with
    # "Invalid NPU device ordinal 1: the simulated NPU has 1 device(s)".
    proc = run_python(
        """
        import ascend_compat, torch
        ascend_compat.activate()
        torch.cuda.set_device(1)
        print(torch.cuda.device_count(), torch.zeros(1, device="cuda:1").device.type)
        """,
        env={"LOCAL_SIZE": "2", **(SIM if simulate else {})},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "npu" if simulate else "cpu"]


def test_auto_activation_then_explicit_activate_nests(tmp_path):
    # With ASCEND_COMPAT_AUTO_ACTIVATE=1 exported, `ascend-compat run` (and any explicit activate()) imports torch,
    # which activates first; the explicit call must nest, not detect its own patched torch.cuda as real CUDA. The
    # visible failure was mp.spawn children of `ascend-compat run` starting unshimmed.
    script = tmp_path / "spawn.py"
    script.write_text(
        "import sys, torch, torch.multiprocessing as mp\n"
        "def main(rank):\n"
        "    torch.cuda.set_device(rank)\n"
        "    print('child', rank, 'ascend_compat' in sys.modules, flush=True)\n"
        "if __name__ == '__main__':\n"
        "    mp.spawn(main, nprocs=torch.cuda.device_count())\n"
    )
    env = {"ASCEND_COMPAT_AUTO_ACTIVATE": "1"}
    proc = run_python("import ascend_compat; print(ascend_compat.activate())", env=env)
    assert proc.stdout.split() == ["cpu"], proc.stderr
    run = subprocess.run(
        [sys.executable, "-m", "ascend_compat", "run", str(script)],
        capture_output=True, text=True, timeout=300, env={**__import__("os").environ, **env},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "child 0 True" in run.stdout


def test_dynamo_imports_after_activation():
    """torch._dynamo checks the signature of what its Tensor.__new__ polyfill replaces (FSDP2 imports it late):
    the shim's constructor hook must pass that check."""
    out = _ok(
        run_python(
            """
            import ascend_compat, torch
            ascend_compat.activate()
            import torch._dynamo
            print("OK", "__new__" in torch.Tensor.__dict__)
            """
        )
    )
    assert "OK True" in out


def test_torch_compile_on_cpu_fallback_keeps_torch_internals_on_the_cpu(tmp_path):
    """torch.cuda.is_available() opens a script's gate on CPU fallback, but torch's own probes (dynamo's CUDA
    interface, Inductor's has_triton) keep torch's answer: with Triton installed they would otherwise pick the
    CUDA driver for CPU tensors ("libcuda.so cannot found")."""
    script = tmp_path / "compiled.py"
    script.write_text(
        "import torch\n"
        "assert torch.cuda.is_available()\n"
        "m = torch.compile(torch.nn.Linear(4, 4).cuda())\n"
        "print('OK', m(torch.randn(2, 4, device='cuda')).shape)\n"
    )
    out = _ok(_run_cli([str(script)]))
    assert "OK torch.Size([2, 4])" in out
