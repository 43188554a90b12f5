"""Package-level promises: import is side-effect free; the CLI behaves like python for `run`.

Checks of what a fresh interpreter imports keep a real subprocess (``run_python``); the CLI's commands run in a
process forked from a warm interpreter (``tests/_forkserver.py``)."""

from __future__ import annotations

import json
import subprocess

from tests._forkserver import cli, run_code
from tests.conftest import ROOT, _clean_env, run_python


def test_import_does_not_import_torch_or_patch():
    proc = run_python(
        """
        import sys
        import ascend_compat
        assert "torch" not in sys.modules, "import ascend_compat imported torch"
        assert "torch_npu" not in sys.modules
        assert not any(type(f).__module__.startswith("ascend_compat") for f in sys.meta_path)
        print(ascend_compat.__version__)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def _cli(*args: str, env: dict[str, str] | None = None, cwd=None) -> subprocess.CompletedProcess[str]:
    return cli(*args, env={**_clean_env(), **(env or {})}, cwd=cwd, timeout=300)


def test_version_and_help():
    assert _cli("--version").stdout.startswith("ascend-compat ")
    assert "run" in _cli("--help").stdout


def test_every_command_is_registered_cheaply_and_reports_offer_json():
    # Building the whole CLI imports each command module: that must not import torch (commands like `error`
    # and `doctor` must work where torch is broken), and every reporting command takes --json.
    proc = run_python(
        """
        import argparse, json, sys
        from ascend_compat.cli.main import COMMANDS, build_parser
        parser = build_parser()
        assert "torch" not in sys.modules
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        def leaves(name, p):
            inner = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
            if not inner:
                return [(name, p)]
            return [leaf for n, q in inner[0].choices.items() for leaf in leaves(f"{name} {n}", q)]
        out = {}
        for command in COMMANDS:
            for name, p in leaves(command, sub.choices[command]):
                out[name] = any("--json" in a.option_strings for a in p._actions)
        print(json.dumps([list(sub.choices), out]))
        """
    )
    assert proc.returncode == 0, proc.stderr
    registered, has_json = json.loads(proc.stdout)
    from ascend_compat.cli.main import COMMANDS

    assert registered == list(COMMANDS)
    # `run` runs a program; every other command reports (scaffold: what it wrote).
    assert [name for name, ok in has_json.items() if not ok] == ["run"]


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


def test_has_npu_without_any_npu_imports_nothing_and_is_false():
    # The seed README calls ascend_compat.has_npu(); with no torch_npu and no simulator there is no NPU, and asking
    # must not import torch.
    proc = run_python(
        """
        import sys
        import ascend_compat
        assert "has_npu" in ascend_compat.__all__
        print(ascend_compat.has_npu(), "torch" in sys.modules)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_has_npu_is_true_on_the_simulated_npu():
    proc = run_code(
        """
        import ascend_compat
        from ascend_compat import simulate
        before = ascend_compat.has_npu()
        simulate.install()
        print(before, ascend_compat.has_npu())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
