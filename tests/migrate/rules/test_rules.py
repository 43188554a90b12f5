"""Every scanner rule on its own fixtures (TorchFix style): ``<code>_<name>.<ext>`` finds the rule,
``<code>_negative.<ext>`` holds look-alikes that must not; ``.expected`` lists every finding as ``line:col CODE``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ascend_compat.migrate.cxx import scan_cxx
from ascend_compat.migrate.model import RULES
from ascend_compat.migrate.pyscan import scan_python
from ascend_compat.migrate.rules import CXX_FAMILIES, CXX_RULES, PY_FAMILIES, PY_RULES, PyRuleFamily, family_of
from ascend_compat.migrate.rules.base import RuleDef
from ascend_compat.migrate.rules.pycontext import PyContext

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"
CASES = sorted(p for p in FIXTURES.rglob("AC*") if p.suffix != ".expected")


def _found(path: Path) -> list[str]:
    scan = scan_python if path.suffix == ".py" else scan_cxx
    result = scan(str(path), path.read_text("utf-8"))
    return [f"{f.line}:{f.col} {f.code}" for f in result.findings]  # type: ignore[union-attr]


def _expected(path: Path) -> list[str]:
    return [ln.strip() for ln in Path(f"{path}.expected").read_text().splitlines() if ln.strip()]


def _codes(lines: list[str]) -> set[str]:
    return {ln.split()[1] for ln in lines}


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_rule_fixture(case: Path) -> None:
    found = _found(case)
    assert found == _expected(case)
    code = case.name[:5]
    if case.stem.endswith("_negative"):
        assert code not in _codes(found), f"{case.name}: a look-alike was reported as {code}"
    else:
        assert code in _codes(found), f"{case.name}: {code} not found"


@pytest.mark.parametrize(("rules", "folder"), [(PY_RULES, "python"), (CXX_RULES, "cxx")], ids=["python", "cxx"])
def test_every_rule_has_a_positive_and_a_negative_fixture(rules: tuple[RuleDef, ...], folder: str) -> None:
    names = [p.name for p in (FIXTURES / folder).iterdir() if p.suffix != ".expected"]
    for rule in rules:
        mine = [n for n in names if n.startswith(f"{rule.code}_")]
        assert any("_negative." not in n for n in mine), f"{rule.code} has no positive fixture"
        assert any("_negative." in n for n in mine), f"{rule.code} has no negative fixture"


def test_registry_collects_every_family_and_registers_its_rules() -> None:
    assert len(PY_RULES) == 43 and len(CXX_RULES) == 19
    for family in (*PY_FAMILIES, *CXX_FAMILIES):
        assert family.RULES and family.TITLE, family
        for rule in family.RULES:
            assert RULES[rule.code] is rule and family_of(rule.code) is family
            assert rule.source and rule.message and rule.alternative, rule.code
            assert rule.language == ("python" if family in PY_FAMILIES else "cxx"), rule.code
    with pytest.raises(KeyError):
        family_of("AC999")


def test_every_python_family_takes_part_in_the_walk() -> None:
    for family in PY_FAMILIES:
        assert family.hooks(), f"{family.__name__} overrides no hook"


def test_a_family_reports_only_its_own_rules() -> None:
    tree = ast.parse("x = 1\n")
    family = PY_FAMILIES[0](PyContext("f.py", "x = 1\n", tree, "2.8"))
    foreign = next(r.code for r in PY_RULES if r.code not in family.codes())
    with pytest.raises(ValueError, match="not one of its rules"):
        family.add(foreign, tree.body[0], "message")
    assert isinstance(family, PyRuleFamily)


def test_a_rule_must_name_its_source() -> None:
    with pytest.raises(ValueError, match="source"):
        RuleDef(code="AC999", name="x", category="device", level="note", message="m", alternative="a",
                shim_handles=False, fixable=False, difficulty="easy", effort_days=0.0)
