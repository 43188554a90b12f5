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
    print(sum(type(f).__name__ == "CupyAliasFinder" for f in sys.meta_path))
    import cupy, cupy.linalg, cupy.random, cupy.fft, cupy.cuda.runtime
    import ascend_compat.cupy as acp
    from cupy.exceptions import AxisError
    from cupy import testing_missing_is_an_error  # noqa
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
    try:
        import cupy
    except ModuleNotFoundError:
        print("gone")
    """
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:5] == ["True True", "1", "True True True AxisError",
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
