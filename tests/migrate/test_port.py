"""``port`` on its fixture corpus (``case.in.py`` → ``case.out.py`` native, ``case.shim.py`` shim)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_compat.migrate.port import PortFailure, PortSkip, PortSuccess, port_source, write_atomic

FIXTURES = Path(__file__).parent / "fixtures" / "port"
CASES = sorted(FIXTURES.glob("*.in.py"))


def _port(path: str, text: str, mode: str) -> str:
    r = port_source(path, text, mode)
    assert not isinstance(r, PortFailure), r
    return r.text if isinstance(r, PortSuccess) else text


@pytest.mark.parametrize("mode,suffix", [("native", ".out.py"), ("shim", ".shim.py")])
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name[: -len(".in.py")])
def test_fixture(case: Path, mode: str, suffix: str) -> None:
    text = case.read_text("utf-8")
    expected = Path(str(case)[: -len(".in.py")] + suffix).read_text("utf-8")
    out = _port(str(case), text, mode)
    assert out == expected
    ast.parse(out)
    assert _port(str(case), out, mode) == out  # idempotent


def test_change_list_names_lines_and_rules() -> None:
    text = 'import torch\nx = torch.ones(1).cuda()  # note\n'
    r = port_source("f.py", text, "native")
    assert isinstance(r, PortSuccess)
    assert [(c.line, c.before, c.after, c.code) for c in r.changes] == [
        (2, "", "import torch_npu  # noqa: F401  (registers the npu device; added by ascend-compat port)", "IMPORT"),
        (2, "x = torch.ones(1).cuda()  # note", "x = torch.ones(1).npu()  # note", "AC101"),
    ]
    assert "-x = torch.ones(1).cuda()  # note" in r.diff()


def test_unparsable_file_is_a_failure_not_a_rewrite() -> None:
    r = port_source("bad.py", "x = torch.ones(1).cuda(\n", "native")
    assert isinstance(r, PortFailure) and "syntax error" in r.error


def test_crlf_line_endings_survive() -> None:
    text = 'import torch\r\nx = torch.ones(1).cuda()\r\n'
    r = port_source("f.py", text, "native")
    assert isinstance(r, PortSuccess)
    assert r.text.count("\r\n") == r.text.count("\n") == 3


def test_file_without_trailing_newline_in_shim_mode() -> None:
    r = port_source("f.py", '"""Doc."""', "shim")
    assert isinstance(r, PortSkip)
    r = port_source("f.py", '"""Doc."""\nimport torch\ntorch.cuda.synchronize()', "shim")
    assert isinstance(r, PortSuccess)
    expected = '"""Doc."""\nimport ascend_compat\nascend_compat.activate()\nimport torch\ntorch.cuda.synchronize()'
    assert r.text == expected


def test_existing_activation_is_not_inserted_twice() -> None:
    text = "import ascend_compat\nascend_compat.activate()\nimport torch\nx = torch.ones(1).cuda()\n"
    assert isinstance(port_source("f.py", text, "shim"), PortSkip)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ascend_compat", *args], capture_output=True, text=True, timeout=300)


def test_cli_diff_write_output_and_failures(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    train = src / "pkg" / "train.py"
    train.write_text("import torch\nx = torch.ones(1).cuda()\n")
    broken = src / "pkg" / "broken.py"
    broken.write_text("x = torch.ones(1).cuda(\n")
    before = {p: p.read_bytes() for p in (train, broken)}

    r = _cli("port", str(src), "--no-git")  # default: a diff, nothing written
    assert r.returncode == 3  # broken.py could not be ported
    assert "+x = torch.ones(1).npu()" in r.stdout and "broken.py: not ported" in r.stderr
    assert {p: p.read_bytes() for p in before} == before

    out = tmp_path / "adapted"
    r = _cli("port", str(src), "--no-git", "--output", str(out))
    assert (out / "pkg" / "train.py").read_text().endswith("x = torch.ones(1).npu()\n")
    assert not (out / "pkg" / "broken.py").exists()
    assert {p: p.read_bytes() for p in before} == before  # originals untouched

    r = _cli("port", str(train), "--write", "--json")
    data = json.loads(r.stdout)
    assert data["written"] == [str(train)] and data["files"][0]["changes"][-1]["code"] == "AC101"
    assert "npu()" in train.read_text()
    assert broken.read_bytes() == before[broken]
    assert not list(src.rglob(".ascend-compat-*"))  # no temporary files left behind
    r = _cli("port", str(train), "--write")  # idempotent on disk
    assert "rewrote 0 file(s)" in r.stderr


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.py"
    target.write_text("old\n")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(str(target), "new\n")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["f.py"]
