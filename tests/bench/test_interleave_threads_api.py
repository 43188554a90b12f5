"""Issue 15: interleaved sides, the fresh-process activation figure, the threads rule and ``OpLatencyBench``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ascend_compat import bench, cuda_shim
from ascend_compat.bench import _common, overhead, startup
from ascend_compat.bench.overhead import CASES
from tests._forkserver import cli
from tests.conftest import ROOT, _clean_env


def test_overhead_interleaves_the_sides_every_repetition(sim, monkeypatch):
    order: list[tuple[str, bool]] = []
    real_side = overhead._side

    def side(sampler, name):
        order.append((name, cuda_shim.is_activated()))
        real_side(sampler, name)

    monkeypatch.setattr(overhead, "_side", side)
    report = bench.run_overhead(simulate="npu", cases=CASES[:2], repeats=4, min_time=0.001, startup_repeats=0)
    # A,B per repetition (native first on even repetitions, shim first on odd): never a run of one side only.
    assert [name for name, _ in order] == ["native", "shim", "shim", "native"] * 2
    assert all(on == (name == "shim") for name, on in order)
    assert report["settings"]["interleaved"] is True
    assert all(len(r["samples_ns"]["shim"]) == len(r["samples_ns"]["native"]) == 4 for r in report["rows"])


def test_overhead_x_cuda_and_x_to_d_do_the_same_work(sim):
    report = bench.run_overhead(simulate="npu", cases=CASES[1:2], repeats=2, min_time=0.001, startup_repeats=0)
    (row,) = report["rows"]
    assert (row["call"], row["native"], row["error"]) == ("x.cuda()", "x.to(d)", None)


@pytest.mark.slow
def test_overhead_reports_the_first_activation_in_a_fresh_process(sim):
    report = bench.run_overhead(backend="cpu", cases=CASES[:1], repeats=1, min_time=0.001, startup_repeats=2)
    first = report["first_activation"]
    assert first["ms"]["n"] == 2 and all(ms > 0 for ms in first["samples_ms"]) and first["target"] == "cpu"
    assert "ascend_compat.cuda_shim" in first["modules"]
    from ascend_compat.bench import output

    assert "first activation in a fresh process" in output.render(report)


def test_first_activation_child_times_activation_after_torch():
    code = startup.child_code(simulate=None, backend="cpu")
    # torch (and the collector's debt from importing it) before the clock; ascend_compat and activate() inside it.
    assert code.index("import torch") < code.index("gc.collect()") < code.index("t0 = ") < code.index("activate(")
    with pytest.raises(bench.BenchError):
        startup.first_activation(0)


@pytest.mark.parametrize(
    "cores, load, expected",
    [(2, 0.0, 1), (4, 0.1, 1), (16, 9.0, 1), (16, 1.0, None), (64, 0.0, None)],
)
def test_threads_auto_rule(monkeypatch, cores, load, expected):
    monkeypatch.setattr(_common, "usable_cores", lambda: cores)
    monkeypatch.setattr(_common.os, "getloadavg", lambda: (load, load, load))
    n, why = _common.resolve_threads("auto")
    assert n == expected and why.startswith("auto: ")
    assert ("shared machine" in why) == (expected == 1)


def test_threads_explicit_and_torch_default():
    assert _common.resolve_threads(3) == (3, "requested (--threads)")
    assert _common.resolve_threads("2")[0] == 2
    assert _common.resolve_threads("torch")[0] is None and _common.resolve_threads(None)[0] is None
    for bad in (0, "x"):
        with pytest.raises(bench.BenchError):
            _common.resolve_threads(bad)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return cli("bench", *args, env=_clean_env(), cwd=ROOT, timeout=240)


def test_cli_ops_says_how_many_threads_and_why():
    quick = ("ops", "--device", "cpu", "--sizes", "8", "--ops", "add", "--min-time", "0", "--max-iters", "5")
    proc = _cli(*quick, "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)["settings"]
    expected, _ = _common.resolve_threads("auto")  # the same machine, the same rule
    assert s["threads_rule"].startswith("auto: ")
    if expected == 1:
        assert s["threads"] == 1 and "shared machine" in s["threads_rule"]
    table = _cli(*quick, "--threads", "2")
    assert table.returncode == 0, table.stderr
    assert "torch threads: 2 (requested (--threads))" in table.stdout
    assert _cli(*quick, "--threads", "zero").returncode == 2


def test_op_latency_bench_on_the_simulated_npu_and_cpu(sim):
    from ascend_compat.bench import OpLatencyBench, OpLatencyReport

    for device in ("npu", "cpu"):
        quick = {"sizes": (8,), "ops": ("matmul", "add"), "min_time": 0, "min_iters": 3, "max_iters": 3}
        result = OpLatencyBench(device=device, **quick).run()
        assert isinstance(result, OpLatencyReport)
        assert result["kind"] == "ops" and result["settings"]["device"] == device and result["failed"] == 0
        assert [r["op"] for r in result.rows] == ["matmul", "add"]
        text = result.report()
        assert f"ops on {device}" in text and "matmul" in text and "torch threads:" in text
        assert json.loads(result.to_json())["kind"] == "ops" and result.to_csv().startswith("op,")


@pytest.mark.slow
def test_op_latency_bench_import_is_cheap_and_the_readme_line_works():
    # The seed README: `from ascend_compat.bench import OpLatencyBench; OpLatencyBench(device="npu").run().report()`.
    code = (
        "import sys\n"
        "from ascend_compat.bench import OpLatencyBench\n"
        "assert 'torch' not in sys.modules\n"
        "from ascend_compat import simulate; simulate.install()\n"
        "report = OpLatencyBench(device='npu', sizes=(8,), ops=('add',), min_time=0, min_iters=2, max_iters=2).run()\n"
        "print(report.report())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_clean_env(), cwd=ROOT,
                          timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "ops on npu" in proc.stdout
