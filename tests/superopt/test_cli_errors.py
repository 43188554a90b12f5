"""What ``ascend-compat superopt FILE.py:FUNC`` tells a user whose file, function or ``--out`` is wrong: python's own
error at the user's line (no frames of ours), a one-line message for the command line's mistakes, the exit status
the ``--help`` epilog documents, and nothing on stdout with ``--json``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._forkserver import cli
from tests.conftest import _clean_env

MODEL = textwrap.dedent("""
    import ascend_compat.superopt as yr


    def graph():
        g = yr.new_kernel_graph()
        x = g.new_input(dims=(8, 32), dtype=yr.float32)
        w = g.new_input(dims=(32, 16), dtype=yr.float32)
        g.mark_output(g.matmul(g.relu(x), w))
        return g


    def needs(batch, heads=2):
        return graph()


    def helper():
        raise RuntimeError("boom in the user's helper")


    def raises():
        return helper()


    def raises_value_error():
        raise ValueError("the user's own ValueError")


    def bad_graph():
        g = yr.new_kernel_graph()
        x = g.new_input(dims=(8, 32), dtype=yr.float32)
        w = g.new_input(dims=(16, 16), dtype=yr.float32)
        g.mark_output(g.matmul(x, w))
        return g


    def no_output():
        g = yr.new_kernel_graph()
        g.new_input(dims=(8, 32), dtype=yr.float32)
        return g
""")

#: Files whose import fails, and the line python shows for it.
BROKEN = {
    "syntax": ("def graph(:\n    pass\n", "SyntaxError: invalid syntax"),
    "import": ("import os\nimport no_such_module_for_superopt\n",
               "ModuleNotFoundError: No module named 'no_such_module_for_superopt'"),
    "raise": ("x = 1\nraise KeyError('at import')\n", "KeyError: 'at import'"),
}


def _line(text: str, source: str = MODEL) -> int:
    """The line of ``source`` holding ``text`` (1-based, as tracebacks count)."""
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _superopt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**_clean_env(), "NO_COLOR": "1", "ASCEND_COMPAT_CACHE_DIR": str(cwd / "cache")}
    return cli("superopt", *args, "--backend", "torch", cwd=cwd, env=env, timeout=300)


def _no_frames_of_ours(stderr: str) -> None:
    """The traceback starts at the user's code, as ``python FILE.py`` shows it."""
    assert "ascend_compat/cli" not in stderr and "importlib" not in stderr and "runpy" not in stderr, stderr


@pytest.fixture
def model(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_file_that_fails_to_import_shows_pythons_error_at_its_line(tmp_path: Path, kind: str,
                                                                     json_flag: list[str]) -> None:
    source, last_line = BROKEN[kind]
    (tmp_path / "broken.py").write_text(source)
    proc = _superopt("broken.py:graph", *json_flag, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    line = {"syntax": 1, "import": 2, "raise": 2}[kind]
    assert f'File "{tmp_path / "broken.py"}", line {line}' in proc.stderr, proc.stderr
    assert proc.stderr.rstrip().endswith(last_line), proc.stderr
    assert "ascend-compat superopt: broken.py failed while being loaded" in proc.stderr
    _no_frames_of_ours(proc.stderr)
    assert not (tmp_path / "superopt-graph").exists()


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_an_exception_in_func_shows_the_users_frames(model: Path, json_flag: list[str]) -> None:
    proc = _superopt("model.py:raises", *json_flag, cwd=model)
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert "ascend-compat superopt: raises() in model.py failed" in proc.stderr
    frames = [line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("File ")]
    path = model / "model.py"
    assert frames == [f'File "{path}", line {_line("return helper()")}, in raises',
                      f'File "{path}", line {_line("raise RuntimeError")}, in helper'], proc.stderr
    assert proc.stderr.rstrip().endswith("RuntimeError: boom in the user's helper")
    _no_frames_of_ours(proc.stderr)


def test_a_value_error_of_the_users_is_their_error_not_a_usage_error(model: Path) -> None:
    # It was caught as one of the command's own usage errors: exit 2 and its message alone, with no file or line.
    proc = _superopt("model.py:raises_value_error", cwd=model)
    assert proc.returncode == 1, proc.stderr
    assert f'File "{model / "model.py"}", line {_line("raise ValueError")}, in raises_value_error' in proc.stderr
    assert proc.stderr.rstrip().endswith("ValueError: the user's own ValueError")


def test_a_func_that_needs_arguments_is_named_with_them(model: Path) -> None:
    proc = _superopt("model.py:needs", cwd=model)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("ascend-compat superopt: needs() in model.py takes arguments (batch); "
                           "superopt calls FUNC with none\n")


@pytest.mark.parametrize(("func", "where"), [("bad_graph", "while FUNC builds it"), ("no_output", "during the search")])
def test_a_graph_error_exits_1_wherever_it_is_raised(model: Path, func: str, where: str) -> None:
    proc = _superopt(f"model.py:{func}", cwd=model)
    assert (proc.returncode, proc.stdout) == (1, ""), (where, proc.stderr)
    if func == "bad_graph":  # the user's line that added the op, then the error; none of the library's frames
        frames = [line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("File ")]
        assert frames == [f'File "{model / "model.py"}", line {_line("g.matmul(x, w)")}, in bad_graph'], proc.stderr
        assert "g.mark_output(g.matmul(x, w))" in proc.stderr
        assert proc.stderr.rstrip().endswith("GraphError: matmul: inner dims differ: (8, 32) @ (16, 16) (32 != 16)")
        assert f"{os.sep}ascend_compat{os.sep}" not in proc.stderr
    else:
        assert proc.stderr == "ascend-compat superopt: the graph has no output: call mark_output(tensor)\n"


@pytest.mark.parametrize(("code", "status", "says"), [
    ("5", 5, "exited with status 5"), ("0", 1, "exited with status 0"), ("None", 1, "exited with status 0"),
    ("'cannot run here'", 1, "exited with the message 'cannot run here'"),
])
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_a_file_that_exits_while_loading_says_so(tmp_path: Path, code: str, status: int, says: str,
                                                 json_flag: list[str]) -> None:
    # A SystemExit(5) at import used to end the command silently with status 5; exit 0 ran nothing and said nothing.
    (tmp_path / "quits.py").write_text(f"import sys\n\nsys.exit({code})\n")
    proc = _superopt("quits.py:graph", *json_flag, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (status, "")
    assert proc.stderr == f"ascend-compat superopt: quits.py {says} while being loaded (line 3); no graph was built\n"


def test_func_that_exits_says_so(model: Path) -> None:
    source = MODEL + "\n\ndef quits():\n    raise SystemExit(7)\n"
    (model / "model.py").write_text(source)
    proc = _superopt("model.py:quits", cwd=model)
    assert (proc.returncode, proc.stdout) == (7, "")
    line = _line("SystemExit(7)", source)
    assert proc.stderr == f"ascend-compat superopt: quits() in model.py exited with status 7 (line {line}); " \
                          "no graph was built\n"


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_out_naming_a_file_is_one_line_naming_it(model: Path, json_flag: list[str]) -> None:
    (model / "taken").write_text("the user's file\n")
    proc = _superopt("model.py:graph", "--out", "taken", *json_flag, cwd=model)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "ascend-compat superopt: --out taken: a file, not a directory\n"
    assert (model / "taken").read_text() == "the user's file\n"


def test_out_under_a_file_is_one_line_naming_the_path(model: Path) -> None:
    (model / "taken").write_text("the user's file\n")
    proc = _superopt("model.py:graph", "--out", "taken/sub", cwd=model)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith(f"ascend-compat superopt: cannot write {os.path.join('taken', 'sub')}")
    assert proc.stderr.endswith(": Not a directory\n") and "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr


def test_out_in_an_unwritable_folder_is_one_line_naming_it(model: Path) -> None:
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: every folder is writable")
    (model / "locked").mkdir()
    (model / "locked").chmod(0o555)
    env = {**_clean_env(), "NO_COLOR": "1", "ASCEND_COMPAT_CACHE_DIR": str(model / "cache")}
    try:
        argv = ["superopt", "model.py:graph", "--backend", "torch", "--out", "locked/k", "--json"]
        proc = subprocess.run([*prefix, sys.executable, "-m", "ascend_compat", *argv], capture_output=True, text=True,
                              cwd=model, env=env, timeout=300)
    finally:
        (model / "locked").chmod(0o755)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == "ascend-compat superopt: cannot write locked/k: Permission denied\n"
    assert os.listdir(model / "locked") == []


def test_an_unknown_target_is_a_usage_error_before_the_file_runs(model: Path) -> None:
    (model / "model.py").write_text("open('ran', 'w').close()\n" + MODEL)
    proc = _superopt("model.py:graph", "--target", "tpu", cwd=model)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("ascend-compat superopt: --target: unknown target 'tpu'; known: ascend-310p")
    assert not (model / "ran").exists()


def test_json_stdout_holds_only_the_report_when_the_file_prints(model: Path) -> None:
    (model / "model.py").write_text("print('loading the model file')\n" + MODEL)
    proc = _superopt("model.py:graph", "--json", "--out", "k", cwd=model)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"] == [os.path.join("k", "plan.json")]
    assert "loading the model file" in proc.stderr


def test_help_documents_the_exit_statuses() -> None:
    proc = cli("superopt", "--help", env={**_clean_env(), "COLUMNS": "200"})
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "exit status: 0 the kernels and plan.json were written 1 FILE or FUNC raised" in text
    assert "GraphError" in text and " 2 usage: " in text and "SystemExit(N)" in text


DATACLASS_FILE = """
from __future__ import annotations
from dataclasses import dataclass
import ascend_compat.superopt as yr

@dataclass
class Shape:
    m: int = 8
    k: int = 64

def build():
    s = Shape()
    g = yr.new_kernel_graph()
    g.mark_output(g.relu(g.new_input(dims=(s.m, s.k), dtype=yr.float32)))
    return g
"""


def test_a_file_defining_a_dataclass_loads_as_a_script_does(tmp_path: Path) -> None:
    # @dataclass looks its class's module up in sys.modules: a FILE loaded without registering it failed with
    # "'NoneType' object has no attribute '__dict__'" (under `from __future__ import annotations`).
    (tmp_path / "dc.py").write_text(DATACLASS_FILE)
    proc = _superopt("dc.py:build", "--out", "k", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "k" / "plan.json").is_file()


def test_a_factory_file_defining_a_dataclass_loads(tmp_path: Path) -> None:
    # The same for verify model / bench model --factory (ascend_compat._factories.load_callable).
    (tmp_path / "dc.py").write_text(DATACLASS_FILE)
    proc = subprocess.run([sys.executable, "-c", "from ascend_compat._factories import load_callable\n"
                           f"print(type(load_callable({str(tmp_path / 'dc.py:build')!r})()).__name__)"],
                          capture_output=True, text=True, timeout=120, env=_clean_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "KernelGraph"
