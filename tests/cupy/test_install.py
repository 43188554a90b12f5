"""``import cupy`` resolving to ascend_compat.cupy (install_as_cupy), and never shadowing a usable real CuPy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import run_python

ALIAS = """
    import sys
    from ascend_compat.cupy._install import install_as_cupy, is_installed_as_cupy, uninstall_as_cupy
    print(install_as_cupy(), install_as_cupy())
    from ascend_compat import _import_hooks
    print(sum(f is _import_hooks.FINDER for f in sys.meta_path), _import_hooks.provisions())
    import cupy, cupy.linalg, cupy.random, cupy.fft, cupy.cuda.runtime
    import ascend_compat.cupy as acp
    from cupy.exceptions import AxisError
    from cupy import testing_missing_is_an_error  # noqa
"""


#: A fresh interpreter's last step: ``import cupy`` must fail again once the alias is gone.
GONE = """
    try:
        import cupy
    except ModuleNotFoundError:
        print("gone")
"""

def _fake_cupy(root: Path, usable: str) -> str:
    """A package named cupy on a temporary path: ``usable`` is the body of ``cuda.is_available``."""
    pkg = root / "cupy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("REAL = True\nfrom . import cuda\n", "utf-8")
    (pkg / "cuda.py").write_text(f"def is_available():\n    {usable}\n", "utf-8")
    return str(root)


def test_import_cupy_resolves_to_the_module():
    code = ALIAS.replace("    from cupy import testing_missing_is_an_error  # noqa\n", "") + """
    print(cupy is acp, cupy.linalg is acp.linalg, cupy.fft.config is acp.fft.config, AxisError.__name__)
    print(cupy.__name__, cupy.random.rand(2).shape, cupy.cuda.runtime.getDeviceCount())
    uninstall_as_cupy()
    print(is_installed_as_cupy(), "cupy" in sys.modules)
    """ + GONE
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:5] == ["True True", "1 [('cupy', 'replace'), ('cupyx', 'replace')]",
                                          "True True True AxisError",
                                          "ascend_compat.cupy (2,) 1", "False False"]
    assert "gone" in res.stdout


def test_missing_submodule_is_an_import_error():
    res = run_python(ALIAS)
    assert res.returncode != 0
    assert "ImportError" in res.stderr and "testing_missing_is_an_error" in res.stderr


def test_usable_real_cupy_is_never_shadowed(tmp_path):
    path = _fake_cupy(tmp_path, "return True")
    code = """
        from ascend_compat.cupy._install import install_as_cupy, is_installed_as_cupy
        print(install_as_cupy(), is_installed_as_cupy())
        import cupy
        print(cupy.REAL, cupy.__file__.startswith(PATH))
    """.replace("PATH", repr(path))
    res = run_python(code, env={"PYTHONPATH": os.pathsep.join([path, os.environ.get("PYTHONPATH", "")])})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "False", "True", "True"]


@pytest.mark.parametrize("body", ["return False", "raise RuntimeError('cudaErrorNoDevice')"])
def test_unusable_real_cupy_is_replaced(tmp_path, body):
    path = _fake_cupy(tmp_path, body)
    code = """
        import cupy as real
        print(real.REAL)
        from ascend_compat.cupy._install import install_as_cupy
        print(install_as_cupy())
        import cupy
        print(cupy.__name__, hasattr(cupy, "REAL"))
    """
    res = run_python(code, env={"PYTHONPATH": os.pathsep.join([path, os.environ.get("PYTHONPATH", "")])})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "True", "ascend_compat.cupy", "False"]


def test_broken_real_cupy_import_is_replaced(tmp_path):
    pkg = tmp_path / "cupy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('libcudart.so.12: cannot open shared object file')\n")
    code = """
        from ascend_compat.cupy._install import install_as_cupy
        print(install_as_cupy())
        import cupy
        print(cupy.__name__)
    """
    res = run_python(code, env={"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "ascend_compat.cupy"]


SHIM = """
    import sys
    import ascend_compat
    before = set(sys.modules)
    from ascend_compat import _import_hooks
    from ascend_compat.cuda_shim.ledger import Ledger
    ledger = Ledger()
    _import_hooks.provide(("cupy", "cupyx"), "ascend_compat._cupy_alias:shim_provider", "fallback", ledger=ledger)
    finder = _import_hooks.FINDER  # what the shim's activation registers, through its ledger
    new = sorted(set(sys.modules) - before)
    print("light", [m for m in new if m.startswith(("numpy", "torch", "ascend_compat.cupy"))] == [])
"""


def test_shim_finder_is_light_and_aliases_cupy_and_cupyx():
    code = SHIM + """
    import cupy, cupy.linalg, cupy.random, cupyx
    import ascend_compat.cupy as acp
    import ascend_compat.cupy.linalg as alinalg
    print(cupy is acp, cupy.linalg is alinalg, sys.modules["cupy.linalg"] is alinalg, cupyx.errstate is not None)
    print(cupy.arange(3).sum().item(), cupyx.__name__)
    aliased = sorted(n for n in sys.modules if n.split(".")[0] in ("cupy", "cupyx"))
    ledger.restore()  # what the shim's deactivation does: the provider forgets its aliases
    print(aliased[:3], [n for n in sys.modules if n.split(".")[0] in ("cupy", "cupyx")])
    """ + GONE
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:5] == ["light True", "True True True True", "3 ascend_compat.cupy._cupyx",
                                          "['cupy', 'cupy.linalg', 'cupy.random'] []", "gone"]


@pytest.mark.parametrize("usable", ["return True", "return False"])
def test_shim_finder_never_shadows_an_installed_cupy(tmp_path, usable):
    path = _fake_cupy(tmp_path, usable)
    code = SHIM + """
    import cupy, cupy.cuda
    print(cupy.REAL, cupy.__file__.startswith(PATH), cupy.cuda.__file__.startswith(PATH))
    print("ascend_compat.cupy" in sys.modules)
    """.replace("PATH", repr(path))
    res = run_python(code, env={"PYTHONPATH": os.pathsep.join([path, os.environ.get("PYTHONPATH", "")])})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:3] == ["light True", "True True True", "False"]


def test_shim_finder_ignores_other_names_and_missing_submodules():
    code = SHIM + """
    print(finder.find_spec("json") is None, finder.find_spec("cupyz") is None, finder.find_spec("cupy.linalg") is None)
    import cupy
    try:
        import cupy.no_such_module
    except ModuleNotFoundError as exc:
        print("missing", exc.name)
    try:
        import cupyx.scipy
    except ModuleNotFoundError:
        print("no cupyx.scipy")
    """
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[1:4] == ["True True True", "missing cupy.no_such_module", "no cupyx.scipy"]


def test_install_as_cupy_aliases_cupyx_and_uninstall_removes_it():
    code = """
    import sys
    from ascend_compat.cupy._install import install_as_cupy, uninstall_as_cupy
    install_as_cupy()
    import cupyx
    from ascend_compat.cupy import _cupyx
    print(cupyx is _cupyx)
    uninstall_as_cupy()
    print("cupyx" in sys.modules, "cupy" in sys.modules)
    """
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "False", "False"]


def test_import_cupy_under_the_shim_runs_on_the_simulated_npu_and_goes_away_on_deactivate(tmp_path):
    """An unchanged CuPy script under `ascend-compat run`: `import cupy` is this module, arrays on npu:0."""
    script = tmp_path / "cupy_script.py"
    script.write_text(
        "import cupy as cp\n"
        "x = cp.arange(6, dtype=cp.float32).reshape(2, 3)\n"
        "print(cp.__name__, cp.current_torch_device(), float(cp.asnumpy((x * 2).sum())))\n",
        "utf-8",
    )
    import subprocess
    import sys

    from tests.conftest import ROOT, _clean_env

    env = _clean_env()
    env["ASCEND_COMPAT_SIMULATE"] = "npu"
    res = subprocess.run([sys.executable, "-m", "ascend_compat", "run", str(script)], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ascend_compat.cupy npu:0 30.0" in res.stdout, res.stdout
    code = """
    import sys
    import torch, ascend_compat
    ascend_compat.activate()
    import cupy
    print(cupy.__name__)
    ascend_compat.deactivate()
    print([n for n in sys.modules if n.split(".")[0] in ("cupy", "cupyx")])
    """ + GONE
    res = run_python(code)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split("\n")[:3] == ["ascend_compat.cupy", "[]", "gone"], res.stdout
