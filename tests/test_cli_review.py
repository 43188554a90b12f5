"""Adversarial review of the CLI fixes (helper-56): which top-level files ``report --verify`` may import, and
``ascend-compat run`` behaving as ``python`` does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_compat.migrate.report_scripts import top_level_modules

#: Each case: files of a flat repository; the module ``a`` must not be marked importable, since importing it
#: creates the file ``ran`` (checked below, so that a case that runs nothing cannot pass for the wrong reason).
HOLES = {
    "local decorator": {"a.py": "def deco(f):\n    open('ran', 'w')\n    return f\n\n@deco\ndef g():\n    pass\n"},
    "local decorator factory": {
        "a.py": "def make():\n    open('ran', 'w')\n    return lambda f: f\n\n@make()\ndef g():\n    pass\n"},
    "local class decorator on a method": {
        "a.py": "def deco(f):\n    open('ran', 'w')\n    return f\n\nclass A:\n    @deco\n    def m(self):\n"
                "        pass\n"},
    "decorator from a sibling file": {
        "a.py": "import hooks\n\n@hooks.deco\ndef g():\n    pass\n",
        "hooks.py": "def deco(f):\n    open('ran', 'w')\n    return f\n"},
    "decorator from a star import": {
        "a.py": "from hooks import *\n\n@deco\ndef g():\n    pass\n",
        "hooks.py": "def deco(f):\n    open('ran', 'w')\n    return f\n"},
    "local metaclass": {
        "a.py": "class M(type):\n    def __new__(m, *a):\n        open('ran', 'w')\n"
                "        return type.__new__(m, *a)\n\nclass A(metaclass=M):\n    pass\n"},
    "__init_subclass__": {"a.py": "class B:\n    def __init_subclass__(cls):\n        open('ran', 'w')\n\n"
                                  "class A(B):\n    pass\n"},
    "__init_subclass__ of a sibling's class": {
        "a.py": "from base import B\n\nclass A(B):\n    pass\n",
        "base.py": "class B:\n    def __init_subclass__(cls):\n        open('ran', 'w')\n"},
    "__name__ rebound": {"a.py": "__name__ = '__main__'\nif __name__ == '__main__':\n    open('ran', 'w')\n"},
    "__name__ rebound by a walrus": {
        "a.py": "X = (__name__ := '__main__')\nif __name__ == '__main__':\n    open('ran', 'w')\n"},
    "__name__ from an import": {
        "a.py": "from consts import MAIN as __name__\nif __name__ == '__main__':\n    open('ran', 'w')\n",
        "consts.py": "MAIN = '__main__'\n"},
    "star import of setup.py": {"a.py": "from setup import *\n", "setup.py": "open('ran', 'w')\n"},
    "import of conftest.py": {"a.py": "import conftest\n", "conftest.py": "open('ran', 'w')\n"},
    "import of a test file": {"a.py": "from test_data import X\n", "test_data.py": "X = open('ran', 'w')\n"},
    "module __getattr__ of a sibling": {
        "a.py": "from lazy import anything\n",
        "lazy.py": "def __getattr__(name):\n    open('ran', 'w')\n    return 1\n"},
    "script in a folder without __init__": {"a.py": "from scripts.train import x\n",
                                           "scripts/train.py": "open('ran', 'w')\nx = 1\n"},
    "package __init__ with code": {"a.py": "import tools\n", "tools/__init__.py": "open('ran', 'w')\n"},
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.mark.parametrize("case", sorted(HOLES))
def test_a_top_level_file_whose_import_runs_code_is_not_importable(tmp_path: Path, case: str) -> None:
    _write(tmp_path, HOLES[case])
    safe, left_out = top_level_modules(str(tmp_path))
    assert "a" not in safe and "a" in left_out
    # The case is real: importing ``a`` runs code.
    subprocess.run([sys.executable, "-c", "import a"], cwd=tmp_path, capture_output=True, timeout=60)
    assert (tmp_path / "ran").exists()


MODEL = '''"""A nanoGPT-like model file."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

from utils import helper


class LayerNorm(nn.Module):
    def __init__(self, ndim: int, bias: bool = True) -> None:
        super().__init__()


class Block(LayerNorm):
    @torch.no_grad()
    def forward(self, x):
        return helper(F.gelu(x)) * math.sqrt(2)

    @property
    def size(self):
        return 1

    @staticmethod
    def make():
        return Block(1)


@dataclass
class GPTConfig:
    block_size: int = 1024
    bias: bool = True


if __name__ == "__main__":
    open("ran", "w").close()
'''


def test_a_definitions_only_model_file_stays_importable(tmp_path: Path) -> None:
    _write(tmp_path, {"model.py": MODEL, "utils.py": "def helper(x):\n    return x\n",
                      "pkg/__init__.py": "X = open('ran', 'w')\n", "uses_pkg.py": "from pkg import X\n"})
    safe, left_out = top_level_modules(str(tmp_path))
    assert safe == ["model", "utils"], left_out
    # A package that report --verify imports anyway may be imported by a top-level file too.
    safe, _ = top_level_modules(str(tmp_path), imported=["pkg"])
    assert safe == ["model", "uses_pkg", "utils"]


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    return subprocess.run([sys.executable, "-m", "ascend_compat", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_run_gives_the_script_an_absolute_file_as_python_does(tmp_path: Path) -> None:
    # python 3.9+ makes __main__.__file__ absolute, so a script that changes directory still finds its files.
    (tmp_path / "s.py").write_text("import os, sys\nos.chdir('/')\nprint(os.path.isfile(__file__), sys.argv[0])\n"
                                   "raise SystemExit(3)\n")
    python = subprocess.run([sys.executable, "s.py"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    ours = _cli(["run", "s.py"], tmp_path)
    assert python.stdout == "True s.py\n"
    assert (ours.returncode, ours.stdout) == (python.returncode, python.stdout), ours.stderr


def test_a_piped_script_is_compiled_without_our_future_imports(tmp_path: Path) -> None:
    # runner.py has `from __future__ import annotations`; compile() inherits it unless told not to, which turned
    # the piped script's annotations into strings (pydantic, typing.get_type_hints, dataclass field types).
    source = "def f(x: int): pass\nprint(f.__annotations__)\n"
    python = subprocess.run([sys.executable, "-"], input=source, capture_output=True, text=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    ours = subprocess.run([sys.executable, "-m", "ascend_compat", "run", "-"], input=source, capture_output=True,
                          text=True, env=env, timeout=120, cwd=tmp_path)
    assert python.stdout == "{'x': <class 'int'>}\n"
    assert (ours.returncode, ours.stdout) == (0, python.stdout), ours.stderr


def _closed_stdout(cmd: list[str], cwd: Path) -> tuple[int, str]:
    """Exit code and stderr of ``cmd`` whose stdout is a pipe with no reader left (``cmd | head`` after head)."""
    r, w = os.pipe()
    os.close(r)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    try:
        done = subprocess.run(cmd, stdout=w, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, timeout=300)
    finally:
        os.close(w)
    return done.returncode, done.stderr


def test_a_closed_reader_leaves_the_scripts_own_exit_code_and_errors_as_python_gives_them(tmp_path: Path) -> None:
    # 141 is for our own output: under `run` the script meets the closed pipe as it does under python.
    (tmp_path / "s.py").write_text("import sys\ntry:\n    print('x' * 100000, flush=True)\nexcept BrokenPipeError:\n"
                                   "    sys.stderr.write('caught\\n')\nsys.exit(5)\n")
    (tmp_path / "t.py").write_text("print('x' * 100000, flush=True)\n")
    for script in ("s.py", "t.py"):
        code, err = _closed_stdout([sys.executable, script], tmp_path)
        ours, our_err = _closed_stdout([sys.executable, "-m", "ascend_compat", "run", script], tmp_path)
        assert ours == code != 141
        assert our_err.splitlines()[-1] == err.splitlines()[-1]


def test_a_large_json_report_to_a_closed_reader_exits_141_quietly(tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text("import torch\n" + "torch.cuda.synchronize()\n" * 50)
    code, err = _closed_stdout([sys.executable, "-m", "ascend_compat", "check", str(tmp_path), "--no-git", "--json"],
                               tmp_path)
    assert (code, err) == (141, "")


def _scanned(args: list[str], cwd: Path) -> list[tuple[str, str]]:
    import json

    done = _cli(["check", *args, "--json"], cwd)
    return [(f["path"], f.get("error") or "") for f in json.loads(done.stdout)["files"]]


CUDA = "import torch\ntorch.cuda.synchronize()\n"


def test_a_folder_named_twice_or_through_a_symlink_is_scanned_once(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.py").write_text(CUDA)
    (tmp_path / "d" / "sub" / "b.py").write_text(CUDA)
    (tmp_path / "alias").symlink_to("d")
    assert _scanned(["d", "d/", "alias", "d/a.py", "--no-git"], tmp_path) == [("d/a.py", ""), ("d/sub/b.py", "")]


def test_the_files_of_a_git_submodule_are_scanned(tmp_path: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"]
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "s.py").write_text(CUDA)
    subprocess.run([*git, "init", "-q"], cwd=tmp_path / "lib", check=True)
    subprocess.run([*git, "add", "s.py"], cwd=tmp_path / "lib", check=True)
    subprocess.run([*git, "commit", "-qm", "s"], cwd=tmp_path / "lib", check=True)
    (tmp_path / "main").mkdir()
    (tmp_path / "main" / "a.py").write_text(CUDA)
    subprocess.run([*git, "init", "-q"], cwd=tmp_path / "main", check=True)
    subprocess.run([*git, "submodule", "add", "-q", "../lib", "sub"], cwd=tmp_path / "main", check=True,
                   capture_output=True)
    (tmp_path / "main" / "sub" / "new.py").write_text(CUDA)  # untracked in the submodule: scanned as in main
    assert _scanned(["main"], tmp_path) == [("main/a.py", ""), ("main/sub/new.py", ""), ("main/sub/s.py", "")]


def test_a_folder_it_cannot_list_named_twice_is_one_failure(tmp_path: Path) -> None:
    import shutil

    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: every folder is readable")
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.py").write_text(CUDA)
    (tmp_path / "d" / "sub").chmod(0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    try:
        done = subprocess.run([*prefix, sys.executable, "-m", "ascend_compat", "check", "d", "d", "--no-git", "--json"],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    finally:
        (tmp_path / "d" / "sub").chmod(0o755)
    import json

    errors = [f["path"] for f in json.loads(done.stdout)["files"] if f.get("error")]
    assert (done.returncode, errors) == (3, [f"d{os.sep}sub{os.sep}"])


def test_a_broken_pipe_that_is_not_stdout_is_reported_not_hidden(tmp_path: Path) -> None:
    # 141 means "stdout's reader went away"; a BrokenPipeError from another pipe or socket (a user's factory, a
    # child process) while stdout is fine is an error, with its traceback.
    code = ("import sys\nfrom ascend_compat.cli import info\n"
            "def boom(args):\n    raise BrokenPipeError(32, 'a socket of the user')\n"
            "info.main = boom\nfrom ascend_compat.cli.main import main\nsys.exit(main(['info']))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "BrokenPipeError: [Errno 32] a socket of the user" in done.stderr
