"""The pre-commit hook definition runs the real command and blocks CUDA-only code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from tests._forkserver import cli

ROOT = Path(__file__).resolve().parents[2]


def test_hook_blocks_cuda_code_and_passes_clean_code(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "ascend-compat-check" and hook["language"] == "python"
    args = shlex.split(hook["entry"])
    assert args[0] == "ascend-compat"
    bad = tmp_path / "train.py"
    bad.write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    good = tmp_path / "ok.py"
    good.write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    assert re.search(hook["files"], "src/train.py") and re.search(hook["files"], "k/kernel.cu")
    assert not re.search(hook["files"], "README.md")
    assert cli(*args[1:], str(bad)).returncode == 1  # python -m ascend_compat ARGS, forked from a warm interpreter
    assert cli(*args[1:], str(good)).returncode == 0
