"""Package-level promises: import is side-effect free; the CLI behaves like python for `run`."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, _clean_env, run_python


def test_import_does_not_import_torch_or_patch():
    proc = run_python(
        """
        import sys
        import ascend_compat
        assert "torch" not in sys.modules, "import ascend_compat imported torch"
        assert "torch_npu" not in sys.modules
        assert not any(type(f).__name__ == "TorchNpuFinder" for f in sys.meta_path)
        print(ascend_compat.__version__)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def _cli(*args: str, env: dict[str, str] | None = None, cwd=None):
    full = _clean_env()
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ascend_compat", *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=300
    )


def test_version_and_help():
    assert _cli("--version").stdout.startswith("ascend-compat ")
    assert "run" in _cli("--help").stdout


def test_run_behaves_like_python(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys\n"
        "print('name', __name__)\n"
        "print('file', __file__)\n"
        "print('argv', sys.argv)\n"
        "sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)\n"
    )
    proc = _cli("run", str(script), "--flag", "3")
    assert proc.returncode == 3
    assert "name __main__" in proc.stdout
    assert f"file {script}" in proc.stdout
    assert f"argv ['{script}', '--flag', '3']" in proc.stdout
    boom = tmp_path / "boom.py"
    boom.write_text("def f():\n    raise ValueError('kaput')\nf()\n")
    proc = _cli("run", str(boom))
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "ValueError: kaput" in proc.stderr and "boom.py" in proc.stderr
    assert _cli("run", str(tmp_path / "missing.py")).returncode == 2


def test_run_module_with_simulated_npu(tmp_path):
    (tmp_path / "mymod.py").write_text(
        "import sys, torch\nx = torch.ones(2, device='npu')\nprint('device', x.device, 'argv', sys.argv[1:])\n"
    )
    proc = _cli("run", "--simulate", "npu", "-m", "mymod", "a", "b", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "device npu:0 argv ['a', 'b']" in proc.stdout


def test_console_scripts_are_declared():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'ascend-compat = "ascend_compat.cli.main:main"' in text
    assert 'cuda-morph = "ascend_compat.cli.main:main"' in text
