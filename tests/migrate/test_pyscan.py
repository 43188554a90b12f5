"""The Python scanner on its fixture corpus (TorchFix style: ``case.py`` + ``case.py.expected``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ascend_compat.migrate.model import RULES, FileScanned
from ascend_compat.migrate.pyscan import scan_python

FIXTURES = Path(__file__).parent / "fixtures" / "python"
CASES = sorted(p for p in FIXTURES.glob("*.py"))


def _found(path: Path) -> list[str]:
    result = scan_python(str(path), path.read_text("utf-8"))
    return [f"{f.line}:{f.col} {f.code}" for f in result.findings]


def _expected(path: Path) -> list[str]:
    return [ln.strip() for ln in Path(f"{path}.expected").read_text().splitlines() if ln.strip()]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_fixture(case: Path) -> None:
    assert _found(case) == _expected(case)


# The corpus's one-line statements, moved into other blocks: the scanner must find the same things there. The
# fixture test above checks each file exactly as written, so this is the check that can fail on its own (a block
# kind whose body the walk skips, positions computed from the wrong line).
CONTEXTS = {
    "function": "def _ctx():\n",
    "async function": "async def _ctx():\n",
    "method": "class _Ctx:\n    def m(self):\n",
    "with": "with open('f') as _fh:\n",
    "async with": "async def _ctx():\n    async with _lock:\n",
    "except": "try:\n    pass\nexcept Exception:\n",
    "loop": "for _i in range(1):\n",
}


def _one_line_statements(text: str) -> tuple[list[str], dict[int, str]]:
    """The top-level imports, and line number -> source of each other top-level statement that fits on its
    line (the statements that can move into a block as they are)."""
    tree = ast.parse(text)
    lines = text.splitlines()
    imports = [ast.get_source_segment(text, n) or "" for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    movable = {n.lineno: lines[n.lineno - 1] for n in tree.body if n.lineno == n.end_lineno
               and n.col_offset == 0 and isinstance(n, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign))}
    return [ln for imp in imports for ln in imp.splitlines()], movable


def _embedded(case: Path, header: str) -> tuple[set[tuple], set[tuple]]:
    """(found, expected) findings when the case's one-line statements sit inside the block ``header`` opens."""
    text = case.read_text("utf-8")
    expected_by_line: dict[int, list[tuple[int, str]]] = {}
    for x in _expected(case):
        pos, code = x.split()
        line, col = pos.split(":")
        expected_by_line.setdefault(int(line), []).append((int(col), code))
    imports, movable = _one_line_statements(text)
    indent = " " * (len(header.splitlines()[-1]) - len(header.splitlines()[-1].lstrip()) + 4)
    body = [*imports, *header.rstrip("\n").splitlines()]
    expected = set()
    body.append(indent + "pass")  # a case with no movable statement still parses
    for lineno, src in sorted(movable.items()):
        body.append(indent + src)
        expected |= {(case.stem, len(body), col + len(indent), code) for col, code in expected_by_line.get(lineno, [])}
    result = scan_python(str(case), "\n".join(body) + "\n")
    assert isinstance(result, FileScanned), result
    # Findings on the imports are the fixture test's business: only the moved statements are measured.
    found = {(case.stem, f.line, f.col, f.code) for f in result.findings if f.line > len(imports)}
    return found, expected


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_precision_and_recall_inside_blocks(context: str) -> None:
    found: set[tuple] = set()
    expected: set[tuple] = set()
    for case in CASES:
        f, e = _embedded(case, CONTEXTS[context])
        found |= f
        expected |= e
    assert len(expected) >= 60, "the corpus lost its one-line statements"
    tp = len(found & expected)
    precision = tp / max(len(found), 1)
    recall = tp / len(expected)
    assert precision >= 0.98 and recall >= 0.98, (precision, recall, sorted(found ^ expected)[:20])


def test_every_python_rule_has_a_fixture() -> None:
    covered = {x.split()[1] for c in CASES for x in _expected(c)}
    # Other test modules register test-only rules (ACTnn): only the product's codes count here.
    python_rules = {code for code, rule in RULES.items() if rule.language == "python" and code[2:].isdigit()}
    assert python_rules - covered == set()


def test_findings_carry_the_rule_data() -> None:
    result = scan_python("f.py", 'import torch\nx = torch.ones(1).cuda()\ntorch.cuda.CUDAGraph()\n')
    by_code = {f.code: f.to_dict() for f in result.findings}
    cuda = by_code["AC101"]
    assert cuda["category"] == "device" and cuda["fixable"] and cuda["shim_handles"]
    assert cuda["effort_days"] == 0.0  # port fixes it
    graph = by_code["AC504"]
    assert not graph["fixable"] and graph["effort_days"] > 0 and graph["alternative"]


def test_python2_file_fails_cleanly() -> None:
    result = scan_python("old.py", 'print "hello"\n')
    assert result.status == "failed" and "line 1" in result.error


def test_torch_api_inventory_resolves_aliases() -> None:
    code = "import torch.nn.functional as F\nfrom torch import nn\ny = F.gelu(nn.Linear(2, 2)(x))\n"
    result = scan_python("f.py", code)
    assert result.apis == {"torch.nn.functional.gelu": 1, "torch.nn.Linear": 1}


def test_non_ascii_columns_are_characters() -> None:
    result = scan_python("f.py", 'import torch\nt = ("é", torch.ones(1).cuda())\n')
    (f,) = [f for f in result.findings if f.code == "AC101"]
    line = 't = ("é", torch.ones(1).cuda())'
    assert f.col == line.index("torch.ones") + 1  # the call expression starts there, counted in characters


@pytest.mark.parametrize("call, method_id", [
    ("AutoModelForCausalLM.from_pretrained('m', load_in_8bit=True)", "bitsandbytes-8bit"),
    ("BitsAndBytesConfig(load_in_4bit=True)", "bitsandbytes-4bit"),
    ("GPTQConfig(bits=4)", "gptq"),
])
def test_quantization_findings_are_judged_by_the_quant_table(call: str, method_id: str) -> None:
    from ascend_compat.ecosystem import quantization

    src = f"from transformers import AutoModelForCausalLM, BitsAndBytesConfig, GPTQConfig\nx = {call}\n"
    (finding,) = [f for f in scan_python("q.py", src).findings if f.code == "AC508"]
    method = quantization.get(method_id)
    assert method.name in finding.message
    assert finding.alternative == method.alternative
    assert finding.level == {"yes": "note", "partial": "warning", "no": "error"}[method.ascend]
