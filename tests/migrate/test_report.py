"""The review report on a fixture repository: one test per section of the review workflow's layout, the JSON
that carries the same content, and no placeholder text anywhere."""

from __future__ import annotations

import datetime
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ascend_compat.migrate.adaptation import write_adaptation
from ascend_compat.migrate.model import ScanResult
from ascend_compat.migrate.port import planned_changes
from ascend_compat.migrate.project import analyze
from ascend_compat.migrate.report import SECTION_TITLES, build_report, report_filename
from ascend_compat.migrate.scan import check

FIXTURE = Path(__file__).parent / "fixtures_report" / "kernelpkg"
DATE = datetime.date(2026, 5, 10)
VERIFICATION = {
    "environment": {"Python": "3.11.7", "Device": "simulated NPU (ascend_compat.simulate: no NPU on this machine)",
                    "Time budget": "60 s", "torch": "2.13.0+cpu"},
    "device": "the simulated NPU",
    "imports": {"modules": [{"module": "kernelpkg", "ok": True, "error": "", "seconds": 0.1},
                            {"module": "kernelpkg.ops", "ok": False, "seconds": 0.1,
                             "error": "ModuleNotFoundError: No module named 'kernelpkg_cuda'"}],
                "passed": 1, "not_run": 0, "seconds": 1.5, "timed_out": False},
    "tests": {"command": "ascend-compat run --simulate npu -m pytest -q tests", "passed": 1, "failed": 3, "errors": 0,
              "skipped": 0, "seconds": 4.0, "timed_out": False, "budget_s": 48,
              "failures": [["tests.test_ops::test_needs_the_extension", "❌ failed",
                            "ModuleNotFoundError: No module named 'kernelpkg_cuda'"],
                           ["tests.test_ops::test_other[1]", "❌ failed", "ModuleNotFoundError: No module named "
                            "'kernelpkg_cuda'"],
                           ["tests.test_ops::test_other[2]", "❌ failed", "ModuleNotFoundError: No module named "
                            "'kernelpkg_cuda'"]]},
    "precision": {
        "note": "Measured on the simulated NPU. The simulated NPU runs the host CPU's kernels.",
        "ops": {"command": "ascend-compat verify ops --device npu --only matmul,norm --simulate npu",
                "rows": [["`matmul`", "float32, float16", "0.00779 (float16)", "rtol 0.016, atol 0.01", "✅ passed"],
                         ["`layer_norm`", "float32, float16", "0.03 (float16)", "rtol 0.002, atol 0.001",
                          "❌ failed (float16)"]],
                "ok": False, "counts": {"pass": 3, "fail": 1, "error": 0, "skipped": 0}, "fallback": None},
        "models": {"rows": [["`kernelpkg.model.Block()`", "(2, 16, 32)", "0", "rtol 0.0001, atol 0.0001",
                             "✅ passed, 3 layers compared"]],
                   "skipped": [["`kernelpkg.model.Tiny()`", "no Embedding/Linear/Conv/LayerNorm layer to infer an "
                                "input from"]], "candidates": 2, "note": ""},
        "seconds": 12.0,
    },
}
PLACEHOLDERS = re.compile(r"\bXX\b|TODO|TBD|YYYY|<repo_url>|<project|lorem|placeholder|\+\d+ more", re.I)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ScanResult, str, dict]:
    base = tmp_path_factory.mktemp("rep")
    repo = base / "kernelpkg"
    shutil.copytree(FIXTURE, repo)
    result = check([str(repo)], jobs=1, use_git=False)
    adaptation = write_adaptation(result, analyze(result), str(repo), str(base / "out" / "ascend_adaptation"))
    changes = planned_changes(result)
    md = build_report(result, changes, str(repo), DATE, adaptation=adaptation.to_dict(), verification=VERIFICATION)
    return repo, result, md, adaptation.to_dict()


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def subsection(text: str, title: str) -> str:
    start = text.index(f"### {title}")
    end = min(i for i in (text.find("\n### ", start + 1), text.find("\n## ", start + 1), len(text)) if i >= 0)
    return text[start:end]


def rows(body: str) -> list[list[str]]:
    lines = [ln for ln in body.splitlines() if ln.startswith("| ") and not ln.startswith("|---")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines[1:]]  # after the header


def test_sections_in_the_workflow_order_without_placeholders(built: tuple) -> None:
    _, _, md, _ = built
    positions = [md.index(f"\n## {t}\n") for t in SECTION_TITLES]
    assert positions == sorted(positions)
    for i in range(1, 13):
        assert f"\n### 3.{i} " in md
    assert not PLACEHOLDERS.search(md), PLACEHOLDERS.search(md)


def test_1_executive_summary(built: tuple) -> None:
    _, result, md, _ = built
    body = section(md, SECTION_TITLES[0])
    table = {r[0]: r[1] for r in rows(body)[:12]}
    eff = analyze(result).effort
    total, done = int(table["Total identified bottlenecks"]), int(table["Adapted bottlenecks"])
    assert total == len(eff.units) and done + int(table["Remaining bottlenecks"]) == total
    assert table["Adaptation status"] == "⚠️ Partially Adapted"
    assert table["Estimated effort (all bottlenecks)"] == f"{eff.low:g}–{eff.high:g} person-days"
    assert table["Compiled extensions"].startswith("3 ")
    assert "`kernelpkg`" in table["First-party packages"] and "`mamba_ssm`" in table["First-party packages"]


def test_2_code_structure_dependencies_and_extensions(built: tuple) -> None:
    _, _, md, _ = built
    body = section(md, SECTION_TITLES[1])
    files = {r[0]: r[1:] for r in rows(subsection(body, "2.1"))}
    assert files["CUDA"][0] == "4" and files["Python"][0] == "8"  # the vendored .cu is not counted
    assert "Fused scaling ops for the kernelpkg fixture." in body  # what the core module says it does
    deps = {r[0]: r for r in rows(subsection(body, "2.2"))}
    assert {"`causal-conv1d`", "`flash-attn`", "`numpy`", "`torch`", "`triton`"} <= set(deps)
    assert "`mamba-ssm`" not in deps and "`kernelpkg`" not in deps
    assert deps["`triton`"][1] == ">=2.0" and "triton-ascend" in deps["`triton`"][3]
    assert deps["`causal-conv1d`"][2] == "❌ CUDA-only" and deps["`causal-conv1d`"][5] == "`setup.py:17`"
    ext = {r[0]: r for r in rows(subsection(body, "2.3"))}
    assert ext["`kernelpkg_cuda`"][1:3] == ["CUDAExtension", "`setup.py:10`"]
    assert ext["`kernelpkg_cuda`"][4] == "`scale_forward`, `rms_norm_fwd`, `unused_op`"
    assert "`orphan_kernel` at `tools/standalone.cu:1`" in body


def test_3_bottlenecks_every_occurrence_plan_code_workload_status(built: tuple) -> None:
    repo, result, md, _ = built
    body = section(md, SECTION_TITLES[2])
    kernels = subsection(body, "3.1 ")
    assert "#### Issue " in kernels and "kernel `scale_kernel`" in kernels and "`csrc/scale_kernel.cu:4`" in kernels
    assert "torch_npu.npu_rms_norm" in kernels
    # Every occurrence of every finding in a unit is listed by file:line.
    for u in analyze(result).effort.units:
        if u.section == "dependencies":
            continue
        for f in u.findings:
            rel = Path(f.path).resolve().relative_to(repo.resolve()).as_posix()
            assert f"`{rel}:{f.line}`" in body, (u.id, rel, f.line)
    for field in ("**Files:**", "**GPU API:**", "**NPU alternative:**", "**Impact scope:**",
                  "**Estimated workload:**", "**Status:**", "**Migration plan:**", "**Before**", "**After:**"):
        assert field in kernels
    # A mechanical class shows the repository's own rewrite as before/after, adapted in the ported copy.
    config = subsection(body, "3.12 ")
    assert 'device = "cuda"' in config and 'device = "npu"' in config
    assert "✅ Adapted (ported copies in the adaptation folder)" in config
    boundary = subsection(body, "3.10 ")
    assert "`kernelpkg_cuda.scale_forward`" in boundary and "`kernelpkg/ops.py:9`" in boundary
    assert "`kernelpkg_cuda.unused_op`" in boundary and "no Python use found" in boundary
    assert "No findings in this category." in subsection(body, "3.4 ")  # cuBLAS/cuDNN: none in the fixture


def test_4_adaptation_code_list(built: tuple) -> None:
    _, _, md, ad = built
    body = section(md, SECTION_TITLES[3])
    new = {r[0]: r for r in rows(subsection(body, "4.1"))}
    for name in ("`npu_compat.py`", "`verify_npu.py`", "`requirements-npu.txt`", "`ported/train.py`",
                 "`kernels/scale_kernel/`", "`kernels/orphan_kernel/`"):
        assert name in new, name
    assert len(new) == len(ad["files"])
    mod = {r[0]: r for r in rows(subsection(body, "4.2"))[:4]}
    assert mod["`train.py`"][2] == "✅ ported copy `ported/train.py`"


def test_5_verification_results(built: tuple) -> None:
    _, _, md, _ = built
    body = section(md, SECTION_TITLES[4])
    assert "simulated NPU (ascend_compat.simulate" in subsection(body, "5.1")
    fn = subsection(body, "5.2")
    assert "1 passed, 1 failed, 0 not run" in fn and "No module named 'kernelpkg_cuda'" in fn
    assert "1 passed, 3 failed, 0 error(s)" in fn
    # Failures grouped by their error; a parametrized test counted once per case, named once.
    assert ["`ModuleNotFoundError: No module named 'kernelpkg_cuda'`",
            "3: `tests.test_ops::test_needs_the_extension`, `tests.test_ops::test_other` ×2", "❌ failed"] in rows(fn)
    prec = subsection(body, "5.3")
    assert "Measured on the simulated NPU" in prec and "Not measured" not in prec
    assert "`ascend-compat verify ops --device npu --only matmul,norm --simulate npu`" in prec
    table = {r[0]: r for r in rows(prec)}
    assert table["`layer_norm`"][4] == "❌ failed (float16)" and table["`matmul`"][2] == "0.00779 (float16)"
    assert "3 checks passed, 1 failed, 0 raised, 0 skipped." in prec
    assert table["`kernelpkg.model.Block()`"][1:] == ["(2, 16, 32)", "0", "rtol 0.0001, atol 0.0001",
                                                      "✅ passed, 3 layers compared"]
    assert table["`kernelpkg.model.Tiny()`"][1].startswith("no Embedding/Linear")
    assert rows(subsection(body, "5.4"))[0][0] == "Resolved"


def test_5_says_when_verification_did_not_run(built: tuple) -> None:
    repo, result, _, _ = built
    md = build_report(result, planned_changes(result), str(repo), DATE)
    body = section(md, SECTION_TITLES[4])
    assert "Not run for this report" in body and "--verify" in body
    assert "No adaptation folder was written" in section(md, SECTION_TITLES[3])


def test_6_adaptation_guide_and_troubleshooting(built: tuple) -> None:
    _, _, md, ad = built
    body = section(md, SECTION_TITLES[5])
    assert f"pip install -r {ad['folder']}/requirements-npu.txt" in body
    assert f"python {ad['folder']}/verify_npu.py" in body
    trouble = rows(subsection(body, "6.3"))
    assert any("`kernelpkg_cuda`" in r[0] for r in trouble)
    assert any("ModuleNotFoundError" in r[0] for r in trouble)  # from the verification run


def test_7_follow_up_names_units(built: tuple) -> None:
    _, _, md, _ = built
    body = section(md, SECTION_TITLES[6])
    for title in ("7.1 Short term", "7.2 Mid term", "7.3 Long term"):
        assert title in body
    assert re.search(r"U-\d{3}", subsection(body, "7.3"))


def test_json_has_the_same_content_and_html_is_well_formed(built: tuple) -> None:
    repo, result, md, ad = built
    data = json.loads(build_report(result, planned_changes(result), str(repo), DATE, "json", ad, VERIFICATION))
    assert [s["title"] for s in data["sections"]] == list(SECTION_TITLES)
    md_tables = sum(1 for ln in md.splitlines() if ln.startswith("|---"))
    assert sum(b["type"] == "table" for s in data["sections"] for b in s["blocks"]) == md_tables
    assert data["analysis"]["effort"]["low"] == analyze(result).effort.low
    page = build_report(result, planned_changes(result), str(repo), DATE, "html", ad, VERIFICATION)

    class Checker(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[str] = []

        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag not in ("meta", "br"):
                self.stack.append(tag)

        def handle_endtag(self, tag: str) -> None:
            assert self.stack.pop() == tag

    Checker().feed(page)
    assert build_report(result, planned_changes(result), str(repo), DATE, "markdown", ad, VERIFICATION) == md


def test_report_filename_and_bad_format(built: tuple) -> None:
    repo, result, _, _ = built
    assert report_filename(DATE) == "CodeReview_Results_2026-05-10.md"
    assert report_filename(DATE, "json").endswith(".json")
    with pytest.raises(ValueError, match="unknown report format"):
        build_report(result, None, str(repo), DATE, "pdf")
