"""``check``'s output formats, on hand-built scan results (test-only rules, so no scanner is involved)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from ascend_compat import __version__
from ascend_compat.migrate.model import (
    RULES,
    Edit,
    FileFailed,
    FileScanned,
    FileSkipped,
    Finding,
    Rule,
    ScanResult,
    register_rules,
)
from ascend_compat.migrate.render import FORMATS, md_code, render, render_json, render_markdown, render_sarif

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

TEST_RULES = (
    Rule("ACT01", "test-cuda-call", "device", "warning", "test: CUDA call", "`.npu()`", True, True, "trivial", 0.02),
    Rule("ACT02", "test-kernel", "custom_kernel", "error", "test: CUDA kernel", "an Ascend C kernel", False, False,
         "hard", 5.0, "cxx"),
    Rule("ACT03", "test-flag", "blas_dnn", "note", "test: CUDA-only flag", "", True, False, "trivial", 0.0),
    Rule("ACT04", "test-attention", "attention", "warning", "test: flash attention | pipes",
         "torch_npu.npu_fusion_attention", False, False, "medium", 0.5),
)


@pytest.fixture(autouse=True)
def _test_rules() -> Iterator[None]:
    # Registered only while a test runs: other tests check every registered rule against the real scanners.
    register_rules(*TEST_RULES)
    yield
    for rule in TEST_RULES:
        RULES.pop(rule.code, None)


def _finding(code: str, path: str, line: int, col: int, **kw) -> Finding:
    return Finding(code=code, path=path, line=line, col=col, message=kw.pop("message", f"{code} here"), **kw)


def make_result(root: Path) -> ScanResult:
    """Two scanned files with findings, a clean one, a failed and a skipped file."""
    train = str(root / "train.py")
    kern = str(root / "csrc" / "kernel.cu")
    return ScanResult(
        roots=[str(root)],
        files=[
            FileScanned(kern, "cxx", 40, [_finding("ACT02", kern, 7, 3, end_line=7, end_col=20, api="k<<<>>>")]),
            FileScanned(str(root / "clean.py"), "python", 3),
            FileFailed(str(root / "old.py"), "python", "syntax error at line 1: invalid syntax", 2),
            FileSkipped(str(root / "big.py"), "python", "larger than 8 MiB (9000000 bytes)"),
            FileScanned(train, "python", 20, [
                _finding("ACT01", train, 2, 7, end_line=2, end_col=11, api="torch.Tensor.cuda",
                         edits=(Edit(6, 10, "npu"),)),
                _finding("ACT03", train, 3, 1, api="torch.backends.cudnn.benchmark"),
                _finding("ACT04", train, 5, 5, end_line=6, end_col=2, api="flash_attn.flash_attn_func",
                         message="flash_attn | call"),
                # Out-of-range positions must not reach SARIF regions.
                _finding("ACT01", train, 9, 0, end_line=8, end_col=0, api="torch.Tensor.cuda"),
            ], apis={"torch.Tensor.cuda": 2, "torch.cdist": 1}, imports=["flash_attn", "torch"]),
        ],
        torch_npu="2.8",
        elapsed_s=1.23456,
        api_inventory={
            "torch.Tensor.cuda": {"count": 2, "status": "supported"},
            "torch.cdist": {"count": 1, "status": "unsupported"},
            "torch.foo": {"count": 4, "status": "unknown"},
        },
    )


def sarif_errors(doc: dict) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=jsonschema.FormatChecker())
    return sorted(f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc))


def expected_effort() -> tuple[str, str]:
    """make_result's effort as the renderers print it: hand-edit classes ACT02 and ACT04 (one manual_class unit
    each) and the class of port's ACT01 rewrites (one mechanical_class); what the shim handles (ACT01 unfixed,
    ACT03) costs nothing (migrate/data/effort.json)."""
    from ascend_compat.migrate.effort import cost
    from ascend_compat.migrate.render import format_days

    manual, mech = cost("manual_class"), cost("mechanical_class")
    return format_days(2 * manual.low + mech.low), format_days(2 * manual.high + mech.high)


# ---------------------------------------------------------------------------------------------------- JSON


def test_json_round_trips_to_dict(tmp_path: Path) -> None:
    result = make_result(tmp_path)
    text = render_json(result)
    assert json.loads(text) == result.to_dict()
    assert render(result, "json") == text
    assert text.startswith('{\n  "schema_version": 1')  # indented, in to_dict's order


# ---------------------------------------------------------------------------------------------------- text


def test_text_without_color_has_no_ansi_and_lists_everything(tmp_path: Path) -> None:
    result = make_result(tmp_path)
    text = render(result, "text", False)
    assert not ANSI.search(text)
    train = str(tmp_path / "train.py")
    assert f"{train}:2:7: ACT01 warning: ACT01 here" in text
    assert "-> `.npu()` [shim handles, port fixes]" in text
    assert "-> torch_npu.npu_fusion_attention [manual]" in text
    assert "[shim handles]" in text  # ACT03: no alternative, only the handling
    # Grouped by file: the kernel's findings come before train.py's, each under its file header.
    assert text.index(str(tmp_path / "csrc" / "kernel.cu") + " (cxx") < text.index(train + " (python")
    assert "clean.py" not in text.split("Summary")[0]  # files without findings are not listed
    assert f"{tmp_path / 'old.py'}: syntax error at line 1: invalid syntax" in text
    assert f"{tmp_path / 'big.py'}: larger than 8 MiB" in text
    summary = text.split("Summary", 1)[1]
    assert "3 scanned, 1 failed, 1 skipped (5 total), 65 lines" in summary
    assert "5: 1 error, 3 warning, 1 note" in summary
    assert "device 2, attention 1, custom_kernel 1, blas_dnn 1" in summary
    assert "1 auto-fixable" in summary and "3 handled at runtime" in summary
    low, high = expected_effort()
    assert f"2 need a person; estimated effort {low}-{high} person-days" in summary
    assert "3 distinct / 7 uses on torch_npu 2.8: 1 supported, 1 unsupported, 1 unknown" in summary
    assert "unsupported  torch.cdist" in summary
    assert "1.23 s" in summary
    assert "incomplete" in summary


def test_text_with_color_uses_ansi(tmp_path: Path) -> None:
    text = render(make_result(tmp_path), "text", True)
    assert "\x1b[1;31m" in text and "\x1b[33m" in text  # error red, warning yellow
    assert ANSI.sub("", text) == render(make_result(tmp_path), "text", False)


def test_text_of_a_clean_scan(tmp_path: Path) -> None:
    result = ScanResult([str(tmp_path)], [FileScanned(str(tmp_path / "a.py"), "python", 4)], "2.8")
    text = render(result, "text", False)
    assert text.startswith("Summary (no CUDA-specific code found)")
    assert "0: 0 error, 0 warning, 0 note" in text


# ------------------------------------------------------------------------------------------------ Markdown


def test_markdown_has_summary_then_findings(tmp_path: Path) -> None:
    result = make_result(tmp_path)
    text = render_markdown(result)
    assert text.index("## Summary") < text.index("## Findings") < text.index("## Files not scanned")
    low, high = expected_effort()
    assert "| Findings | 5 |" in text and f"| Effort (person-days) | {low}-{high} |" in text
    rows = [line for line in text.splitlines() if line.startswith("| `") and ":" in line.split("|")[1]]
    assert len(rows) == 5
    assert "flash_attn \\| call" in text  # a pipe inside a cell is escaped
    for line in text.splitlines():
        if line.startswith("|"):
            assert len(re.findall(r"(?<!\\)\|", line)) in (3, 4, 8), line  # 2, 3 or 7 columns, never more


def test_md_code_fences_backticks() -> None:
    assert md_code("a") == "`a`"
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x`") == "`` `x` ``"


# --------------------------------------------------------------------------------------------------- SARIF


def test_sarif_is_valid_and_complete(tmp_path: Path) -> None:
    result = make_result(tmp_path)
    text = render_sarif(result, base=str(tmp_path))
    doc = json.loads(text)
    assert sarif_errors(doc) == []
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ascend-compat" and driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert ids == ["ACT01", "ACT02", "ACT03", "ACT04"]
    kernel_rule = driver["rules"][1]
    assert kernel_rule["defaultConfiguration"]["level"] == "error"
    assert kernel_rule["properties"]["category"] == "custom_kernel"
    assert kernel_rule["properties"]["difficulty"] == "hard"
    assert kernel_rule["properties"]["fixable"] is False and kernel_rule["properties"]["shim_handles"] is False
    assert "an Ascend C kernel" in kernel_rule["help"]["text"]
    assert len(run["results"]) == 5
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "SRCROOT"
        region = loc.get("region", {})
        assert all(v >= 1 for v in region.values())
        if "endLine" in region:
            assert region["endLine"] >= region["startLine"]
    by_line = {(r["ruleId"], r["locations"][0]["physicalLocation"].get("region", {}).get("startLine")): r
               for r in run["results"]}
    kernel = by_line[("ACT02", 7)]["locations"][0]["physicalLocation"]
    assert kernel["artifactLocation"]["uri"] == "csrc/kernel.cu"
    assert kernel["region"] == {"startLine": 7, "startColumn": 3, "endLine": 7, "endColumn": 20}
    assert by_line[("ACT02", 7)]["level"] == "error"
    assert by_line[("ACT01", 9)]["locations"][0]["physicalLocation"]["region"] == {"startLine": 9}
    assert by_line[("ACT04", 5)]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 5, "startColumn": 5, "endLine": 6, "endColumn": 2}
    assert "torch_npu.npu_fusion_attention" in by_line[("ACT04", 5)]["message"]["text"]
    assert all("fixes" not in r for r in run["results"])  # no texts given: offsets cannot become regions
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.as_uri() + "/"
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert [n["level"] for n in notes] == ["error", "note"]
    assert "syntax error" in notes[0]["message"]["text"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "old.py"


def test_sarif_without_findings_is_valid(tmp_path: Path) -> None:
    empty = ScanResult([str(tmp_path)], [], "2.8")
    doc = json.loads(render(empty, "sarif"))
    assert sarif_errors(doc) == []
    run = doc["runs"][0]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
    assert run["invocations"] == [{"executionSuccessful": True}]
    clean = ScanResult([str(tmp_path)], [FileScanned(str(tmp_path / "a.py"), "python", 3)], "2.8")
    assert sarif_errors(json.loads(render_sarif(clean, base=str(tmp_path)))) == []


def test_sarif_unicode_and_outside_paths(tmp_path: Path) -> None:
    inside = str(tmp_path / "модели" / "ü b.py")
    outside = str(tmp_path.parent / "elsewhere" / "x.py")
    result = ScanResult([str(tmp_path)], [
        FileScanned(inside, "python", 3, [_finding("ACT01", inside, 1, 1, message="ünïcode ✓")]),
        FileScanned(outside, "python", 3, [_finding("ACT01", outside, 2, 1)]),
        FileFailed(str(tmp_path / "日本.py"), "python", "cannot decode: ✗"),
    ], "2.8")
    text = render_sarif(result, base=str(tmp_path))
    doc = json.loads(text)
    assert sarif_errors(doc) == []
    # Results come sorted by path: the file outside the base first.
    locs = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in doc["runs"][0]["results"]]
    locs.reverse()
    assert locs[0]["uriBaseId"] == "SRCROOT"
    assert locs[0]["uri"].isascii() and " " not in locs[0]["uri"]  # percent-encoded, a valid URI reference
    assert unquote(locs[0]["uri"]) == "модели/ü b.py"
    assert "uriBaseId" not in locs[1] and urlsplit(locs[1]["uri"]).scheme == "file"
    assert unquote(urlsplit(locs[1]["uri"]).path).endswith("/elsewhere/x.py")
    assert doc["runs"][0]["results"][1]["message"]["text"].startswith("ünïcode ✓")
    failed_uri = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["locations"][0]
    assert unquote(failed_uri["physicalLocation"]["artifactLocation"]["uri"]) == "日本.py"


def test_sarif_fixes_when_the_text_is_known(tmp_path: Path) -> None:
    path = str(tmp_path / "t.py")
    text = "import torch\né = t.cuda()\n"
    start = text.index("cuda")
    finding = _finding("ACT01", path, 2, 7, end_line=2, end_col=11, edits=(Edit(start, start + 4, "npu"),))
    result = ScanResult([str(tmp_path)], [FileScanned(path, "python", 2, [finding])], "2.8")
    doc = json.loads(render_sarif(result, base=str(tmp_path), texts={path: text}))
    assert sarif_errors(doc) == []
    (fix,) = doc["runs"][0]["results"][0]["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "t.py", "uriBaseId": "SRCROOT"}
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 2, "startColumn": 7, "endLine": 2, "endColumn": 11},
        "insertedContent": {"text": "npu"},
    }]
    assert doc["runs"][0]["columnKind"] == "unicodeCodePoints"  # é counts as one column


# ---------------------------------------------------------------------------------------------------- misc


@pytest.mark.parametrize("fmt", FORMATS)
def test_rendering_is_deterministic(tmp_path: Path, fmt: str) -> None:
    assert render(make_result(tmp_path), fmt) == render(make_result(tmp_path), fmt)


def test_unknown_format_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown format"):
        render(make_result(tmp_path), "xml")


def test_schema_validation_catches_invalid_sarif(tmp_path: Path) -> None:
    # Guards the guard: the schema file really constrains what the other tests validate.
    doc = json.loads(render_sarif(make_result(tmp_path), base=str(tmp_path)))
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    doc["runs"][0]["results"][1]["level"] = "fatal"
    errors = sarif_errors(doc)
    assert len(errors) == 2 and any("startLine" in e for e in errors) and any("fatal" in e for e in errors)
