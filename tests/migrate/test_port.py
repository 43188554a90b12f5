"""``port`` on its fixture corpus (``case.in.py`` → ``case.out.py`` native, ``case.shim.py`` shim)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ascend_compat.migrate.port import PortFailure, PortSkip, PortSuccess, port_source

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
    assert r.text == '"""Doc."""\nimport ascend_compat\nascend_compat.activate()\nimport torch\ntorch.cuda.synchronize()'


def test_existing_activation_is_not_inserted_twice() -> None:
    text = "import ascend_compat\nascend_compat.activate()\nimport torch\nx = torch.ones(1).cuda()\n"
    assert isinstance(port_source("f.py", text, "shim"), PortSkip)
