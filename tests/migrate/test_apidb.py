"""The torch_npu API support data (``migrate/data/torch_npu_api_support.json``) and its queries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_compat.migrate import apidb
from tests.conftest import load_tool

ROOT = Path(__file__).resolve().parents[2]
# The shared reference lists beside the checkout (../shared/reference), wherever the repository is.
REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "torch_npu_api_support"
needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference lists are not on this machine")


def _reference_list(stem: str, line: str) -> set[str]:
    return set(json.loads((REFERENCE / f"{stem}_{line.replace('.', '_')}.json").read_text())["op_list"])


def test_data_header_and_lines() -> None:
    data = apidb._db()
    assert "Ascend/msprobe" in apidb.source() and "81f0042c" in apidb.source()
    assert apidb.LINES == ("2.1", "2.6", "2.7", "2.8") and apidb.DEFAULT_LINE == "2.8"
    summary = apidb.summary()
    assert list(summary) == list(apidb.LINES)
    for line, counts in summary.items():
        assert counts["supported"] > 2500 and counts["unsupported"] > 200, line
        sets = apidb.known_apis(line)
        assert not sets["supported"] & sets["unsupported"], line
    every = set(data.supported) | set(data.unsupported)
    assert all(name.startswith("torch.") for name in every)
    assert all(0 < mask < 1 << len(apidb.LINES) for mask in {*data.supported.values(), *data.unsupported.values()})


@pytest.mark.parametrize(
    "api,line,expected",
    [
        ("torch.cdist", "2.8", "unsupported"),
        ("torch.cdist", "2.1", "unsupported"),
        ("torch.compile", "2.6", "unsupported"),
        ("torch.compile", "2.1", "supported"),  # supported_op_2_1; unsupported from 2.6 on
        ("torch.unique_consecutive", "2.7", "supported"),  # supported_op_2_7 only
        ("torch.unique_consecutive", "2.8", "unsupported"),
        ("torch.nn.Module.xpu", "2.8", "unsupported"),
        ("torch.is_tensor", "2.8", "supported"),
        ("torch.nn.functional.gelu", "2.8", "supported"),
        ("torch.cuda.amp.autocast", "2.6", "supported"),
        ("torch.Tensor.cuda", "2.7", "supported"),
        ("torch.nn.Module.cuda", "2.1", "supported"),
        ("torch.optim.AdamW.step", "2.8", "supported"),
        ("torch.no_such_api", "2.8", "unknown"),
        ("torch.cuda.no_such_api", "2.1", "unknown"),
        ("to_sparse", "2.8", "unknown"),  # a bare list artefact, dropped by the generator
    ],
)
def test_known_facts(api: str, line: str, expected: str) -> None:
    assert apidb.status(api, line) == expected


def test_default_line_and_unnormalized_line() -> None:
    assert apidb.status("torch.cdist") == apidb.status("torch.cdist", "2.8")
    assert apidb.status("torch.compile", "v2.6.0.post3") == "unsupported"
    assert apidb.status("torch.compile", "2.9") == "unsupported"


def test_class_level_members_inherit_and_itemised_classes_do_not() -> None:
    assert "torch.nn.Conv2d" in apidb._db().class_level
    assert apidb.status("torch.nn.Conv2d.forward") == "supported"
    assert apidb.status("torch.nn.DataParallel") == "unsupported"
    assert apidb.status("torch.nn.DataParallel.forward") == "unsupported"
    # Itemised classes: torch.nn.Module is supported, its unlisted members stay unknown.
    assert apidb.status("torch.nn.Module") == "supported"
    assert apidb.status("torch.nn.Module.no_such_method") == "unknown"
    assert apidb.status("torch.Tensor.no_such_method") == "unknown"
    # One level only, and modules are not classes.
    assert apidb.status("torch.nn.Conv2d.weight.data") == "unknown"
    assert apidb.status("torch.nn.functional.no_such_function") == "unknown"
    # No invented equivalences between spellings.
    assert apidb.status("torch.autocast") == "unknown"


def test_class_level_classes_have_no_listed_members() -> None:
    data = apidb._db()
    every = set(data.supported) | set(data.unsupported)
    for cls in data.class_level:
        assert cls in every and not any(name.startswith(cls + ".") for name in every), cls


@pytest.mark.parametrize(
    "given,line",
    [("2.6", "2.6"), ("2.6.0", "2.6"), ("2.6.0.post3", "2.6"), ("v2.6", "2.6"), (" 2.8.0+cpu ", "2.8"),
     ("2.1.0rc1", "2.1"), ("2.4", "2.1"), ("2.9", "2.8"), ("2.10.0", "2.8")],
)
def test_normalize_line(given: str, line: str) -> None:
    assert apidb.normalize_line(given) == line


@pytest.mark.parametrize("bad", ["1.11", "2.0.1", "3.0", "latest", "2", ""])
def test_normalize_line_rejects_with_the_known_lines(bad: str) -> None:
    with pytest.raises(ValueError, match=r"2\.1, 2\.6, 2\.7, 2\.8"):
        apidb.normalize_line(bad)


def test_line_note() -> None:
    assert apidb.line_note("2.6.0") is None
    assert "newest" in (apidb.line_note("2.9") or "")
    assert "2.1" in (apidb.line_note("2.4") or "")


def test_advice_entries_are_sourced_and_typed() -> None:
    data = apidb._db()
    assert len(data.advice) >= 19
    for api in data.advice:
        adv = apidb.advice(api)
        assert adv is not None and adv.api == api
        assert adv.kind in ("precision", "performance") and adv.text and "81f0042c" in adv.source
        assert adv.replacement is None or "." in adv.replacement
    assert apidb.advice("torch.optim.AdamW").replacement == "apex.optimizers.NpuFusedAdamW"  # type: ignore[union-attr]
    assert apidb.advice("torch.baddbmm").kind == "precision"  # type: ignore[union-attr]
    assert apidb.advice("torch.add") is None
    for api in data.params:
        for item in apidb.parameter_advice(api):
            assert item.text and "81f0042c" in item.source and all(p >= 0 for p in item.positions)
    pin = {p.param: p for p in apidb.parameter_advice("torch.utils.data.DataLoader")}["pin_memory"]
    assert pin.recommended == "True" and pin.positions == (7,)
    assert apidb.parameter_advice("torch.add") == ()


def test_affinity() -> None:
    roll = apidb.affinity("torch.roll")
    assert roll is not None and roll.kind == "api" and roll.replacement == "torch_npu.contrib.function.roll"
    focus = apidb.affinity("Focus")
    assert focus is not None and focus.kind == "class" and focus.base == "torch.nn.Module" and "c1" in focus.params
    for name in apidb._db().affinity:
        aff = apidb.affinity(name)
        assert aff is not None and aff.replacement.startswith("torch_npu.contrib.") and "81f0042c" in aff.source
    assert apidb.affinity("torch.add") is None


def test_loading_is_lazy() -> None:
    code = (
        "from ascend_compat.migrate import apidb\n"
        "assert apidb._db.cache_info().currsize == 0\n"
        "apidb.status('torch.cdist')\n"
        "assert apidb._db.cache_info().currsize == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@needs_reference
def test_committed_data_is_what_the_generator_builds() -> None:
    gen = load_tool("build_api_support")
    assert gen.render(gen.build(REFERENCE)) == gen.OUT.read_text(encoding="utf-8")


@needs_reference
@pytest.mark.parametrize("line", apidb.LINES)
def test_statuses_match_the_reference_lists(line: str) -> None:
    sets = apidb.known_apis(line)
    assert sets["unsupported"] == {n for n in _reference_list("op_list", line) if n.startswith("torch.")}
    assert sets["supported"] == {n for n in _reference_list("supported_op", line) if n.startswith("torch.")}


@needs_reference
def test_advice_texts_are_reworded() -> None:
    original = json.loads((REFERENCE / "precision_performance_advice.json").read_text())
    theirs = {**original["api_precision_dict"], **original["api_performance_dict"]}
    assert set(theirs) == set(apidb._db().advice)
    sentences = {s.strip().lower() for text in theirs.values() for s in text.replace("\n", ". ").split(".") if s}
    theirs_params = [spec["msg"] for entry in original["api_parameters_performance_dict"].values()
                     for spec in entry["parameter"].values()]
    ours = [a.text for a in apidb._db().advice.values()]
    ours += [p.text for items in apidb._db().params.values() for p in items]
    for text in ours:
        assert text not in theirs.values() and text not in theirs_params
        for sentence in text.split("."):
            assert sentence.strip().lower() not in sentences or len(sentence.strip()) < 20, sentence
