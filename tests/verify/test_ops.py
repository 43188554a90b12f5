"""The op suite on the simulated NPU and on the CPU, and that it catches a kernel computing differently."""

from __future__ import annotations

import pytest

from ascend_compat.verify import ops
from ascend_compat.verify.ops import STATUSES, OpCase, run_case, run_ops


@pytest.fixture(scope="module")
def npu_report(sim):
    return run_ops("npu")


def test_suite_passes_on_the_simulated_npu_in_every_dtype(sim, npu_report):
    assert npu_report.device == "npu" and npu_report.simulated and npu_report.fallback is None
    assert npu_report.dtypes == ["float32", "float16", "bfloat16"]
    names = {c.name for c in ops.build_suite()}
    for dtype in npu_report.dtypes:
        ran = {r.op for r in npu_report.results if r.dtype == dtype}
        assert ran == names
    for r in npu_report.results:  # torch_npu's fused ops are present on the simulated npu, so nothing is skipped
        assert r.status == "pass", (r.op, r.dtype, r.status, r.detail)
    assert npu_report.ok


def test_results_carry_the_metrics_and_thresholds_they_were_judged_by(npu_report):
    for r in npu_report.results:
        assert r.status in STATUSES
        if r.status == "error":
            continue
        assert r.numel > 0 and 0 <= r.ratio <= 1 and r.mismatched == 0
        assert r.max_abs <= r.atol + r.rtol * 1e3  # outputs are O(1): no error is larger than the bound allows
    low = {r.op: r for r in npu_report.results if r.dtype == "bfloat16"}
    high = {r.op: r for r in npu_report.results if r.dtype == "float32"}
    assert low["matmul"].max_abs > high["matmul"].max_abs  # the golden is float64: the dtype's error shows
    assert high["embedding"].max_abs == 0 and high["embedding"].rtol == 0  # data movement must be exact


def test_report_serialises_with_a_schema_version(npu_report):
    data = npu_report.to_dict()
    assert data["schema_version"] == ops.SCHEMA_VERSION and data["kind"] == "ops"
    assert data["ok"] is npu_report.ok and sum(data["counts"].values()) == len(npu_report.results)
    assert {"op", "dtype", "status", "rtol", "atol", "max_abs", "max_rel", "cosine"} <= set(data["results"][0])
    text = ops.render(npu_report)
    assert "npu_fusion_attention" in text and "simulated NPU" in text and "0 failed" in text


def test_suite_on_cpu_skips_the_npu_only_ops(sim):
    report = run_ops("cpu", dtypes=("float32",), only=["norm", "attention", "matmul"])
    status = {r.op: (r.status, r.detail) for r in report.results}
    assert report.device == "cpu" and not report.simulated
    assert status["npu_rms_norm"] == ("skipped", "only on npu")
    assert status["npu_fusion_attention"][0] == "skipped"
    assert {op for op, (s, _) in status.items() if s == "pass"} == {"matmul", "layer_norm", "rms_norm", "sdpa"}
    assert report.ok


def test_a_kernel_computing_in_lower_precision_on_the_npu_fails(sim, npu_kernel):
    torch = sim

    def softmax_in_bf16(x, dim, half_to_float):
        return torch._softmax(x.cpu().to(torch.bfloat16), dim, False).to(x.dtype).to(x.device)

    with npu_kernel("_softmax", softmax_in_bf16):
        report = run_ops("npu", dtypes=("float32",), only=["softmax", "log_softmax"])
    by_op = {r.op: r for r in report.results}
    assert by_op["softmax"].status == "fail"
    assert by_op["softmax"].mismatched > 0 and by_op["softmax"].ratio > 1
    assert by_op["log_softmax"].status == "pass"  # its own kernel: untouched
    assert not report.ok and report.counts()["fail"] == 1
    assert "FAIL" in ops.render(report)


def test_an_op_that_raises_is_an_error_and_the_suite_goes_on(sim):
    def boom(i):
        raise RuntimeError("aclnnFoo failed\nmore")

    torch = sim
    case = OpCase("matmul", "matmul", lambda g: {"a": torch.randn(2, 2, generator=g)}, boom)
    result = run_case(case, "npu", "float32")
    assert result.status == "error" and result.detail == "RuntimeError: aclnnFoo failed"


def test_bad_names_are_clear_errors(sim):
    with pytest.raises(ValueError, match="unknown dtype"):
        run_ops("cpu", dtypes=("float8",))
    with pytest.raises(ValueError, match="unknown op nope"):
        run_ops("cpu", only=["nope"])
