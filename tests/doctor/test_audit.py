"""The op audit: plain modules and a config-built GPT-2 on the CPU, simulator-configured fallbacks on the npu."""

from __future__ import annotations

import json

import pytest

from tests._forkserver import cli
from tests.conftest import ROOT, _clean_env

pytestmark = pytest.mark.filterwarnings("ignore:CAUTION. The operator")


def test_aten_names_map_to_the_lists_api_names():
    from ascend_compat.doctor.audit import api_candidates

    assert "torch.nn.functional.softmax" in api_candidates("aten::_softmax")[0]
    assert "torch.linalg.vector_norm" in api_candidates("aten::linalg_vector_norm")[0]
    names, forward = api_candidates("aten::add_.Tensor")
    assert {"torch.Tensor.add_", "torch.add"} <= set(names) and forward is None
    names, forward = api_candidates("aten::native_layer_norm_backward")
    assert forward == "native_layer_norm" and "torch.nn.functional.layer_norm" in names
    assert api_candidates("vllm::lora_expand") == ((), None)  # other namespaces are not in the lists


def test_plain_modules_conv_rank_and_torch_npu_line(sim):
    # `sim`: the simulator must be installed before the process's first backward pass (autograd sizes its
    # per-device queues once); later npu tests in this process need it.
    import torch

    from ascend_compat.doctor.audit import audit
    from ascend_compat.migrate import apidb

    conv2d = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    report = audit(conv2d, torch.randn(2, 3, 8, 8), backward=True)
    conv = report.get("aten::convolution")
    assert conv.status == "native" and conv.apis == ("torch.nn.functional.conv2d",) and conv.count == 1
    assert report.get("aten::convolution_backward").status == "native"
    assert report.get("aten::relu").dtypes == ("float32",)
    forward_only = audit(conv2d, torch.randn(2, 3, 8, 8))
    assert forward_only.get("aten::convolution_backward") is None

    conv3d = audit(torch.nn.Conv3d(2, 2, 3), torch.randn(1, 2, 4, 4, 4)).get("aten::convolution")
    assert conv3d.status == "falls_back" and conv3d.apis == ("torch.nn.functional.conv3d",)

    x = torch.tensor([1, 1, 2, 2, 3])
    for line in apidb.LINES:
        entry = audit(torch.unique_consecutive, x, line=line).get("aten::unique_consecutive")
        listed = apidb.status("torch.unique_consecutive", line)
        assert entry.status == {"supported": "native", "unsupported": "falls_back"}[listed], line


def test_simulator_unsupported_ops_and_chip_dtype_limits(sim):
    torch = sim
    from ascend_compat import simulate
    from ascend_compat.doctor.audit import OpRecorder, audit, report_from_recorder

    simulate.configure(unsupported_ops=["aten::nonzero"])
    try:
        x = torch.tensor([0.0, 1.0, 2.0], device="npu")
        report = audit(lambda t: [torch.nonzero(t), torch.nonzero(t + 1)], x)
    finally:
        simulate.configure(unsupported_ops=())
    entry = report.get("aten::nonzero")
    assert entry.status == "falls_back" and entry.count == 2 and "simulator" in entry.basis
    assert report.get("aten::add.Tensor").status == "native"
    assert report.chip == "910B" and "npu" in report.device_types

    a = torch.randn(4, 4, dtype=torch.bfloat16)  # audited on the CPU for a target chip
    with OpRecorder() as rec:
        a @ a
    assert report_from_recorder(rec, chip="310P").get("aten::mm").status == "dtype_unsupported"
    assert report_from_recorder(rec, chip="910B").get("aten::mm").status == "native"
    with pytest.raises(ValueError, match="unknown chip"):
        audit(torch.abs, a, chip="A100")


@pytest.mark.slow
def test_gpt2_tiny_forward_and_backward(sim):  # `sim`: see above
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from ascend_compat.doctor.audit import STATUSES, OpRecorder, audit, report_from_recorder

    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 64, (1, 8))
    report = audit(model, ids, kwargs={"labels": ids}, backward=True)
    assert report.get("aten::embedding").status == "native"
    assert report.get("aten::nll_loss_forward").apis == ("torch.nn.functional.nll_loss",)
    norms = sum(isinstance(m, torch.nn.LayerNorm) for m in model.modules())
    assert report.get("aten::native_layer_norm").count == norms
    assert report.get("aten::native_layer_norm_backward").count == norms
    assert set(report.by_status()) == set(STATUSES) and sum(report.by_status().values()) == len(report.ops)
    assert json.loads(json.dumps(report.to_dict()))["schema_version"] == 1

    with OpRecorder() as rec:
        model.to(torch.bfloat16)(ids)
    on_310p = report_from_recorder(rec, chip="310P")
    assert on_310p.get("aten::addmm").status == "dtype_unsupported"
    assert report_from_recorder(rec, chip="910B").get("aten::addmm").status == "native"


@pytest.mark.slow
def test_cli_audit_json_and_bad_line(tmp_path):
    from ascend_compat.cli.main import main

    script = tmp_path / "model.py"
    script.write_text("import sys, torch\nm = torch.nn.Linear(4, 2)\nprint('script says hi', sys.argv[1:])\n"
                      "m(torch.randn(3, 4)).sum()\n")
    proc = cli("audit", "--json", "--torch-npu", "2.6", str(script), "--flag", cwd=ROOT, timeout=300, env=_clean_env())
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # the script's print went to stderr
    assert "script says hi ['--flag']" in proc.stderr
    assert data["schema_version"] == 1 and data["torch_npu_line"] == "2.6" and data["script_exit_code"] == 0
    ops = {o["op"]: o for o in data["ops"]}
    assert ops["aten::addmm"]["status"] == "native" and ops["aten::addmm"]["count"] == 1
    assert main(["audit", "--torch-npu", "1.0", str(script)]) == 2
    assert main(["audit", "--chip", "H100", str(script)]) == 2
