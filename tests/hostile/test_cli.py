"""Commands given hostile arguments (issue 17 items 5 and 8): each ends with a clear message and the documented exit
code, never a traceback, and ``scaffold --force`` never deletes what it did not create."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ascend_compat.doctor import errors
from ascend_compat.kernel_helper import SpecError, default_spec, scaffold
from tests.hostile._cli import cli


def test_error_usage_errors_go_to_stderr() -> None:
    r = cli("error", "ZZZ")
    assert r.returncode == 2 and r.stdout == "" and "ZZZ: not an error code" in r.stderr
    mixed = cli("error", "507035", "ZZZ")
    assert mixed.returncode == 2 and "507035" in mixed.stdout and "ZZZ" not in mixed.stdout


def test_a_4301_digit_code_is_a_clear_error() -> None:
    r = cli("error", "1" * 4301)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "not an error code" in r.stderr
    assert len(r.stderr) < 400  # the input is abbreviated, not echoed whole
    log = "NPU function error: aclnnAdd(x), error code is " + "7" * 5000 + "\n"
    assert errors.explain_text(log) == []


@pytest.mark.slow
def test_explain_summarizes_a_log_with_hundreds_of_thousands_of_distinct_codes(tmp_path: Path) -> None:
    log = tmp_path / "huge.log"
    with open(log, "w") as fh:
        fh.writelines(f"error code is {i}\n" for i in range(100_000, 400_000))
    r = cli("explain", str(log), "--json", timeout=300)
    data = json.loads(r.stdout)
    known = {c for c in errors.all_codes() if c.isdigit() and 100_000 <= int(c) < 400_000}
    assert len(data["unknown"]) == errors.MAX_UNKNOWN  # the first unknown ones, listed
    assert {f["code"] for f in data["findings"] if f["known"]} == known  # every known code, always
    omitted = data["omitted"]
    assert omitted["occurrences"] == 300_000 - len(known) - errors.MAX_UNKNOWN
    assert omitted["codes"] == 100_000 and not omitted["exact"]  # counted up to a bound, then a lower bound
    assert len(r.stdout) < 2_000_000  # a million distinct codes gave 199 MB
    text = cli("explain", str(log), timeout=300).stdout
    assert "more distinct unknown code(s)" in text and len(text) < 2_000_000


def test_scaffold_force_never_deletes_what_it_did_not_create(tmp_path: Path) -> None:
    (tmp_path / "important.txt").write_text("keep me")
    r = cli("scaffold", "add_custom", "-o", ".", "--force", cwd=tmp_path)
    assert r.returncode == 1 and "not created by `ascend-compat scaffold`" in r.stderr
    assert (tmp_path / "important.txt").read_text() == "keep me" and sorted(os.listdir(tmp_path)) == ["important.txt"]


def test_scaffold_force_replaces_its_own_output_and_keeps_the_rest(tmp_path: Path) -> None:
    target = tmp_path / "op"
    scaffold(default_spec("my_op"), target)
    from ascend_compat.kernel_helper.writer import MARKER

    assert (target / MARKER).is_file()
    (target / "notes.md").write_text("mine")
    (target / "op_kernel" / "extra.cpp").write_text("// mine too")
    result = scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert result.replaced and "AscendC::Mul(" in (target / "op_kernel" / "my_op.cpp").read_text()
    assert (target / "notes.md").read_text() == "mine" and (target / "op_kernel" / "extra.cpp").exists()
    # A renamed operator: the old generated files go, the user's stay, an edited old file stays too.
    (target / "op_host" / "my_op.cpp").write_text("// edited by hand")
    scaffold(default_spec("other_op"), target, force=True)
    assert not (target / "op_kernel" / "my_op.cpp").exists() and (target / "op_kernel" / "other_op.cpp").exists()
    assert (target / "op_host" / "my_op.cpp").read_text() == "// edited by hand"
    assert (target / "notes.md").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_scaffold_force_refuses_a_user_file_in_the_way(tmp_path: Path) -> None:
    target = tmp_path / "op"
    scaffold(default_spec("my_op"), target)
    (target / "op_kernel" / "other_op.cpp").write_text("// the user's")
    with pytest.raises(FileExistsError, match="not a file the scaffold created"):
        scaffold(default_spec("other_op"), target, force=True)
    assert (target / "op_kernel" / "other_op.cpp").read_text() == "// the user's"
    assert (target / "op_kernel" / "my_op.cpp").exists()  # nothing changed


def test_scaffold_refuses_a_cann_builtin_op_type(tmp_path: Path) -> None:
    r = cli("scaffold", "add_", "-o", str(tmp_path / "x"))
    assert r.returncode == 2 and "'Add'" in r.stderr and "built-in" in r.stderr
    with pytest.raises(SpecError, match="built-in"):
        default_spec("relu").validate()


@pytest.mark.parametrize("spec", ['{"a":' * 5000 + "1" + "}" * 5000, "[" * 5000 + "]" * 5000],
                         ids=["objects", "arrays"])
def test_scaffold_spec_nested_5000_deep_is_a_clear_error(spec: str, tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text(spec)
    r = cli("scaffold", "my_op", "--spec", str(tmp_path / "deep.json"), "-o", str(tmp_path / "x"))
    assert r.returncode == 2 and "nested" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and FIFOs")
def test_scaffold_spec_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "spec.json")
    r = cli("scaffold", "my_op", "--spec", str(tmp_path / "spec.json"), "-o", str(tmp_path / "x"), timeout=30)
    assert r.returncode == 2 and "FIFO" in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_run_exits_130_on_sigint_without_runpy_frames(tmp_path: Path) -> None:
    script = tmp_path / "sleepy.py"
    script.write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    proc = subprocess.Popen([sys.executable, "-m", "ascend_compat", "run", "--backend", "cpu", str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "KeyboardInterrupt" in err and "<frozen runpy>" not in err and "runner.py" not in err
    assert f'File "{script}", line 3' in err


@pytest.mark.parametrize("value", ["-1", "abc", "0"])
def test_a_bad_simulated_memory_limit_names_the_variable(value: str, tmp_path: Path) -> None:
    from ascend_compat.simulate import SimulationError, _parse_bytes

    with pytest.raises(SimulationError, match=f"ASCEND_COMPAT_SIM_MEMORY_LIMIT='{value}'"):
        _parse_bytes(value)
    assert _parse_bytes("2GiB") == 2 << 30 and _parse_bytes("512M") == 512 << 20
    (tmp_path / "s.py").write_text("print('ran')\n")
    r = cli("run", "--simulate", "npu", str(tmp_path / "s.py"), env={"ASCEND_COMPAT_SIM_MEMORY_LIMIT": value})
    assert r.returncode == 2 and "ASCEND_COMPAT_SIM_MEMORY_LIMIT" in r.stderr and "Traceback" not in r.stderr
    assert "ran" not in r.stdout
