"""The Python scanner on its fixture corpus (TorchFix style: ``case.py`` + ``case.py.expected``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_compat.migrate.model import RULES
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


def test_precision_and_recall_on_the_corpus() -> None:
    found = {(c.name, x) for c in CASES for x in _found(c)}
    expected = {(c.name, x) for c in CASES for x in _expected(c)}
    tp = len(found & expected)
    precision = tp / len(found)
    recall = tp / len(expected)
    assert precision >= 0.98 and recall >= 0.98, (precision, recall, found ^ expected)


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
