"""Run ``ascend-compat`` as users do: a fresh interpreter, bounded in time (a hang fails the test, never the run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest


def cli(*args: str, cwd: Optional[Path] = None, timeout: float = 60, env: Optional[dict[str, str]] = None
        ) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")
                or k == "ASCEND_COMPAT_CACHE_DIR"}
    full_env.update({"NO_COLOR": "1", **(env or {})})
    try:
        return subprocess.run([sys.executable, "-m", "ascend_compat", *args], capture_output=True, text=True,
                              cwd=cwd, env=full_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"ascend-compat {' '.join(args)} did not return within {timeout} s (hang)")
