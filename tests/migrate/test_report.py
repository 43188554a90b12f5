"""The review report: its totals, section order, bottleneck order, HTML and determinism (hand-built scans)."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ascend_compat.migrate.model import (
    RULES,
    Change,
    Edit,
    FileFailed,
    FileScanned,
    FileSkipped,
    Finding,
    Rule,
    ScanResult,
    register_rules,
)
from ascend_compat.migrate.report import (
    SECTION_TITLES,
    STATUS_MAJOR,
    STATUS_READY,
    STATUS_SHIM,
    STATUS_WORK,
    bottlenecks,
    build_report,
    overall_status,
    report_filename,
)

DATE = datetime.date(2026, 5, 10)

TEST_RULES = (
    Rule("ACT11", "test-cuda-call", "device", "warning", "test: CUDA call", "`.npu()`", True, True, "trivial",
         0.02),
    Rule("ACT12", "test-kernel", "custom_kernel", "error", "test: CUDA kernel launch", "an Ascend C kernel",
         False, False, "hard", 5.0, "cxx"),
    Rule("ACT13", "test-attention", "attention", "warning", "test: fused attention kernel",
         "torch_npu.npu_fusion_attention", False, False, "medium", 0.5),
    Rule("ACT14", "test-dep-cuda-only", "dependency", "error", "test: CUDA-only package", "pyACL", False, False,
         "hard", 2.0, "deps"),
    Rule("ACT15", "test-flag", "blas_dnn", "note", "test: CUDA-only flag", "", True, False, "trivial", 0.0),
    Rule("ACT16", "test-dep-ok", "dependency", "note", "test: package works", "install torch_npu", False, False,
         "trivial", 0.0, "deps"),
    Rule("ACT17", "test-unsupported-op", "api_support", "warning", "test: op not supported", "run it on the CPU",
         False, False, "easy", 0.1),
)


@pytest.fixture(autouse=True)
def _test_rules() -> Iterator[None]:
    # Registered only while a test runs: other tests check every registered rule against the real scanners.
    register_rules(*TEST_RULES)
    yield
    for rule in TEST_RULES:
        RULES.pop(rule.code, None)


def _f(code: str, path: Path, line: int, api: str = "", **kw) -> Finding:
    return Finding(code=code, path=str(path), line=line, col=1, message=kw.pop("message", f"{code}: {api}"),
                   api=api, **kw)


def make_result(root: Path) -> ScanResult:
    """13 findings in 4 files (2 errors, 9 warnings, 2 notes), plus a failed and a skipped file.

    By hand: fixable 3 (the ACT11 with edits), shim 5 (ACT11 x4, ACT15), manual 8 (ACT12, ACT13 x4, ACT14,
    ACT16, ACT17), effort 0.02 + 5 + 4 x 0.5 + 2 + 0.1 = 9.12 person-days.
    """
    train, attn = root / "train.py", root / "models" / "attn.py"
    kern, req = root / "csrc" / "kernel.cu", root / "requirements.txt"
    fix = (Edit(0, 4, "npu"),)
    return ScanResult(
        roots=[str(root)],
        files=[
            FileScanned(str(kern), "cxx", 200, [_f("ACT12", kern, 12, "my_kernel<<<grid, block>>>")]),
            FileFailed(str(root / "broken.py"), "python", "syntax error at line 3: invalid syntax", 10),
            FileScanned(str(attn), "python", 80, [
                _f("ACT11", attn, 3, "torch.Tensor.cuda"),
                _f("ACT13", attn, 10, "flash_attn.flash_attn_func"),
                _f("ACT13", attn, 20, "flash_attn.flash_attn_func"),
                _f("ACT15", attn, 30, "torch.backends.cudnn.benchmark"),
            ], apis={"torch.Tensor.cuda": 1}, imports=["flash_attn", "models", "torch"]),
            FileSkipped(str(root / "data" / "blob.py"), "python", "larger than 8 MiB"),
            FileScanned(str(req), "deps", 5, [
                _f("ACT14", req, 2, "pycuda"),
                _f("ACT16", req, 3, "transformers"),
            ]),
            FileScanned(str(train), "python", 120, [
                _f("ACT11", train, 4, "torch.Tensor.cuda", edits=fix),
                _f("ACT11", train, 5, "torch.Tensor.cuda", edits=fix),
                _f("ACT11", train, 6, "torch.Tensor.cuda", edits=fix),
                _f("ACT13", train, 8, "xformers.ops.memory_efficient_attention"),
                _f("ACT13", train, 9, "flash_attn.flash_attn_func"),
                _f("ACT17", train, 11, "torch.cdist"),
            ], apis={"torch.Tensor.cuda": 3, "torch.cdist": 1},
                imports=["flash_attn", "models", "numpy", "os", "torch", "xformers"]),
        ],
        torch_npu="2.8",
        elapsed_s=0.5,
        api_inventory={
            "torch.Tensor.cuda": {"count": 4, "status": "supported"},
            "torch.cdist": {"count": 1, "status": "unsupported"},
            "torch.weird": {"count": 2, "status": "unknown"},
        },
    )


def make_changes(root: Path) -> list[Change]:
    train = str(root / "train.py")
    # Deliberately unsorted: the report sorts them.
    return [
        Change(train, 6, "z = t.cuda()", "z = t.npu()", "ACT11"),
        Change(train, 4, "x = t.cuda()", "x = t.npu()", "ACT11"),
        Change(train, 5, "y = a | b.cuda()", "y = a | b.npu()", "ACT11"),
    ]


def section(text: str, title: str) -> str:
    """The body of one ``## title`` section of the Markdown report."""
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def table_rows(body: str) -> list[list[str]]:
    rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in rows[1:]]


# ----------------------------------------------------------------------------------------------- summary


def test_executive_summary_comes_first_with_correct_totals(tmp_path: Path) -> None:
    text = build_report(make_result(tmp_path), make_changes(tmp_path), str(tmp_path), DATE)
    lines = text.splitlines()
    first_screen = "\n".join(lines[:25])
    assert lines[0] == f"# GPU→NPU migration review: {tmp_path.name}"
    assert "2026-05-10" in lines[2] and "torch_npu 2.8" in lines[2]
    assert "## 1. Executive summary" in first_screen
    assert "**Status: MAJOR REWRITE**" in first_screen
    assert "**Findings:** 13 in 4 file(s) (2 errors, 9 warnings, 2 notes)" in first_screen
    assert "**Auto-fixable by `ascend-compat port`:** 3" in first_screen
    assert "**Handled at runtime by the shim (`ascend-compat run`):** 5" in first_screen
    assert "**Remaining manual:** 8 " in first_screen
    assert "**Estimated effort:** 9.12 person-days" in first_screen
    assert "1 supported, 1 unsupported, 1 unknown" in first_screen
    assert "4 file(s) scanned, 1 failed, 1 skipped (incomplete" in first_screen
    blockers = [line for line in lines[:25] if re.match(r"\d\. B-\d{3} ", line)]
    assert [b.split()[1] for b in blockers] == ["B-001", "B-002", "B-003"]
    assert "my_kernel" in blockers[0] and "pycuda" in blockers[1] and "flash_attn" in blockers[2]


def test_sections_are_in_order(tmp_path: Path) -> None:
    result, changes = make_result(tmp_path), make_changes(tmp_path)
    md = build_report(result, changes, str(tmp_path), DATE)
    positions = [md.index(f"\n## {t}\n") for t in SECTION_TITLES]
    assert positions == sorted(positions)
    page = build_report(result, changes, str(tmp_path), DATE, "html")
    positions = [page.index(f"<h2>{t}</h2>") for t in SECTION_TITLES]
    assert positions == sorted(positions)


@pytest.mark.parametrize(("codes", "status"), [
    ([], STATUS_READY),
    (["ACT11", "ACT15"], STATUS_SHIM),  # everything handled by the shim, plus a note
    (["ACT11", "ACT17"], STATUS_WORK),  # a manual warning, nothing hard
    (["ACT11", "ACT12"], STATUS_MAJOR),  # a custom kernel
    (["ACT14"], STATUS_MAJOR),  # a CUDA-only dependency
])
def test_overall_status(tmp_path: Path, codes: list[str], status: str) -> None:
    p = tmp_path / "a.py"
    findings = [_f(c, p, i) for i, c in enumerate(codes, 1)]
    result = ScanResult([str(tmp_path)], [FileScanned(str(p), "python", 9, findings)], "2.8")
    assert overall_status(result)[0] == status
    assert f"**Status: {status}**" in build_report(result, None, str(tmp_path), DATE)


# -------------------------------------------------------------------------------------- structure and deps


def test_code_structure(tmp_path: Path) -> None:
    body = section(build_report(make_result(tmp_path), None, str(tmp_path), DATE), SECTION_TITLES[1])
    rows = {r[0]: r[1:] for r in table_rows(body.split("**Main dependencies:**")[0])}
    assert rows == {
        # train.py, attn.py, broken.py (a failed file's lines count) and the skipped blob.py (no lines)
        "Python": ["4", "210", "10"],
        "CUDA": ["1", "200", "1"],
        "Manifests": ["1", "5", "2"],
        "Total": ["6", "415", "13"],
    }
    deps = body.split("**Main dependencies:**")[1].split("\n")[0]
    # Third-party imports by importing files; the standard library and the project's own package are left out.
    assert deps.startswith(" `flash_attn` (2 files), `torch` (2 files), `numpy` (1 file), `xformers` (1 file)")
    assert "`os`" not in deps and "`models`" not in deps
    assert "Flagged in section 3: `pycuda`." in deps
    core = table_rows(body.split("**Core modules**")[1])
    assert core == [
        ["`(root)`", "3", "135", "8", "5"],
        ["`models/`", "1", "80", "4", "2"],
        ["`csrc/`", "1", "200", "1", "1"],
        ["`data/`", "1", "0", "0", "0"],
    ]


def test_dependency_table(tmp_path: Path) -> None:
    body = section(build_report(make_result(tmp_path), None, str(tmp_path), DATE), SECTION_TITLES[2])
    rows = table_rows(body)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("`pycuda`", "blocked (error)", "ACT14"),
        ("`transformers`", "compatible (note)", "ACT16"),
    ]
    assert rows[0][4] == "`requirements.txt:2`" and rows[0][5] == "pyACL"


# ------------------------------------------------------------------------------------------------ bottlenecks


def test_bottlenecks_sorted_by_difficulty_then_impact(tmp_path: Path) -> None:
    result = make_result(tmp_path)
    expected = [
        ("B-001", "ACT12", "my_kernel<<<grid, block>>>", 1, 1),  # hard; ACT12 < ACT14 on a tie
        ("B-002", "ACT14", "pycuda", 1, 1),
        ("B-003", "ACT13", "flash_attn.flash_attn_func", 3, 2),  # medium, 3 places before 1
        ("B-004", "ACT13", "xformers.ops.memory_efficient_attention", 1, 1),
        ("B-005", "ACT17", "torch.cdist", 1, 1),  # easy
    ]  # ACT16 (a note that costs nothing) blocks nothing; ACT11/ACT15 are handled by port or the shim
    got = [(b.id, b.rule.code, b.api, b.occurrences, b.files) for b in bottlenecks(result)]
    assert got == expected
    body = section(build_report(result, None, str(tmp_path), DATE), SECTION_TITLES[3])
    rows = table_rows(body)
    assert [r[0] for r in rows] == [e[0] for e in expected]
    flash = rows[2]
    assert flash[1] == "`models/attn.py:10` (+2 more)"
    assert flash[2] == "`flash_attn.flash_attn_func`" and flash[3] == "torch_npu.npu_fusion_attention"
    assert flash[5] == "medium" and flash[6] == "1.5" and flash[7] == "3× in 2 file(s)"
    assert rows[0][6] == "5" and rows[0][5] == "hard"


# --------------------------------------------------------------------------------------------- adaptation list


def test_adaptation_list(tmp_path: Path) -> None:
    result = make_result(tmp_path)
    body = section(build_report(result, make_changes(tmp_path), str(tmp_path), DATE), SECTION_TITLES[4])
    assert "makes 3 change(s) in 1 file(s) (ACT11 ×3)" in body
    rows = table_rows(body)
    assert [r[1] for r in rows] == ["4", "5", "6"]
    assert rows[1] == ["`train.py`", "5", "`y = a \\| b.cuda()`", "`y = a \\| b.npu()`", "ACT11"]
    assert "was not run" in section(build_report(result, None, str(tmp_path), DATE), SECTION_TITLES[4])
    assert "nothing to rewrite" in section(build_report(result, [], str(tmp_path), DATE), SECTION_TITLES[4])


# -------------------------------------------------------------------------------- verification, guide, follow-up


def test_verification_script(tmp_path: Path) -> None:
    result = make_result(tmp_path)
    body = section(build_report(result, None, str(tmp_path), DATE), SECTION_TITLES[5])
    script = body.split("```bash\n")[1].split("```")[0]
    assert script.startswith("#!/usr/bin/env bash\n")
    order = ["optional doctor", "import torch, torch_npu", "ascend-compat check", "no tests found",
             "optional verify model", "optional bench model"]
    positions = [script.index(s) for s in order]
    assert positions == sorted(positions)
    (tmp_path / "tests").mkdir()
    body = section(build_report(result, None, str(tmp_path), DATE), SECTION_TITLES[5])
    assert "ascend-compat run -m pytest -q tests" in body.split("```bash\n")[1]


def test_verification_script_skips_commands_this_version_lacks(tmp_path: Path) -> None:
    # Run the generated helper for real: a missing subcommand is skipped, an existing one runs.
    script = section(build_report(make_result(tmp_path), None, str(tmp_path), DATE), SECTION_TITLES[5])
    script = script.split("```bash\n")[1].split("```")[0]
    helper = script[script.index("optional() {"): script.index("}\n", script.index("optional() {")) + 2]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "ascend-compat"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m ascend_compat \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", helper + "optional no-such-command x; optional info --json"],
                         capture_output=True, text=True, env=env, check=True).stdout
    assert "skipped: this ascend-compat has no 'no-such-command' command" in out
    assert '"schema_version": 1' in out  # `info --json` ran


def test_guide_and_follow_up(tmp_path: Path) -> None:
    text = build_report(make_result(tmp_path), None, str(tmp_path), DATE)
    guide = section(text, SECTION_TITLES[6])
    for needle in ("CANN", "set_env.sh", "torch_npu 2.8", "ascend-compat run train.py",
                   "ascend-compat port --mode native --write", "ascend-compat error CODE", "ascend-compat explain LOG"):
        assert needle in guide, needle
    follow = section(text, SECTION_TITLES[7])
    short, mid, long = (follow.split(f"### {t}")[1] for t in ("Short term", "Mid term", "Long term"))
    assert "B-005" in short and "B-003, B-004" in mid
    assert "Ascend C" in long and "B-001" in long and "B-002" in long


def test_appendices(tmp_path: Path) -> None:
    text = build_report(make_result(tmp_path), None, str(tmp_path), DATE)
    rows = table_rows(section(text, SECTION_TITLES[8]))
    assert rows == [["`broken.py`", "failed", "syntax error at line 3: invalid syntax"],
                    ["`data/blob.py`", "skipped", "larger than 8 MiB"]]
    rows = table_rows(section(text, SECTION_TITLES[9]))
    assert rows == [["`torch.cdist`", "unsupported", "1"], ["`torch.weird`", "unknown", "2"]]


# ---------------------------------------------------------------------------------------------------- HTML


VOID_ELEMENTS = frozenset({"meta", "br", "hr", "img", "link", "input"})


class _TagChecker(HTMLParser):
    """Records every element and fails on an end tag that does not close the innermost open element."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.seen: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.seen.add(tag)
        if tag not in VOID_ELEMENTS:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_is_well_formed(tmp_path: Path) -> None:
    page = build_report(make_result(tmp_path), make_changes(tmp_path), str(tmp_path), DATE, "html")
    assert page.startswith("<!DOCTYPE html>")
    checker = _TagChecker()
    checker.feed(page)
    checker.close()
    assert checker.errors == [] and checker.stack == []
    assert {"html", "head", "body", "title", "style", "h1", "h2", "h3", "p", "ul", "ol", "li", "table", "thead",
            "tbody", "tr", "th", "td", "pre", "code", "strong"} <= checker.seen
    text = "".join(checker.text)
    assert "my_kernel<<<grid, block>>>" in text  # escaped in the markup, intact as text
    assert "y = a | b.cuda()" in text  # no Markdown pipe escapes in HTML
    assert "**" not in text and "`" not in text.split("#!/usr/bin/env bash")[0]
    assert "Status: MAJOR REWRITE" in text and "Auto-fixable by ascend-compat port:" in text


# ---------------------------------------------------------------------------------------------------- misc


def test_report_is_deterministic(tmp_path: Path) -> None:
    for fmt in ("markdown", "html"):
        a = build_report(make_result(tmp_path), make_changes(tmp_path), str(tmp_path), DATE, fmt)
        b = build_report(make_result(tmp_path), list(reversed(make_changes(tmp_path))), str(tmp_path), DATE, fmt)
        assert a == b


def test_report_filename_and_bad_format(tmp_path: Path) -> None:
    assert report_filename(DATE) == "CodeReview_Results_2026-05-10.md"
    assert report_filename(DATE, "html") == "CodeReview_Results_2026-05-10.html"
    with pytest.raises(ValueError, match="unknown report format"):
        build_report(make_result(tmp_path), None, str(tmp_path), DATE, "pdf")
