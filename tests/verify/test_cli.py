"""``ascend-compat verify`` as users run it: a process per command (forked from a warm interpreter,
tests/_forkserver.py), JSON output, exit codes."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from tests._forkserver import cli
from tests.conftest import _clean_env

MODEL_SCRIPT = textwrap.dedent("""
    import torch


    class TanhOffOnNpu(torch.nn.Module):
        def forward(self, x):
            y = torch.tanh(x)
            return y + 1e-2 if x.device.type == "npu" else y


    def _net(act):
        return torch.nn.Sequential(torch.nn.Linear(8, 16), act, torch.nn.Linear(16, 4))


    def clean():
        return _net(torch.nn.Tanh()), torch.randn(2, 8)


    def faulty():
        return _net(TanhOffOnNpu()), torch.randn(2, 8)
""")


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return cli("verify", *args, env=_clean_env(), timeout=300, cwd=cwd)


def test_ops_json_on_the_simulated_npu():
    proc = _cli("ops", "--simulate", "npu", "--json", "--only", "matmul,attention,embedding", "--dtype",
                "float32,bfloat16")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1 and data["kind"] == "ops"
    assert data["device"] == "npu" and data["simulated"] is True and data["fallback"] is None
    ops = {(r["op"], r["dtype"]): r["status"] for r in data["results"]}
    assert ops[("npu_fusion_attention", "bfloat16")] == "pass" and ops[("embedding", "float32")] == "pass"
    assert set(ops.values()) == {"pass"} and len(ops) == 2 * 4  # "matmul" is the op, not its group


def test_ops_without_an_npu_fall_back_to_the_cpu():
    proc = _cli("ops", "--device", "npu", "--json", "--only", "matmul,npu_rms_norm", "--dtype", "float32")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["device"] == "cpu" and data["requested_device"] == "npu" and "CPU fallback" in data["fallback"]
    assert {r["op"]: r["status"] for r in data["results"]} == {"matmul": "pass", "npu_rms_norm": "skipped"}


def test_readme_shorthand_verify_device_npu_is_the_op_suite():
    # cuda-morph's README: `cuda-morph verify --device npu`; the console script is the same entry point.
    env = {**_clean_env(), "ASCEND_COMPAT_SIMULATE": "npu"}
    proc = cli("verify", "--device", "npu", "--only", "matmul", "--dtype", "float32", "--json", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["kind"] == "ops" and data["device"] == "npu" and data["simulated"] is True
    assert [(r["op"], r["status"]) for r in data["results"]] == [("matmul", "pass")]
    # Without an NPU it is the same fallback as `verify ops --device npu`, said in the report.
    plain = _cli("--device", "npu", "--only", "matmul", "--dtype", "float32")
    assert plain.returncode == 0 and "CPU fallback" in plain.stdout, plain.stderr
    assert _cli("--device", "npu", "--only", "no_such_op").returncode == 2
    assert "is short for" in _cli("--help").stdout


def test_shorthand_only_applies_without_a_subcommand():
    from ascend_compat.cli.verify import shorthand

    assert shorthand(["verify", "--device", "npu"]) == ["verify", "ops", "--device", "npu"]
    assert shorthand(["verify", "model", "x.py:f"]) == ["verify", "model", "x.py:f"]
    assert shorthand(["verify", "-h"]) == ["verify", "-h"] and shorthand(["verify"]) == ["verify"]


@pytest.mark.slow
def test_a_failing_op_exits_1_and_is_shown_as_failed(forked):
    proc = forked.run(code="""
        import sys
        import torch
        from ascend_compat import simulate
        from ascend_compat.cli.main import main

        simulate.install()
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("_softmax", lambda x, dim, h: torch._softmax(x.cpu().half(), dim, False).float().to(x.device),
                 "PrivateUse1")
        sys.exit(main(["verify", "ops", "--simulate", "npu", "--only", "softmax,log_softmax", "--dtype", "float32"]))
    """)
    assert proc.returncode == 1, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert "FAIL" in lines["softmax"] and "PASS" in lines["log_softmax"]
    assert "1 failed" in proc.stdout


def test_unknown_op_is_a_usage_error(capsys):
    from ascend_compat.cli.main import main

    assert main(["verify", "ops", "--device", "cpu", "--only", "no_such_op"]) == 2
    assert "unknown op no_such_op" in capsys.readouterr().err
    assert main(["verify"]) == 2  # no subcommand: help


@pytest.mark.slow
def test_model_names_the_first_divergence_and_exits_1(tmp_path):
    (tmp_path / "nets.py").write_text(MODEL_SCRIPT)
    proc = _cli("model", "nets.py:faulty", "--simulate", "npu", "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1 and data["kind"] == "model" and data["ok"] is False
    assert data["first_divergence"]["name"] == "1" and data["first_divergence"]["module_type"] == "TanhOffOnNpu"
    assert [(r["name"], r["ok"]) for r in data["layers"]] == [("0", True), ("1", False), ("2", False),
                                                                  ("(model)", False)]


@pytest.mark.slow
def test_model_clean_passes_and_a_missing_factory_is_a_usage_error(tmp_path):
    script = tmp_path / "nets.py"
    script.write_text(MODEL_SCRIPT)
    proc = _cli("model", "nets:clean", "--simulate", "npu", "--backward", cwd=tmp_path)  # module:factory form
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "verdict: MATCH" in proc.stdout and "cpu (reference) vs npu (target)" in proc.stdout
    proc = _cli("model", f"{script}:nope", "--simulate", "npu")
    assert proc.returncode == 2 and "has no 'nope'" in proc.stderr


def test_model_refuses_to_compare_the_cpu_with_itself_and_unknown_devices(tmp_path):
    script = tmp_path / "nets.py"
    script.write_text(MODEL_SCRIPT)
    proc = _cli("model", f"{script}:clean")  # no NPU here and no --simulate: the target would be the CPU
    assert proc.returncode == 2 and "nothing to compare" in proc.stderr, proc.stderr + proc.stdout
    proc = _cli("model", f"{script}:clean", "--target", "tpu")
    assert proc.returncode == 2 and "unknown device 'tpu'" in proc.stderr
