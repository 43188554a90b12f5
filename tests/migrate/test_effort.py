"""The effort model: its data, units per kernel / extension / dependency / edit class, and totals that agree
everywhere they are shown."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ascend_compat.migrate import effort
from ascend_compat.migrate.model import ScanResult
from ascend_compat.migrate.project import analyze
from ascend_compat.migrate.scan import check

FIXTURE = Path(__file__).parent / "fixtures_report" / "kernelpkg"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> ScanResult:
    dest = tmp_path_factory.mktemp("e") / "kernelpkg"
    shutil.copytree(FIXTURE, dest)
    return check([str(dest)], jobs=1, use_git=False)


def test_effort_data_schema() -> None:
    data = effort.data()
    assert data["schema_version"] == 1
    for name, u in data["units"].items():
        assert 0 <= u["low"] <= u["high"], name
        assert u["basis"].strip() and u["source"].strip(), name
    for op in data["operators"]:
        assert op["match"] and op["torch_npu"] and op["what"] and op["source"], op
        for pattern in op["match"]:
            re.compile(pattern)
        for path_re, name_re in op.get("in_path", ()):
            re.compile(path_re), re.compile(name_re)
    assert all(p["project"] and p["port"] and p["source"] for p in data["ports"])


@pytest.mark.parametrize(("name", "path", "op"), [
    ("gemm_forward_cuda", "", "torch_npu.npu_weight_quant_batchmatmul"),
    ("gemv_kernel_g128", "csrc/quantization/gemv_cuda.cu", "torch_npu.npu_weight_quant_batchmatmul"),
    ("masked_multihead_attention_kernel", "", "torch_npu.npu_incre_flash_attention"),
    ("cuApplyRMSNorm", "", "torch_npu.npu_rms_norm"),
    ("fused_rope_forward", "", "torch_npu.npu_rotary_mul / torch_npu.npu_apply_rotary_pos_emb"),
])
def test_torch_npu_already_has_the_operator(name: str, path: str, op: str) -> None:
    entry = effort.npu_operator(name, path)
    assert entry is not None and entry["torch_npu"] == op


def test_a_plain_gemv_is_not_a_quantized_matmul() -> None:
    assert effort.npu_operator("gemv_kernel", "csrc/blas/gemv.cu") is None
    assert effort.npu_operator("selective_scan_fwd_kernel", "csrc/selective_scan/x.cuh") is None


def test_units_per_kernel_extension_and_edit_class(result: ScanResult) -> None:
    eff = analyze(result).effort
    kinds = Counter(u.kind for u in eff.units)
    # Two CUDA extensions (the CPU one builds unchanged), one plain kernel each in kernelpkg_cuda and jit_ext plus
    # the standalone one, RMSNorm routed to torch_npu (kernel and export in one unit), unused_op an export of its own.
    assert kinds["extension"] == 2 and kinds["kernel"] == 3 and kinds["torch_npu_operator"] == 1
    assert kinds["export_without_kernel"] == 1
    rms = next(u for u in eff.units if u.kind == "torch_npu_operator")
    assert rms.alternative == "torch_npu.npu_rms_norm"
    assert "rms_norm_kernel" in rms.label and "rms_norm_fwd" in rms.label
    mech = {u.label.split()[0] for u in eff.units if u.kind == "mechanical_class"}
    assert {"AC101", "AC102", "AC115", "AC116"} <= mech
    # `.cuda()` twice in two files is one class of edits, costed once.
    ac101 = next(u for u in eff.units if u.kind == "mechanical_class" and u.label.startswith("AC101"))
    assert len(ac101.findings) == 2 and (ac101.low, ac101.high) == (0.1, 0.5)


def test_every_costed_finding_is_in_exactly_one_unit(result: ScanResult) -> None:
    eff = analyze(result).effort
    seen = Counter(id(f) for u in eff.units for f in u.findings)
    assert seen and max(seen.values()) == 1
    costed = [f for f in result.findings if not (f.effective_level == "note" and f.rule.effort_days == 0)]
    assert {id(f) for f in costed} <= set(seen)


def test_totals_agree_between_units_sections_and_summary(result: ScanResult) -> None:
    eff = analyze(result).effort
    by = eff.by_section()
    assert round(sum(lo for lo, _, _ in by.values()), 2) == eff.low
    assert round(sum(hi for _, hi, _ in by.values()), 2) == eff.high
    summary = result.to_dict()["summary"]
    assert summary["effort_range"] == [eff.low, eff.high]
    assert summary["effort_days"] == round((eff.low + eff.high) / 2, 2)
    assert eff.existing_port is None


def test_a_project_with_a_published_port_says_so(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='apex')\n")
    (tmp_path / "apex").mkdir()
    (tmp_path / "apex" / "__init__.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    res = check([str(tmp_path)], jobs=1, use_git=False)
    assert not [f for f in res.findings if f.category == "dependency"]  # its own `apex` is no dependency
    port = analyze(res).effort.existing_port
    assert port is not None and "gitee.com/ascend/apex" in port["port"] and port["low"] < port["high"]


def test_a_kernel_launched_through_wrap_triton_is_a_kernel(tmp_path: Path) -> None:
    from ascend_compat.migrate.effort import _launched_names

    (tmp_path / "k.py").write_text(
        "import torch, triton\n\n@triton.jit\ndef rot_kernel(x):\n    pass\n\n@triton.jit\ndef helper(x):\n    pass\n\n"
        "def run(x):\n    torch.library.wrap_triton(rot_kernel)[(1,)](x)\n")
    assert {"rot_kernel"} <= _launched_names(str(tmp_path / "k.py")) and "helper" not in _launched_names(
        str(tmp_path / "k.py"))


def test_further_kernels_of_one_file_share_its_set_up(tmp_path: Path) -> None:
    """A file of forward/backward Triton kernels: the first launched kernel is costed in full, the others as
    siblings sharing its tuning and test harness, and a device function with no launch as a helper."""
    from ascend_compat.migrate.effort import cost

    (tmp_path / "ops.py").write_text(
        "import triton\n\n@triton.jit\ndef fwd(x):\n    pass\n\n@triton.jit\ndef bwd(x):\n    pass\n\n"
        "@triton.jit\ndef helper(x):\n    pass\n\ndef run(x):\n    fwd[(1,)](x)\n    bwd[(1,)](x)\n")
    units = analyze(check([str(tmp_path)], jobs=1, use_git=False)).effort.units
    kinds = sorted(u.kind for u in units if u.kind.startswith("triton"))
    assert kinds == ["triton_helper", "triton_kernel", "triton_kernel_sibling"], kinds
    sibling, first = cost("triton_kernel_sibling"), cost("triton_kernel")
    assert sibling.high < first.high and sibling.low < first.low
