"""The fork server (tests/_forkserver.py) behaves as ``subprocess.run([python, ...])`` does for the tests that use it:
exit statuses, output, environment, working directory, time limits, and nothing carried from one command to the
next."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests._forkserver import cli, run_code


def test_exit_statuses_and_output_are_the_interpreters() -> None:
    usage = cli("error", "ZZZ")
    assert usage.returncode == 2 and usage.stdout == "" and "ZZZ: not an error code" in usage.stderr
    assert cli("--version").stdout.startswith("ascend-compat ")
    assert run_code("raise SystemExit(3)").returncode == 3
    crashed = run_code("print('before', flush=True)\nraise ValueError('boom')")
    assert crashed.returncode == 1 and crashed.stdout == "before\n"
    assert "Traceback (most recent call last)" in crashed.stderr and "ValueError: boom" in crashed.stderr
    message = run_code("import sys; sys.exit('bye')")
    assert (message.returncode, message.stderr) == (1, "bye\n")
    exits = run_code("import atexit; atexit.register(print, 'at exit'); print('body')")
    assert exits.stdout == "body\nat exit\n"


def test_environment_directory_and_pythonpath(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "only_here.py").write_text("VALUE = 42\n")
    from tests.conftest import _clean_env

    env = {**_clean_env(), "FORKSERVER_PROBE": "yes", "PYTHONPATH": str(tmp_path / "lib")}
    proc = run_code("import os, only_here; print(os.environ['FORKSERVER_PROBE'], os.getcwd(), only_here.VALUE)",
                    env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["yes", str(tmp_path), "42"]


def test_standard_input_is_the_given_input_or_empty() -> None:
    echo = "import sys; data = sys.stdin.buffer.read(); print(len(data), data.decode(errors='replace').upper())"
    assert run_code(echo, input="line one\nline two\n").stdout == "18 LINE ONE\nLINE TWO\n\n"
    assert run_code(echo, input=b"\xffab").stdout == "3 \ufffdAB\n"
    assert run_code(echo).stdout == "0 \n"
    usage = cli("explain", "--json", input="RuntimeError: call aclnnCast failed, error code is 561103\n")
    assert usage.returncode == 0 and '"root_cause": "561103"' in usage.stdout, usage.stderr


def test_nothing_reaches_the_next_command() -> None:
    first = run_code("import os, ascend_compat\nos.environ['LEAK'] = '1'\nprint(ascend_compat.activate())",
                     env={"ASCEND_COMPAT_BACKEND": "cpu"})
    assert first.returncode == 0 and first.stdout.strip() == "cpu", first.stderr
    second = run_code("import os\nfrom ascend_compat import cuda_shim\nprint(os.environ.get('LEAK'), "
                      "cuda_shim.is_activated())")
    assert second.stdout.split() == ["None", "False"], second.stderr


@pytest.mark.slow
def test_a_command_past_its_time_is_killed_with_its_workers(tmp_path: Path) -> None:
    marker = tmp_path / "worker.pid"
    code = (f"import subprocess, sys, time\np = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])"
            f"\nopen({str(marker)!r}, 'w').write(str(p.pid))\ntime.sleep(60)\n")
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_code(code, timeout=5)
    assert time.monotonic() - start < 30
    worker = int(marker.read_text())
    for _ in range(100):  # the worker was killed with the command's process group (it may still be a zombie)
        try:
            state = Path(f"/proc/{worker}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"worker {worker} outlived the command")


def test_start_up_variables_are_refused() -> None:
    with pytest.raises(ValueError, match="ASCEND_COMPAT_AUTO_ACTIVATE"):
        run_code("pass", env={"ASCEND_COMPAT_AUTO_ACTIVATE": "1"})
