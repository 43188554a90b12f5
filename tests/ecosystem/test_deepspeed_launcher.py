"""The deepspeed launcher starting ``python -m ascend_compat run`` as its training module, on the simulated NPU."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import os, sys, torch, deepspeed
model = torch.nn.Linear(4, 1)
config = {"train_batch_size": 4, "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
          "zero_optimization": {"stage": 1}, "zero_allow_untested_optimizer": True}
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
x = torch.randn(2, 4).cuda()
engine.backward(engine(x).sum())
engine.step()
with open(f"rank{os.environ['RANK']}.txt", "w") as f:  # a file each: two ranks' prints can interleave
    f.write(f"argv {sys.argv[1:]} on {x.device}")
"""


def test_the_launchers_local_rank_reaches_the_script(tmp_path: Path) -> None:
    # The launcher puts --local_rank=N right after the module's name: `python -m ascend_compat --local_rank=1 run
    # script.py` was "unrecognized arguments"; a script launched directly gets it first among its arguments.
    script = tmp_path / "s.py"
    script.write_text("import sys\nprint(sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "--local_rank=1", "run", str(script), "a"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['--local_rank=1', 'a']"


@pytest.mark.slow
def test_deepspeed_launches_two_ranks_through_ascend_compat_run(tmp_path: Path) -> None:
    pytest.importorskip("deepspeed")
    script = tmp_path / "ds.py"
    script.write_text(SCRIPT)
    with socket.socket() as s:  # its default port, 29500, may be another test's rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "--master_port", str(port), "--module",
         "ascend_compat", "run", "--simulate", "npu", str(script)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for rank in (0, 1):
        said = (tmp_path / f"rank{rank}.txt").read_text()
        assert said == f"argv ['--local_rank={rank}'] on npu:{rank}", said
