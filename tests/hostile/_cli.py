"""Run ``ascend-compat`` as users do, bounded in time (a hang fails the test, never the run): a process of its own,
forked from a warm interpreter (tests/_forkserver.py) so that the interpreter's start is not paid each time."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

import pytest

from tests._forkserver import cli as forked_cli


def cli(*args: str, cwd: Optional[Path] = None, timeout: float = 60, env: Optional[dict[str, str]] = None
        ) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")
                or k == "ASCEND_COMPAT_CACHE_DIR"}
    full_env.update({"NO_COLOR": "1", **(env or {})})
    try:
        return forked_cli(*args, cwd=cwd, env=full_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"ascend-compat {' '.join(args)} did not return within {timeout} s (hang)")
