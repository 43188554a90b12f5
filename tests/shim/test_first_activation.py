"""Issue 15: the first activation in a fresh process imports only what it needs and builds only what it needs.

- activation imports no more than the modules listed here (a new eager import fails this test: make it lazy, or
  add it here with a reason);
- the torch.cuda names torch's own code calls are replaced at once (``cuda_functions.EAGER``, read again here from
  the installed torch's sources); the other names are built on first use and behave as if built at activation;
- the natively supported backends (xpu, mps) are ruled out by asking torch, without importing their modules.
"""

from __future__ import annotations

import dis
import inspect
import json
import types

import pytest

from tests.conftest import run_python

torch = pytest.importorskip("torch")

#: Everything ``import ascend_compat; ascend_compat.activate()`` may import, torch already imported.
FIRST_ACTIVATION = {
    "ascend_compat",
    "ascend_compat._import_hooks",  # the package's finder: library patches wait for their library's import
    "ascend_compat.backends",
    "ascend_compat.backends.registry",
    "ascend_compat.cuda_shim",
    "ascend_compat.cuda_shim._cuda_table",  # the torch.cuda builders (the eager names need most of them)
    "ascend_compat.cuda_shim.core_patches",
    "ascend_compat.cuda_shim.cuda_functions",
    "ascend_compat.cuda_shim.devices",
    "ascend_compat.cuda_shim.distributed",
    "ascend_compat.cuda_shim.fallback",  # is_available's caller check on CPU, current_accelerator's on an NPU
    "ascend_compat.cuda_shim.ledger",
    "ascend_compat.cuda_shim.patches",
    "ascend_compat.ecosystem",  # the library patches as a table (ecosystem.patching loads with a library)
    "ascend_compat._atomic",  # only while a cache file is (re)written (a cold cache: a fresh clone, a new HOME)
}
#: Never on the path (issue 15): the settings module (the variables are read directly while unset), the library
#: patches' declarations, the cupy alias (loaded at `import cupy`), `_value` (FieldValue, which the ledger
#: needs, is defined in the package's __init__; `_value` re-exports it for settings and patching), and the
#: ledger's restoring half (deactivation, failures, scopes).
NEVER = {"ascend_compat.settings", "ascend_compat.ecosystem.patching", "ascend_compat._cupy_alias",
         "ascend_compat._value", "ascend_compat.cuda_shim.ledger_restore"}
#: CPU fallback adds its backend, its device module and, when a sys.path directory is not in its cache, the
#: entry-point check's scanning module (no built-in backend answered).
CPU_ONLY = {
    "ascend_compat.backends.cpu",
    "ascend_compat.backends._entry_point_cache",
    "ascend_compat.backends.cpu_device",
}
#: The simulated NPU adds its backend, the flash_attn drop-in's finder, and what ``import torch_npu`` (the adapter
#: activation loads) imports of the simulator.
NPU_ONLY = {
    "ascend_compat.backends.npu",
    "ascend_compat.ecosystem.drop_in",
    "ascend_compat.simulate.fused_ops",
    "ascend_compat.simulate.torch_npu_compat",
}

CHILD = """
import json, sys
import torch
{pre}
before = set(sys.modules)
import ascend_compat
target = ascend_compat.activate()
print(json.dumps({{"target": target, "modules": sorted(m for m in set(sys.modules) - before
                                                      if m.startswith("ascend_compat"))}}))
"""



def _child_json(template: str, where: str) -> dict:
    """Run ``template`` (with ``{pre}`` installing the simulated NPU for ``where == "npu"``) in a fresh interpreter;
    the JSON object its last line prints."""
    pre = "from ascend_compat import simulate; simulate.install()" if where == "npu" else ""
    proc = run_python(template.format(pre=pre))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])

@pytest.mark.parametrize("where", ["cpu", "npu"])
def test_first_activation_imports_only_the_listed_modules(where):
    got = _child_json(CHILD, where)
    assert got["target"] == where
    allowed = FIRST_ACTIVATION | (CPU_ONLY if where == "cpu" else NPU_ONLY)
    extra = sorted(set(got["modules"]) - allowed)
    assert not extra, f"activate() now also imports {extra}: make it lazy, or list it here with a reason"
    assert "ascend_compat.cuda_shim.cuda_functions" in got["modules"]  # the child did measure an activation
    never = NEVER if where == "cpu" else NEVER & {"ascend_compat._value", "ascend_compat.cuda_shim.ledger_restore"}
    assert not never & set(got["modules"]), sorted(never & set(got["modules"]))


def _function_globals(path: str) -> set[str]:
    """Every name the functions (and methods, nested and decorated ones included) of a source file look up as
    module globals."""
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec")
    names: set[str] = set()
    stack = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    while stack:
        co = stack.pop()
        stack.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
        if co.co_flags & inspect.CO_NEWLOCALS:  # a function body, not a class body run at import
            names.update(i.argval for i in dis.get_instructions(co) if i.opname == "LOAD_GLOBAL")
    return names


def test_the_eager_names_are_every_replaced_name_torchs_own_code_calls():
    from ascend_compat.backends import cpu_device
    from ascend_compat.cuda_shim import _cuda_table, cuda_functions

    if ".".join(torch.__version__.split(".")[:2]) not in cuda_functions.EAGER_TORCH:
        pytest.skip("another torch release: every name is replaced at activation")
    table = cuda_functions._cuda_api_data()["names"]
    names = _cuda_table.Builder(cpu_device, table, True, (8, 0)).names()
    missing = {}
    for sub, module, keys in cuda_functions._namespaces(torch, names):
        needed = _function_globals(module.__file__) & set(keys)
        lacking = sorted(needed - set(cuda_functions.EAGER.get(sub, ())))
        if lacking:
            missing[sub or "torch.cuda"] = lacking
    assert not missing, f"add to cuda_functions.EAGER (torch's own code calls them as globals): {missing}"
    # and the list names nothing stale
    for sub, eager in cuda_functions.EAGER.items():
        keys = next(k for s, _, k in cuda_functions._namespaces(torch, names) if s == sub)
        assert set(eager) <= set(keys), sub


LAZY = """
import json, sys, threading
import torch
{pre}
from ascend_compat import backends
from ascend_compat.cuda_shim import core_patches, cuda_functions, devices, ledger

spaces = (torch.cuda, torch.cuda.memory, torch.cuda.random, torch.cuda.graphs, torch.cuda.nvtx)
before = [dict(vars(m)) for m in spaces]
backend = backends.detect().backend
backend.load()
led = ledger.Ledger()
for field, value in (("backend", backend), ("device_type", backend.device_type),
                     ("accelerator", bool(backend.accelerator)), ("real_device", torch.device)):
    led.setattr(devices.TARGET, field, value)
full = cuda_functions.cuda_functions(backend.device_module())
cuda_functions.apply(core_patches.Plan(led), torch, backend)
led.setattr(devices.TARGET, "active", True)
out = {{"records": len(led)}}
out["eager_in_place"] = all(vars(torch.cuda)[n] is not before[0][n] for n in cuda_functions.EAGER[""])
out["lazy_absent"] = [n in vars(torch.cuda) for n in ("memory_allocated", "FloatTensor", "manual_seed")]
got = []
threads = [threading.Thread(target=lambda: got.append(torch.cuda.memory_allocated)) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
out["one_object"] = len({{id(g) for g in got}}) == 1 and torch.cuda.memory_allocated is got[0]
out["shared"] = (torch.cuda.memory.memory_allocated is torch.cuda.memory_allocated,
                 torch.cuda.random.manual_seed is torch.cuda.manual_seed)
out["replaced"] = torch.cuda.memory_allocated is not before[0]["memory_allocated"]
from torch.cuda import FloatTensor
x = FloatTensor(2, 3)
out["legacy"] = [x.device.type, str(x.dtype), isinstance(x, torch.cuda.FloatTensor)]
out["dir"] = ["memory_allocated" in dir(torch.cuda), "range" in dir(torch.cuda.nvtx)]
try:
    torch.cuda.no_such_name
except AttributeError as e:
    out["missing"] = str(e)
out["same_kinds"] = sorted(n for n, v in full.items() if type(getattr(torch.cuda, n)) is not type(v))
out["torch_own"] = torch.cuda.memory.memory_summary()[:12]
with torch.cuda.nvtx.range("step"):
    pass
led.restore()
out["restored"] = [set(vars(m)) == set(b) and all(vars(m)[k] is v for k, v in b.items())
                   for m, b in zip(spaces, before)]
out["after"] = torch.cuda.memory_allocated is before[0]["memory_allocated"]
print(json.dumps(out))
"""


@pytest.mark.parametrize("where", ["cpu", "npu"])
def test_lazy_names_are_built_on_first_use_and_restored_exactly(where):
    out = _child_json(LAZY, where)
    from ascend_compat.cuda_shim.cuda_functions import EAGER_TORCH

    if ".".join(torch.__version__.split(".")[:2]) in EAGER_TORCH:
        assert out["lazy_absent"] == [False, False, False]
        assert out["records"] < 60, out["records"]  # the eager names and one record for the rest (was ~170)
    assert out["eager_in_place"] and out["replaced"] and out["one_object"]
    assert out["shared"] == [True, True]
    assert out["legacy"] == [where, "torch.float32", True]
    assert out["dir"] == [True, True]
    assert out["missing"] == "module 'torch.cuda' has no attribute 'no_such_name'"
    assert out["same_kinds"] == []
    assert out["torch_own"].strip()
    assert out["restored"] == [True] * 5 and out["after"]


def test_native_backends_are_ruled_out_without_importing_their_modules():
    from ascend_compat.backends import registry

    for name, probe in registry.NATIVE_PROBES.items():
        assert any(n == name and adapter is None for n, _, adapter in registry.BUILTIN_BACKENDS), name
        if registry.native_absent(name):  # whenever the probe rules it out, the class agrees
            assert not registry.builtin(name).installed(), (name, probe)
    proc = run_python(
        """
import sys, torch
from ascend_compat import backends
print(backends.detect().backend.name, sorted(m for m in sys.modules if m.startswith("ascend_compat.backends.")))
"""
    )
    assert proc.returncode == 0, proc.stderr
    imported = proc.stdout.split(" ", 1)[1]
    for name in registry.NATIVE_PROBES:
        if registry.native_absent(name):
            assert f"backends.{name}'" not in imported, imported


def test_an_unreadable_auto_activate_warns_and_leaves_the_shim_off():
    proc = run_python(
        """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import ascend_compat
print(ascend_compat.is_activated(), [str(w.message) for w in caught])
""",
        env={"ASCEND_COMPAT_AUTO_ACTIVATE": "maybe"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("False [") and "ASCEND_COMPAT_AUTO_ACTIVATE='maybe'" in proc.stdout


def test_startup_bench_reports_cpu_time_the_work_alone_and_the_modules():
    from ascend_compat.bench.startup import first_activation

    got = first_activation(repeats=1, split=True)
    assert got["target"] == "cpu" and got["ms"]["n"] == 1 and got["cpu_ms"]["median"] > 0
    assert set(got["modules"]) <= FIRST_ACTIVATION | CPU_ONLY
    assert got["module_count"] == len(got["modules"]) and got["bytecode_kib"] > 10
    assert 0 < got["work_ms"]["median"] and got["import_ms"] >= 0


def test_the_global_reader_sees_decorated_and_nested_functions():
    # torch.cuda.nvtx.range is a @contextmanager: its body calls range_push / range_pop as globals.
    assert {"range_push", "range_pop"} <= _function_globals(torch.cuda.nvtx.__file__)
    assert "memory_stats" in _function_globals(torch.cuda.memory.__file__)
