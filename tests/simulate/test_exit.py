"""The simulator never aborts a process at exit, and backward work runs on the caller's thread.

autograd's npu worker thread used to drop the last reference to a backward's graph task (which holds Python
objects) after the caller had moved on; a process ending right then aborted ("terminate called without an active
exception", exit 134) in up to 6 of 6 runs. The exit path is a race, so it is repeated in fresh interpreters.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import _clean_env, run_python

_EXITS = [
    'simulate.install(chip="310P")',
    "simulate.install()",
    "simulate.install(device_count=3)",
    # a user's last backward right before the script ends
    "simulate.install(); import torch; x = torch.ones(4, device='npu', requires_grad=True); (x * x).sum().backward()",
    "simulate.install(device_count=2); import torch; "
    "m = torch.nn.Linear(8, 8).to('npu:1'); m(torch.randn(2, 8, device='npu:1')).sum().backward()",
]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", f"from ascend_compat import simulate; {code}"],
        capture_output=True,
        text=True,
        env=_clean_env(),
        timeout=300,
    )


def test_processes_exit_cleanly_after_install_and_backward():
    cases = _EXITS * 2  # 10 exits; the unfixed build aborted in most of them
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_run, cases))
    failures = [(code, p.returncode, p.stderr[-300:]) for code, p in zip(cases, results) if p.returncode != 0]
    assert failures == []


def test_npu_backward_runs_on_the_calling_thread_in_every_thread():
    proc = run_python(
        """
        import threading
        from ascend_compat import simulate
        simulate.install()
        import torch
        seen = []
        def step():
            x = torch.randn(16, 16, device="npu", requires_grad=True)
            x.register_hook(lambda g: seen.append(threading.current_thread().name) or g)
            (x @ x).sum().backward()
            torch.autograd.grad((x * 3).sum(), x)
        step()
        t = threading.Thread(target=step, name="worker")
        t.start(); t.join()
        print(sorted(set(seen)), torch._C._is_multithreading_enabled())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "['MainThread', 'worker'] True" in proc.stdout
