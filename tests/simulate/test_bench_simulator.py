"""benchmarks/bench_simulator.py (issue 15's training-step goal): its repetitions interleave the two sides chunk by
chunk with the same number of calls, reach the least call count, run the A/A control pair interleaved with the A/B
one, report ratios that follow the sides' real cost, and its command line reports usage errors and real runs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter
from types import ModuleType

import pytest

from tests.conftest import ROOT, _clean_env

SCRIPT = ROOT / "benchmarks" / "bench_simulator.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_simulator", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _logging_make(log: list[str], seconds: dict[str, float]):
    """A ``make(device)`` whose steps record which copy ran (``cpu#0``, ``npu#1``, ...) and sleep per device."""
    made: Counter[str] = Counter()

    def make(dev: str):
        name = f"{dev}#{made[dev]}"
        made[dev] += 1

        def step() -> None:
            log.append(name)
            time.sleep(seconds[dev])

        return step

    return make


def _interleaved(pair: list[str], a: str, b: str) -> bool:
    """Whether ``pair`` is chunks of equal size, a then b, b then a, ... (an even number of chunks)."""
    calls = len(pair) // 2
    for chunk in (c for c in range(1, calls + 1) if calls % c == 0 and (calls // c) % 2 == 0):
        want: list[str] = []
        for i in range(calls // chunk):
            want += [a] * chunk + [b] * chunk if i % 2 == 0 else [b] * chunk + [a] * chunk
        if pair == want:
            return True
    return False


def test_repetitions_interleave_equal_chunks_and_the_control_takes_turns(bench):
    log: list[str] = []
    row = bench.measure(_logging_make(log, {"cpu": 2e-3, "npu": 2e-3}), reps=4, min_ms=4, min_calls=6, control="cpu")
    calls = row["calls_per_rep_per_side"]
    assert calls >= 6 and len(row["rep_ratios"]) == 4 and len(row["control"]["rep_ratios"]) == 4
    timed = log[-4 * 2 * 2 * calls:]  # after warm-up and sizing: 4 reps of A/B and A/A, two sides each
    assert Counter(timed) == {"cpu#0": 4 * calls, "npu#0": 4 * calls, "cpu#1": 4 * calls, "cpu#2": 4 * calls}
    reps = [timed[i:i + 4 * calls] for i in range(0, len(timed), 4 * calls)]
    for r, rep in enumerate(reps):
        pairs = [rep[:2 * calls], rep[2 * calls:]]
        ab, aa = pairs if r % 2 == 0 else pairs[::-1]
        assert _interleaved(ab, "cpu#0", "npu#0") and _interleaved(aa, "cpu#1", "cpu#2")


def test_ratios_follow_the_cost_of_each_side(bench):
    row = bench.measure(_logging_make([], {"cpu": 1e-3, "npu": 3e-3}), reps=3, min_ms=10, min_calls=2)
    assert 2.0 < row["ratio"] < 4.0 and row["worst_rep_ratio"] >= row["ratio"] >= row["best_rep_ratio"]
    assert row["reps_above_goal"] == 3
    assert 0.6 < row["control"]["ratio"] < 1.6  # the same cost on both sides of the A/A pair
    assert row["npu_us"] > 2 * row["cpu_us"]
    none = bench.measure(_logging_make([], {"cpu": 1e-3, "npu": 1e-3}), reps=2, min_ms=2, control="none")
    assert "control" not in none


def _busy(seconds: float) -> None:
    end = time.thread_time() + seconds  # this thread's: other threads of the test process may be busy too
    while time.thread_time() < end:
        pass


def test_cpu_time_ratios_count_the_work_not_the_waiting(bench):
    """The npu side waits 2 ms more per call but works as long as the CPU side: its wall ratio is ~3, its CPU-time
    ratio ~1 (what a busy machine's preemption adds shows in the first, not in the second)."""

    def make(dev: str):
        def step() -> None:
            _busy(1e-3)
            if dev == "npu":
                time.sleep(2e-3)

        return step

    row = bench.measure(make, reps=3, min_ms=10, min_calls=2, control="none")
    assert row["ratio"] > 2.0
    assert 0.7 < row["cpu_time_ratio"] < 1.4 and len(row["rep_cpu_time_ratios"]) == 3
    assert row["worst_rep_cpu_time_ratio"] == max(row["rep_cpu_time_ratios"]) >= row["cpu_time_ratio"]


def test_a_long_step_still_gets_the_least_number_of_calls(bench):
    log: list[str] = []
    row = bench.measure(_logging_make(log, {"cpu": 20e-3, "npu": 20e-3}), reps=1, min_ms=5, min_calls=3,
                        control="none")
    assert row["calls_per_rep_per_side"] == 4  # 3, rounded up to an even number of one-call chunks
    assert log[-8:] == ["cpu#0", "npu#0", "npu#0", "cpu#0"] * 2  # one call per chunk, first side alternating


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=_clean_env(), cwd=str(ROOT))


@pytest.mark.parametrize("args", [["--reps", "0"], ["--min-calls", "0"], ["--control", "gpu"], ["--bogus"]])
def test_usage_errors_exit_2_on_stderr(args):
    proc = _cli(*args, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "" and "usage:" in proc.stderr


def test_json_run_reports_the_pair_the_control_and_the_switches():
    proc = _cli("--case", "mlp", "--reps", "2", "--min-ms", "2", "--min-calls", "2", "--threads", "1",
                "--control", "npu", "--host-blas", "off", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["host_blas"] == "off" and report["control"] == "npu" and report["min_calls"] == 2
    (row,) = report["rows"]
    assert row["case"] == "mlp train step (64x256)" and row["calls_per_rep_per_side"] >= 2
    assert len(row["rep_ratios"]) == 2 and row["control"]["device"] == "npu" and len(row["control"]["rep_ratios"]) == 2
    assert row["host_blas_products"] == 0  # --host-blas off: torch's kernel ran every npu product
    assert row["cpu_us"] > 0 and row["npu_us"] > 0 and isinstance(report["notes"], list)
    assert isinstance(report["goal_train_step_within_1.1x_every_rep"], bool)
    assert isinstance(report["goal_in_cpu_time"], bool) and len(row["rep_cpu_time_ratios"]) == 2


def test_text_run_names_the_host_blas_and_the_goal_verdict():
    proc = _cli("--case", "mlp", "--reps", "1", "--min-ms", "1", "--min-calls", "2", "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "mlp train step (64x256)" in out and "A/A cpu reps" in out and "npu/cpu reps" in out
    assert "goal (train steps within 1.1x in every rep):" in out and "; in CPU time: " in out
    assert "the same in CPU time (worst " in out
    from ascend_compat.simulate import _host_blas

    if _host_blas.find() is not None:  # the MLP's backward has products that take it (grad_W = grad^T @ x)
        assert "of the npu's matrix products ran on NumPy's OpenBLAS" in out
