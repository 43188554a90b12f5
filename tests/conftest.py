"""Shared fixtures.

The simulated NPU renames torch's PrivateUse1 backend, which can happen once per process: in-process tests share
one installation (2 devices, 910B); tests of other configurations run in their own subprocess (``run_python``).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A suite started as a background job of a non-interactive shell (`cmd &`) inherits SIGINT ignored, and so would
# every interpreter it starts: Ctrl-C would never arrive, and the tests that send one would wait forever. Handled
# here, it is the default again in every child (exec resets caught signals, not ignored ones).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(optionalhook=True)  # known only when pytest-xdist is loaded
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): one worker per CPU the process may use (its affinity and its cgroup CPU
    quota, ``tests/_cpus.py``), at most 4; ``PYTEST_XDIST_AUTO_NUM_WORKERS=N`` sets it. Each worker holds its own
    torch, simulator and fork server (about 1 GiB), and the slowest test files run in their own worker anyway
    (``--dist loadfile``)."""
    from tests._cpus import worker_count

    return worker_count(cap=4)


@pytest.fixture(scope="session")
def sim():
    """The in-process simulated NPU (2 devices, 910B)."""
    from ascend_compat import simulate

    simulate.install(device_count=2, chip="910B")
    import torch

    return torch


@pytest.fixture(autouse=True)
def _reset_device():
    yield
    from ascend_compat import simulate

    if simulate.is_installed():
        import torch

        torch.npu.set_device(0)


def _clean_env() -> dict[str, str]:
    """The environment without ascend-compat's behaviour switches (the build cache location is kept)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_") or k == "ASCEND_COMPAT_CACHE_DIR"}


def run_python(code: str, env: dict[str, str] | None = None, timeout: int = 300, cwd: str | None = None):
    """Run ``code`` in a fresh interpreter; return the CompletedProcess (text mode)."""
    full_env = _clean_env()
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd,
    )


def load_tool(name: str) -> ModuleType:
    """A data generator under ``tools/`` (not a package) as a module, e.g. ``load_tool("build_cann_errors")``."""
    tools = str(ROOT / "tools")
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, tools)  # as when the tool runs as a script: its folder's helpers are importable
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(tools)
    return module


@pytest.fixture(scope="session")
def forked():
    """A warm interpreter that forks a fresh process per command (``tests/_forkserver.py``).

    ``forked.run(argv, env=..., cwd=..., timeout=...)`` is ``subprocess.run([python, "-m", "ascend_compat", *argv])``
    and ``forked.run(code=...)`` is ``python -c`` (text mode, ``env`` the whole environment, ``_clean_env()`` when
    omitted), without paying for the interpreter's start and torch's import. Not for start-up checks (import order,
    variables read at start, signals): those keep ``run_python``."""
    from tests._forkserver import shared

    return shared()
