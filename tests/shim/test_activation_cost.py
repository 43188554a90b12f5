"""Issue 15: the first activation imports only what it needs, and the lazy paths keep their behaviour."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import run_python

#: What activate() may import on CPU fallback (beyond ascend_compat itself).
ALLOWED = {
    "ascend_compat._import_hooks",
    "ascend_compat.backends",
    "ascend_compat.cuda_shim",
    "ascend_compat.cuda_shim._cuda_table",
    "ascend_compat.cuda_shim.core_patches",
    "ascend_compat.backends.cpu_device",
    "ascend_compat.cuda_shim.cuda_functions",
    "ascend_compat.cuda_shim.devices",
    "ascend_compat.cuda_shim.distributed",
    "ascend_compat.cuda_shim.fallback",
    "ascend_compat.cuda_shim.ledger",
    "ascend_compat.cuda_shim.patches",
    "ascend_compat.ecosystem",
    "ascend_compat._atomic",  # only while a cache file is (re)written (a cold cache, as in a fresh clone)
}
#: Library patch implementations and the flash_attn drop-in: imported only once their library is.
LIBRARY_MODULES = (
    "ascend_compat._dist",
    "ascend_compat.ecosystem.deepspeed",
    "ascend_compat.ecosystem.flash_attn",
    "ascend_compat.ecosystem.flash_attn_provider",
    "ascend_compat.ecosystem.transformers",
    "ascend_compat.ecosystem.transformers_patch",
)
#: Records every scan of the installed distributions' metadata (entry points) in the child.
COUNT_SCANS = """
import importlib.metadata as _md
SCANS = []
def _counting(real):
    def scan(*args, **kwargs):
        SCANS.append(real.__name__)
        return real(*args, **kwargs)
    return scan
_md.entry_points = _counting(_md.entry_points)
_md.distributions = _counting(_md.distributions)
"""
HEAVY = (
    "ascend_compat.cuda_shim.dtype_policy",  # only with a dtype policy in play
    "ascend_compat.migrate",
    "ascend_compat.doctor",
    "ascend_compat.verify",
    "ascend_compat.bench",
    "ascend_compat.cli",
    "ascend_compat.info",
    "ascend_compat.ecosystem.vllm",
    "ascend_compat.ecosystem.quantization",
    "ascend_compat.ecosystem.triton",
    "ascend_compat.simulate",
)


def _imported_by_activate(env: dict[str, str] | None = None, pre: str = "") -> dict:
    proc = run_python(
        f"""
import json, sys
import torch
{pre}
before = set(sys.modules)
import ascend_compat
target = ascend_compat.activate()
new = sorted(m for m in set(sys.modules) - before if m.startswith("ascend_compat"))
print(json.dumps({{"target": target, "modules": new}}))
""",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_activation_imports_only_the_shim_on_cpu_fallback():
    got = _imported_by_activate()
    assert got["target"] == "cpu"
    mods = set(got["modules"]) - {"ascend_compat"}
    assert not [m for m in mods for h in HEAVY if m == h or m.startswith(h + ".")]
    extra = {m for m in mods if not m.startswith("ascend_compat.backends.")} - ALLOWED
    assert not extra, f"activate() now also imports {sorted(extra)}"


def _library_modules_and_scans(tmp_path, env: dict[str, str], pre: str = "", after: str = "") -> dict:
    proc = run_python(
        f"""
import json, sys
import torch
{COUNT_SCANS}
{pre}
import ascend_compat
target = ascend_compat.activate()
from ascend_compat.ecosystem import patching
state = patching.status()
{after}
mods = sorted(m for m in sys.modules if m.startswith("ascend_compat"))
print(json.dumps({{"target": target, "modules": mods, "scans": SCANS, "status": state}}))
""",
        env={"ASCEND_COMPAT_CACHE_DIR": str(tmp_path / "cache"), **env},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("where", ["cpu", "npu"])
def test_activation_imports_no_library_patch_module_and_scans_no_distribution(tmp_path, where):
    # Issue 15: library patches wait as data (their modules load with their library), and detection reads the
    # entry-point cache instead of every installed distribution's metadata, cold cache included.
    env = {"ASCEND_COMPAT_SIMULATE": "npu"} if where == "npu" else {}
    for _ in range(2):  # a cold cache, then a warm one
        got = _library_modules_and_scans(tmp_path, env)
        assert got["target"] == where
        assert not [m for m in got["modules"] if m.startswith(LIBRARY_MODULES)], got["modules"]
        assert got["scans"] == []
    waiting = "transformers." + ("cpu-flash-attention-fallback" if where == "cpu" else "npu-flash-attention-window")
    assert got["status"][waiting].startswith("waiting for `import transformers.")
    assert got["status"]["flash_attn.drop-in"].startswith("not provided" if where == "cpu" else "provided")


def test_a_library_patch_module_loads_with_its_library_and_the_drop_in_with_flash_attn(tmp_path):
    pytest.importorskip("transformers")
    got = _library_modules_and_scans(
        tmp_path,
        {"ASCEND_COMPAT_SIMULATE": "npu"},
        after="""
import transformers.integrations.npu_flash_attention
import flash_attn
assert flash_attn.__name__ == "ascend_compat.ecosystem.flash_attn", flash_attn.__name__
state = patching.status()
""",
    )
    assert got["status"]["transformers.npu-flash-attention-window"] == "applied"
    mods = set(got["modules"])
    assert {"ascend_compat.ecosystem.transformers", "ascend_compat.ecosystem.flash_attn_provider"} <= mods
    assert "ascend_compat.ecosystem.deepspeed" not in mods  # deepspeed was not imported


def test_activation_on_the_simulated_npu_imports_no_dtype_policy_nor_tools():
    got = _imported_by_activate(pre="from ascend_compat import simulate; simulate.install()")
    assert got["target"] == "npu"
    heavy = [h for h in HEAVY if h != "ascend_compat.simulate"]
    assert not [m for m in got["modules"] for h in heavy if m == h or m.startswith(h + ".")]


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_a_dtype_policy_still_loads_its_module(how):
    env = {"ASCEND_COMPAT_DTYPE_POLICY": "warn"} if how == "environment" else {}
    proc = run_python(
        f"""
import sys, torch
import ascend_compat
ascend_compat.activate({'dtype_policy="warn"' if how == "argument" else ""})
from ascend_compat.cuda_shim import dtype_policy
print(dtype_policy.current_policy())
ascend_compat.deactivate()
print(dtype_policy.current_policy())
""",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["warn", "keep"]


def test_dtype_policy_imported_after_activation_works_and_everything_is_restored():
    # Activation skipped the dtype module; a `with dtype_policy(...)` block opened later, a nested activation with
    # a policy, then the deactivations: the checks apply and every original comes back.
    proc = run_python(
        """
import sys, warnings, torch
originals = (torch.Tensor.to, torch.Tensor.cuda, torch.zeros, torch.device)
import ascend_compat
ascend_compat.activate()
assert "ascend_compat.cuda_shim.dtype_policy" not in sys.modules
from ascend_compat.cuda_shim.dtype_policy import dtype_policy, current_policy
with dtype_policy("substitute"):
    x = torch.ones(2, dtype=torch.float64).cuda()
print(x.dtype, current_policy())
ascend_compat.activate(dtype_policy="substitute")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    y = torch.ones(2, dtype=torch.float64).cuda()
print(y.dtype, current_policy())
ascend_compat.deactivate()
print(current_policy())
ascend_compat.deactivate()
print(current_policy(), (torch.Tensor.to, torch.Tensor.cuda, torch.zeros, torch.device) == originals)
""",
        env={"ASCEND_COMPAT_SIMULATE": "npu"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["torch.float32", "keep", "torch.float32", "substitute", "keep", "keep", "True"]


def test_cuda_spec_parsing_matches_the_regex_it_replaced():
    from ascend_compat.cuda_shim.devices import _NOT_CUDA, _cuda_index

    regex = re.compile(r"^cuda(?::(\d+))?$")
    for spec in ("cuda", "cuda:0", "cuda:12", "cuda\n", "cuda:1\n", "cuda\n\n", "cuda:", "cuda:a", "xcuda", "cuda:1:2",
                 "cuda:\u0663", "cuda:\u00b2", "cuda:-1", "cuda:1 ", "CUDA", "", "cuda:01", " cuda"):  # fmt: skip
        m = regex.match(spec)
        assert _cuda_index(spec) == (_NOT_CUDA if m is None else m.group(1)), repr(spec)


def test_plain_records_behave_like_the_dataclasses_they_replace():
    from ascend_compat.backends.cpu_device import _CPUProperties
    from ascend_compat.cuda_shim.ledger import PatchRecord
    from ascend_compat.ecosystem.patching import PATCHES, LibraryPatch, _load_builtin

    a, b = PatchRecord(1, "x", 2, 3, False, "x"), PatchRecord(1, "x", 2, 3, False, "x", "attr")
    assert a == b and a.kind == "attr" and repr(a).startswith("PatchRecord(owner=1, name='x'")
    b.label = "y"
    assert a != b
    p = _CPUProperties("cpu", 10, 2)
    same = _CPUProperties("cpu", 10, 2)
    assert (p.major, p.minor) == (0, 0) and p == same and hash(p) == hash(same)
    with pytest.raises(AttributeError):
        p.name = "other"
    _load_builtin()
    patch = PATCHES[0]
    fields = {f: getattr(patch, f) for f in LibraryPatch._FIELDS}
    assert LibraryPatch(**fields) == patch and hash(LibraryPatch(**fields)) == hash(patch)
    with pytest.raises(AttributeError):
        patch.name = "renamed"


def test_cuda_api_json_is_parsed_once():
    import torch

    from ascend_compat.cuda_shim import cuda_functions, patches

    patches.cuda_api_table()
    hits = patches._cuda_api_data.cache_info().hits
    patches.cuda_api_table()
    cuda_functions._namespaces(torch, [])  # the torch.cuda submodules activation patches
    assert patches._cuda_api_data.cache_info().hits == hits + 2


def test_activation_defers_what_it_does_not_need_and_it_still_works_when_used():
    # Issue 15 (first activation <= 5 ms): the built-in backends whose adapter is absent are not imported, nor is
    # torch.utils._device (the default-device machinery); a default device set afterwards still reaches the
    # factories, which the shim wraps, and everything comes back on deactivation.
    proc = run_python(
        """
import sys, torch
import ascend_compat
from ascend_compat import _import_hooks
meta_path = list(sys.meta_path)
ascend_compat.activate()
print(sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("ascend_compat.backends.")))
print("torch.utils._device" in sys.modules)
torch.set_default_device("meta")
print(torch.zeros(2).device, torch.empty(1).device, torch.arange(3).device)
torch.set_default_device(None)
with torch.device("meta"):
    print(torch.ones(2).device)
ascend_compat.deactivate()
import torch.utils._device as d
print(d._device_constructors.__module__, torch.zeros in d._device_constructors())
print(sys.meta_path == meta_path, _import_hooks.pending())
from ascend_compat import backends
print([b.name for b in backends.DETECTION_ORDER], backends.NPUBackend.adapter_module)
""",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    # _entry_point_cache only when a sys.path directory is not in its cache (test_backends checks both cases)
    assert lines[0] in ("['_entry_point_cache', 'cpu', 'cpu_device', 'registry']",
                        "['cpu', 'cpu_device', 'registry']"), lines[0]
    assert lines[1:6] == ["False", "meta meta meta", "meta", "torch.utils._device True", "True {}"], lines
    assert lines[6] == "['npu', 'mlu', 'musa', 'xpu', 'mps', 'cpu'] torch_npu", lines[6]


def test_the_builtin_backend_data_matches_the_classes():
    from ascend_compat.backends import registry

    assert [name for name, _, _ in registry.BUILTIN_BACKENDS][-1] == "cpu"
    for name, path, adapter in registry.BUILTIN_BACKENDS:
        cls = registry._import_class(path)
        assert (cls.name, cls.adapter_module) == (name, adapter), path


def test_the_trigger_table_is_the_declared_library_patches():
    # activate() registers the library patches from ecosystem.TRIGGERS without importing ecosystem.patching, where
    # each patch is declared: the two must name the same patches, modules and backends.
    from ascend_compat import ecosystem
    from ascend_compat.ecosystem import patching

    kinds = {ecosystem.only_on_npu: "npu", ecosystem.only_on_cpu_fallback: "cpu fallback"}
    declared = [(p.name, p.module, kinds.get(p.when)) for p in patching.PATCHES if not p.name.startswith("test.")]
    assert tuple(declared) == ecosystem.TRIGGERS


def test_settings_read_on_the_activation_path_name_real_variables_and_parse_as_settings_do(monkeypatch):
    import pathlib

    from ascend_compat import _setting, settings

    src = pathlib.Path(__file__).resolve().parents[2] / "src" / "ascend_compat"
    used = {m for f in src.rglob("*.py") for m in re.findall(r'_setting\("([A-Z_]+)"\)', f.read_text("utf-8"))}
    assert {"ASCEND_COMPAT_BACKEND", "ASCEND_COMPAT_CUDA_AVAILABLE", "ASCEND_COMPAT_FLASH_ATTN"} <= used
    for variable in used:
        assert settings.by_variable(variable).name == variable
        monkeypatch.delenv(variable, raising=False)
        assert _setting(variable) is None
        monkeypatch.setenv(variable, "  ")  # blank reads as unset, as Setting.get() says
        assert _setting(variable) is None
    monkeypatch.setenv("ASCEND_COMPAT_CUDA_CAPABILITY", "7.0")
    assert _setting("ASCEND_COMPAT_CUDA_CAPABILITY") == (7, 0)
    monkeypatch.setenv("ASCEND_COMPAT_FLASH_ATTN", "off")
    assert _setting("ASCEND_COMPAT_FLASH_ATTN") is False
    monkeypatch.setenv("ASCEND_COMPAT_CUDA_AVAILABLE", "perhaps")
    with pytest.raises(settings.SettingError, match="ASCEND_COMPAT_CUDA_AVAILABLE"):
        _setting("ASCEND_COMPAT_CUDA_AVAILABLE")


CACHE_ENVS = [{}, {"XDG_CACHE_HOME": "/x/cache"}, {"ASCEND_COMPAT_CACHE_DIR": "/y", "XDG_CACHE_HOME": "/x"}]


@pytest.mark.parametrize("env", CACHE_ENVS)
def test_the_entry_point_cache_lives_in_the_settings_cache_root(monkeypatch, env):
    import os

    from ascend_compat import settings
    from ascend_compat.backends import _entry_point_cache

    for name in ("ASCEND_COMPAT_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _entry_point_cache.cache_file() == os.path.join(settings.cache_root(), "backend-entry-points.json")


def test_the_builtin_operator_table_gets_the_wrappers_and_loses_them_on_deactivation():
    proc = run_python(
        """
import torch
from torch.jit import _builtins
table = _builtins._get_builtin_table()
before = dict(table)
import ascend_compat
ascend_compat.activate()
print(table.get(id(torch.zeros)) == before[id(torch.zeros.__wrapped__)], len(table) > len(before))
ascend_compat.deactivate()
print(table == before)
"""
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "True"]


def test_cuda_api_compact_copy_is_used_rebuilt_on_change_and_optional(tmp_path):
    # Issue 15: activation reads cuda_api.json through a marshal copy in the cache directory, keyed by the file's
    # path, size and time; a changed file, a damaged copy or an unwritable directory still give the JSON's content.
    import os

    from ascend_compat.cuda_shim import cuda_functions

    src = tmp_path / "api.json"
    src.write_text('{"names": {"a": {"kind": "direct"}}, "submodules": {}}')
    cache = tmp_path / "cache"
    env = {"ASCEND_COMPAT_CACHE_DIR": str(cache)}

    def read() -> dict:
        st = os.stat(src)
        with pytest.MonkeyPatch.context() as mp:
            for k, v in env.items():
                mp.setenv(k, v)
            return cuda_functions._compact(str(src), (str(src), st.st_size, st.st_mtime_ns))

    assert read()["names"] == {"a": {"kind": "direct"}}
    copy = cache / cuda_functions._COMPACT_NAME
    assert copy.is_file() and not list(cache.glob("*.tmp"))
    src_bytes = src.read_bytes()
    src.write_text(src_bytes.decode().replace("{}}", '{"x": 1}}').replace('"a"', '"b"'))
    assert read()["names"] == {"b": {"kind": "direct"}}  # rebuilt: size and time changed
    # The copy is what is read while the key matches: make one whose content differs, under the right key.
    st = os.stat(src)
    import marshal

    copy.write_bytes(marshal.dumps(((str(src), st.st_size, st.st_mtime_ns), {"names": {"from": "copy"}})))
    assert read()["names"] == {"from": "copy"}
    copy.write_bytes(b"\x00garbage")
    assert read()["names"] == {"b": {"kind": "direct"}}
    assert marshal.loads(copy.read_bytes())[1]["names"] == {"b": {"kind": "direct"}}  # repaired
    env["ASCEND_COMPAT_CACHE_DIR"] = str(src)  # a file, not a directory: nothing can be written there
    assert read()["names"] == {"b": {"kind": "direct"}}


def test_the_package_table_is_the_json_whether_or_not_a_copy_exists(tmp_path):
    proc = run_python(
        """
import json, os
from importlib import resources
from ascend_compat.cuda_shim import cuda_functions
want = json.loads(resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_bytes())
first = cuda_functions._cuda_api_data() == want
cuda_functions._cuda_api_data.cache_clear()
print(first, cuda_functions._cuda_api_data() == want,
      os.listdir(os.environ["ASCEND_COMPAT_CACHE_DIR"]) == [cuda_functions._COMPACT_NAME])
""",
        env={"ASCEND_COMPAT_CACHE_DIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "True"]


def test_the_target_every_wrapper_reads_keeps_no_dict_through_a_cycle():
    # Issue 20: x.cuda() cost ~40 ns (+8%) more per call than before the redesign. Every wrapper reads
    # TARGET.active on each call; recording TARGET's fields read its __dict__, which materialised it, and CPython
    # 3.11 reads the attributes of such an object unspecialised. With slots there is nothing to materialise.
    proc = run_python(
        """
import torch
import ascend_compat
from ascend_compat.cuda_shim import devices
before = {f: getattr(devices.TARGET, f) for f in type(devices.TARGET).__slots__}
ascend_compat.activate()
on = (devices.TARGET.active, devices.TARGET.device_type, torch.randn(2).cuda().device.type)
ascend_compat.deactivate()
after = {f: getattr(devices.TARGET, f) for f in type(devices.TARGET).__slots__}
print(on, hasattr(devices.TARGET, "__dict__"), all(after[f] is before[f] for f in before))
"""
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["(True,", "'cpu',", "'cpu')", "False", "True"]
