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
_SYNC_BN = "torch.nn.SyncBatchNorm / torch.nn.functional.batch_norm (NPU operators)"


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


def test_every_unit_range_is_at_most_two_and_a_half_wide() -> None:
    """A report's total range is a sum of unit ranges, so it is never wider than its widest unit: keeping every
    unit within 2.5x keeps every report within 2.5x (an engineer's range, not a guess spanning an order)."""
    units = effort.data()["units"]
    for name, u in units.items():
        assert 0 < u["low"] and u["high"] <= 2.5 * u["low"], name
        assert u.get("family", name) in units, name
    for op in effort.data()["operators"]:
        assert op.get("unit", "torch_npu_operator") in units, op["torch_npu"]


def test_calibration_entries_overlap_the_engineers_range() -> None:
    """Each calibration entry: the engineer's range for a public repository, the model's range when the unit
    table was last checked against it, and why; the two overlap and the model's stays within 2.5x."""
    entries = effort.data()["calibration"]
    assert {e["repository"] for e in entries} >= {"state-spaces/mamba", "mit-han-lab/llm-awq", "NVIDIA/apex"}
    for e in entries:
        (elo, ehi), (mlo, mhi) = e["engineer_days"], e["model_days"]
        assert e["why"].strip() and e["source"].strip() and re.fullmatch(r"[0-9a-f]{40}", e["commit"])
        assert mhi <= 2.5 * mlo and mlo <= ehi and elo <= mhi, e["repository"]


@pytest.mark.parametrize(("name", "path", "op"), [
    ("gemm_forward_cuda", "", "torch_npu.npu_weight_quant_batchmatmul"),
    ("gemv_kernel_g128", "csrc/quantization/gemv_cuda.cu", "torch_npu.npu_weight_quant_batchmatmul"),
    ("masked_multihead_attention_kernel", "", "torch_npu.npu_incre_flash_attention"),
    ("cuApplyRMSNorm", "", "torch_npu.npu_rms_norm"),
    ("fused_rope_forward", "", "torch_npu.npu_rotary_mul / torch_npu.npu_apply_rotary_pos_emb"),
    ("w8a8_gemm_forward_cuda", "", "torch_npu.npu_quant_matmul"),
    ("dense_kernel0", "awq/kernels/csrc/w8a8/w8a8_gemm_cuda.cu", "torch_npu.npu_quant_matmul"),
    ("welford_kernel_c_last", "csrc/welford.cu", _SYNC_BN),
    ("relu_backward_c_last_kernel", "csrc/welford.cu", _SYNC_BN),
    ("gn_cuda_kernel", "", "torch.nn.functional.group_norm (aclnn GroupNorm on the NPU)"),
    ("cunn_SoftMaxXEntropyForward", "", "torch.nn.functional.cross_entropy (label_smoothing=...)"),
    ("cuComputeGradInput", "csrc/layer_norm_cuda_kernel.cu",
     "torch.nn.functional.layer_norm (aclnn LayerNorm on the NPU)"),
    ("ln_bwd_kernel", "apex/contrib/csrc/layer_norm/ln_bwd_kernels.cuh",
     "torch.nn.functional.layer_norm (aclnn LayerNorm on the NPU)"),
])
def test_torch_npu_already_has_the_operator(name: str, path: str, op: str) -> None:
    entry = effort.npu_operator(name, path)
    assert entry is not None and entry["torch_npu"] == op


def test_a_plain_gemv_is_not_a_quantized_matmul() -> None:
    assert effort.npu_operator("gemv_kernel", "csrc/blas/gemv.cu") is None
    assert effort.npu_operator("selective_scan_fwd_kernel", "csrc/selective_scan/x.cuh") is None
    assert effort.npu_operator("cuComputeGradInput", "csrc/softmax.cu") is None


def test_weight_repacking_operators_cost_more_than_a_plain_routing() -> None:
    """The AWQ GEMM and the KV-cache attention need their inputs re-laid out; a RMSNorm call does not."""
    from ascend_compat.migrate.effort_units import operator_unit

    quant = effort.npu_operator("gemm_forward_cuda")
    rms = effort.npu_operator("rms_norm_fwd")
    assert quant is not None and rms is not None
    assert operator_unit(quant) == "torch_npu_operator_layout" and operator_unit(rms) == "torch_npu_operator"
    assert effort.cost("torch_npu_operator_layout").low > effort.cost("torch_npu_operator").high


@pytest.mark.parametrize(("names", "expected"), [
    (["index_mul_2d_float", "index_mul_2d_half", "index_mul_2d_float_dim64", "index_mul_2d_grad_float"],
     {1: "index_mul_2d_float", 2: "index_mul_2d_float"}),
    (["transducer_joint_forward", "transducer_joint_tiled_forward", "transducer_joint_combined_backward",
      "transducer_joint_combined_vec_backward"],
     {1: "transducer_joint_forward", 3: "transducer_joint_combined_backward"}),
    (["selective_scan_fwd_kernel", "selective_scan_bwd_kernel"], {}),
    (["gn_cuda_kernel", "gn_bwd_cuda_kernel"], {}),
    (["cleanup", "cleanup_v2", "biasAdd_fprop", "biasAddRelu_fprop"], {1: "cleanup", 3: "biasAdd_fprop"}),
])
def test_kernel_variants(names: list[str], expected: dict[int, str]) -> None:
    """A variant adds only specializing words (dtype, layout, tiling, vectorization); a backward is its own port."""
    from ascend_compat.migrate.effort_kernels import variant_bases
    from ascend_compat.migrate.extensions import Kernel

    bases = variant_bases([Kernel(n, "k.cu", i + 1) for i, n in enumerate(names)])
    assert {i: k.name for i, k in bases.items()} == expected


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
    mech_cost = effort.cost("mechanical_class")
    assert len(ac101.findings) == 2 and (ac101.low, ac101.high) == (mech_cost.low, mech_cost.high)


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
    from ascend_compat.migrate.effort_kernels import launched_names as _launched_names

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


_TWIN_SETUP = """from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(name="twin", packages=["twin"], cmdclass={"build_ext": BuildExtension}, ext_modules=[
    CUDAExtension("twin_a", ["csrc/a.cpp", "csrc/shared.cu"]),
    CUDAExtension("twin_b", ["csrc/b.cpp", "csrc/shared.cu"]),
])
"""
_TWIN_CU = """#include <torch/extension.h>
__global__ void scale_kernel(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void scale_kernel_half(at::Half* x, int n) { int i = threadIdx.x; if (i < n) x[i] = x[i] * 2; }
__global__ void scale_bwd_kernel(float* g, int n) { int i = threadIdx.x; if (i < n) g[i] *= 2.0f; }
void scale(torch::Tensor x) { scale_kernel<<<1, 32>>>(x.data_ptr<float>(), x.numel()); }
"""


def test_a_kernel_compiled_into_two_extensions_is_costed_once(tmp_path: Path) -> None:
    """Two extensions build one .cu: its kernels are ported once (the half-precision copy as a variant, the
    backward in full) and the second extension's build entry is only dropped."""
    (tmp_path / "setup.py").write_text(_TWIN_SETUP)
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "shared.cu").write_text(_TWIN_CU)
    for n in ("a", "b"):
        (tmp_path / "csrc" / f"{n}.cpp").write_text(
            "#include <torch/extension.h>\nvoid scale(torch::Tensor x);\n"
            f"PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def(\"scale_{n}\", &scale); }}\n")
    (tmp_path / "twin").mkdir()
    (tmp_path / "twin" / "__init__.py").write_text("import twin_a\nimport twin_b\n")
    units = analyze(check([str(tmp_path)], jobs=1, use_git=False)).effort.units
    by_kind = Counter(u.kind for u in units)
    assert by_kind["kernel"] == 2 and by_kind["kernel_variant"] == 1, [u.label for u in units]
    assert by_kind["extension"] == 1 and by_kind["extension_replaced"] == 1
    scale = next(u for u in units if u.kind == "kernel" and "`scale_kernel`" in u.label)
    assert "also compiled into `twin_b`" in scale.label
    variant = next(u for u in units if u.kind == "kernel_variant")
    assert "`scale_kernel_half`" in variant.label and "variant of `scale_kernel`" in variant.label
    assert variant.high < effort.cost("kernel").low


_TILELANG = """import tilelang
import tilelang.language as T
from quack.cute_dsl_utils import torch2cute_dtype_map


@tilelang.jit(
    out_idx=[-1],
)
def scan_fwd(n):
    @T.prim_func
    def main(x: T.Tensor((n,), "float32")):
        pass
    return main


@tilelang.jit
def scan_bwd(n):
    @T.prim_func
    def main(x: T.Tensor((n,), "float32")):
        pass
    return main
"""
_CUTE = """import cutlass.cute as cute
from quack.compile_utils import make_fake_tensor


class Step:
    @cute.jit
    def __call__(self, x):
        self.kernel(x).launch(grid=[1, 1, 1])

    @cute.kernel
    def kernel(self, x):
        pass
"""


def test_tile_dsl_kernels_are_costed_per_kernel(tmp_path: Path) -> None:
    """TileLang and CuTe DSL kernels are each a unit (a file's further kernels and a varlen copy as siblings);
    quack, used only by those files, is dropped from the manifest rather than rewritten."""
    from ascend_compat.migrate.effort_kernels import dsl_kernels

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "dslpkg"\nversion = "0"\ndependencies = ["tilelang", "quack-kernels", "torch"]\n')
    pkg = tmp_path / "dslpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "scan.py").write_text(_TILELANG)
    (pkg / "scan_varlen.py").write_text(_TILELANG.replace("def scan_bwd", "def scan_bwd_varlen"))
    (pkg / "step.py").write_text(_CUTE)
    assert [k[1:] for k in dsl_kernels(_CUTE)] == [("CuTe DSL", "Step.kernel")]
    assert [k[2] for k in dsl_kernels(_TILELANG)] == ["scan_fwd", "scan_bwd"]
    units = analyze(check([str(tmp_path)], jobs=1, use_git=False)).effort.units
    dsl = sorted((u.kind, u.label.split("`")[1]) for u in units if u.family == "dsl_kernel")
    assert dsl == [("dsl_kernel", "Step.kernel"), ("dsl_kernel", "scan_fwd"), ("dsl_kernel_sibling", "scan_bwd"),
                   ("dsl_kernel_sibling", "scan_bwd_varlen"), ("dsl_kernel_sibling", "scan_fwd")], dsl
    quack = next(u for u in units if u.label.startswith("dependency `quack-kernels`"))
    assert quack.kind == "dependency_install" and "tile-DSL" in quack.label
