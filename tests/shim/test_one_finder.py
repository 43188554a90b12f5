"""Issue 20 (items 1 and 6): the package has one ``sys.meta_path`` finder, and undoing what it serves leaves
``sys.meta_path`` identity-exact.

Each test runs in a fresh interpreter: the finder is process-wide state.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_python

#: Counts the package's finders on sys.meta_path, and compares sys.meta_path with a snapshot by identity.
HELPERS = """
import sys
def ours():
    return [type(f).__module__ for f in sys.meta_path if type(f).__module__.startswith("ascend_compat")]
def same(snapshot):
    return len(sys.meta_path) == len(snapshot) and all(a is b for a, b in zip(sys.meta_path, snapshot))
"""


def _lines(code: str, env: dict[str, str] | None = None) -> list[str]:
    proc = run_python(HELPERS + code, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()


def test_simulator_shim_drop_in_and_cupy_alias_share_one_finder_and_deactivation_is_identity_exact():
    # On the old code this printed 5 finders (post-import hooks, simulated torch_npu, flash_attn drop-in, the
    # shim's cupy finder and install_as_cupy's), and the first assertion failed.
    lines = _lines(
        """
import importlib.metadata
import torch
from ascend_compat import simulate
simulate.install()
snapshot = list(sys.meta_path)
import ascend_compat
from ascend_compat.cupy import install_as_cupy, uninstall_as_cupy
print(ascend_compat.activate(), install_as_cupy())
import cupy, flash_attn, torch_npu
print(len(ours()), ours()[0], cupy.__name__, flash_attn.__name__, torch_npu.__name__)
print(importlib.metadata.version("flash_attn"), importlib.metadata.version("torch_npu"))
uninstall_as_cupy()
ascend_compat.deactivate()
print(same(snapshot), len(ours()), [n for n in sys.modules if n.split(".")[0] in ("cupy", "cupyx", "flash_attn")])
"""
    )
    assert lines[0] == "npu True"
    assert lines[1] == "1 ascend_compat._import_hooks ascend_compat.cupy ascend_compat.ecosystem.flash_attn torch_npu"
    assert lines[2].startswith("2.8.3+ascendcompat ") and lines[2].endswith("+simulated"), lines[2]
    assert lines[3] == "True 1 []"  # the simulator's torch_npu stays served (it is never uninstalled)


def test_cpu_activation_with_waiting_hooks_leaves_no_finder_behind():
    lines = _lines(
        """
import torch
snapshot = list(sys.meta_path)
import ascend_compat
from ascend_compat import _import_hooks
from ascend_compat.cupy import install_as_cupy, uninstall_as_cupy
print(ascend_compat.activate(), install_as_cupy(), len(ours()), sorted(_import_hooks.pending()) != [])
import cupy
print(len(ours()), cupy.__name__)
ascend_compat.deactivate()
print(len(ours()), _import_hooks.provisions())
uninstall_as_cupy()
print(same(snapshot), ours(), _import_hooks.provisions(), _import_hooks.pending())
""",
        env={"ASCEND_COMPAT_BACKEND": "cpu"},
    )
    assert lines == ["cpu True 1 True", "1 ascend_compat.cupy", "1 [('cupy', 'replace'), ('cupyx', 'replace')]",
                     "True [] [] {}"]


PROVIDERS = """
import sys, types
from ascend_compat import _import_hooks as hooks
snapshot = list(sys.meta_path)

class Fake:
    def __init__(self, tag):
        self.tag, self.forgotten = tag, 0
    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery
        class Loader:
            def create_module(self, spec):
                return None
            def exec_module(self, module):
                module.TAG = fake.tag
        fake = self
        return importlib.machinery.ModuleSpec(fullname, Loader())
    def forget(self):
        self.forgotten += 1
        for name in [n for n in sys.modules if n.split(".")[0] in ("colorsys", "zz_fake")]:
            del sys.modules[name]
"""


def test_replace_shadows_fallback_yields_and_withdraw_forgets_and_is_idempotent():
    lines = _lines(
        PROVIDERS
        + """
replace, fallback = Fake("replace"), Fake("fallback")
r = hooks.provide("colorsys", lambda: replace)   # a stdlib module: replace answers before the path finder
f = hooks.provide("zz_fake", lambda: fallback, "fallback")
g = hooks.provide("json", lambda: fallback, "fallback")  # found by the path finder: never shadowed
sys.modules.pop("json", None)
import colorsys, zz_fake, json
print(colorsys.TAG, zz_fake.TAG, hasattr(json, "TAG"), len([x for x in sys.meta_path if x is hooks.FINDER]))
hooks.withdraw(r); hooks.withdraw(r)
print(replace.forgotten, "colorsys" in sys.modules, hasattr(__import__("colorsys"), "TAG"))
hooks.withdraw(f); hooks.withdraw(g)
print(same(snapshot), fallback.forgotten)
"""
    )
    assert lines == ["replace fallback False 1", "1 False False", "True 2"]


def test_a_string_factory_is_imported_at_the_first_question_only():
    lines = _lines(
        """
from ascend_compat import _import_hooks as hooks
snapshot = list(sys.meta_path)
p = hooks.provide(("cupy", "cupyx"), "ascend_compat._cupy_alias:shim_provider", "fallback")
print("ascend_compat._cupy_alias" in sys.modules, "numpy" in sys.modules)
import json  # any other import does not ask the provider
print("ascend_compat._cupy_alias" in sys.modules)
import cupy
print("ascend_compat._cupy_alias" in sys.modules, cupy.__name__)
hooks.withdraw(p)
print(same(snapshot), "cupy" in sys.modules)
"""
    )
    assert lines == ["False False", "False", "True ascend_compat.cupy", "True False"]


@pytest.mark.parametrize(
    "call, error",
    [
        ("hooks.provide('a.b', lambda: None)", "ValueError: provide() takes top-level module names"),
        ("hooks.provide((), lambda: None)", "ValueError: provide() takes top-level module names"),
        ("hooks.provide('a', lambda: None, 'first')", "ValueError: provide() mode must be one of"),
        ("hooks.provide('a', 'no_colon')", "TypeError: provide() takes a callable or a 'package.module:function'"),
    ],
)
def test_bad_registrations_are_refused_clearly_and_change_nothing(call, error):
    lines = _lines(
        f"""
from ascend_compat import _import_hooks as hooks
snapshot = list(sys.meta_path)
try:
    {call}
except Exception as exc:
    print(f"{{type(exc).__name__}}: {{exc}}")
print(same(snapshot), hooks.provisions())
"""
    )
    assert lines[0].startswith(error), lines[0]
    assert lines[1] == "True []"


def test_a_ledger_fault_while_registering_leaves_sys_meta_path_exact():
    # KeyboardInterrupt at each step of a ledger-scoped registration: the transaction restores, and nothing of the
    # package stays on sys.meta_path.
    lines = _lines(
        """
from ascend_compat import _import_hooks as hooks
from ascend_compat.cuda_shim.ledger import Ledger
snapshot = list(sys.meta_path)

class Faulty(Ledger):
    def __init__(self, at):
        super().__init__()
        self.at, self.n = at, 0
    def _step(self, stage, label):
        self.n += 1
        if self.n == self.at:
            raise KeyboardInterrupt(stage)

results = []
for at in (1, 2, 3):
    led = Faulty(at)
    try:
        with led.transaction():
            hooks.provide("zz_fake", "json:dumps", ledger=led)
            hooks.provide("zz_other", "json:dumps", "fallback", ledger=led)
    except KeyboardInterrupt as exc:
        results.append(str(exc))
    results.append(same(snapshot) and hooks.provisions() == [])
print(results)
"""
    )
    assert lines == ["['record', True, 'change', True, 'record', True]"]


def test_the_finder_module_stays_cheap_to_import():
    # Issue 15: activation imports it; importlib.metadata (and importlib.abc/util) load on the first question.
    lines = _lines(
        """
import ascend_compat
before = set(sys.modules)
from ascend_compat import _import_hooks
print(sorted(set(sys.modules) - before))
"""
    )
    assert lines == ["['ascend_compat._import_hooks']"], lines
