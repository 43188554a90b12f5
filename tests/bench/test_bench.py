"""``ascend_compat.bench`` in-process, on the simulated npu and on CPU fallback: structure and invariants only.

Tiny repeat counts keep these fast; no test asserts a timing threshold (the figures depend on the machine).
"""

from __future__ import annotations

import json
import math
import sys

import pytest

from ascend_compat import bench, cuda_shim
from ascend_compat.bench import fingerprint, output
from ascend_compat.bench.ops import OPS, time_calls
from ascend_compat.bench.overhead import CASES, Case

FAST = {"repeats": 2, "min_time": 0.001, "startup_repeats": 0}  # the fresh-process figure: its own tests


def _patch_points(torch):
    return {
        "device": torch.device,
        "zeros": torch.zeros,
        "to": torch.Tensor.__dict__.get("to"),
        "cuda": torch.Tensor.__dict__.get("cuda"),
        "mcuda": torch.nn.Module.__dict__["cuda"],
        "avail": torch.cuda.is_available,
        "sync": torch.cuda.synchronize,
        "autocast": torch.amp.autocast_mode.autocast.__dict__["__init__"],
    }


def _assert_restored(torch, before):
    assert not cuda_shim.is_activated()
    after = _patch_points(torch)
    assert [k for k in before if after[k] is not before[k]] == []


def _check_overhead(report, target):
    assert report["schema_version"] == bench.SCHEMA_VERSION and report["kind"] == "overhead"
    assert report["settings"]["target"] == target
    assert report["failed"] == 0, [(r["call"], r["error"]) for r in report["rows"] if r["error"]]
    assert [r["call"] for r in report["rows"]] == [c.shim.format(t=target) for c in CASES]
    natives = {r["call"]: r["native"] for r in report["rows"]}
    assert natives['torch.device("cuda")'] == f'torch.device("{target}")'
    assert natives["torch.cuda.synchronize()"] == f"torch.{target}.synchronize()"
    assert natives['with torch.autocast("cuda"): pass'] == f'with torch.autocast("{target}"): pass'
    assert all("cuda" not in r["native"] for r in report["rows"])
    for r in report["rows"]:
        for side in ("shim", "native"):
            stats = r[f"{side}_ns"]
            assert stats["n"] == FAST["repeats"] == len(r["samples_ns"][side])
            assert all(s > 0 for s in r["samples_ns"][side])
            assert stats["min"] <= stats["q1"] <= stats["median"] <= stats["q3"] <= stats["max"]
            assert stats["iqr"] == pytest.approx(stats["q3"] - stats["q1"])
            assert r["number"][side] >= 1
        assert r["ratio"] == pytest.approx(r["shim_ns"]["median"] / r["native_ns"]["median"])
        assert r["added_ns"] == pytest.approx(r["shim_ns"]["median"] - r["native_ns"]["median"])
    assert {r["kind"] for r in report["rows"]} == {"redirect", "passthrough"}
    assert report["activation_ms"]["activate"]["n"] == FAST["repeats"]
    fp = report["fingerprint"]
    assert set(fp) == set(fingerprint.KEYS)
    assert fp["device"] == target and fp["cpu_count"] >= 1 and fp["torch"] and fp["python"]
    json.loads(json.dumps(report, allow_nan=False))


def test_overhead_on_the_simulated_npu_times_every_redirection_and_rolls_back(sim):
    torch = sim
    before = _patch_points(torch)
    report = bench.run_overhead(simulate="npu", **FAST)
    _check_overhead(report, "npu")
    assert report["fingerprint"]["simulated"] is True and report["fingerprint"]["backend"] == "npu"
    _assert_restored(torch, before)
    # The process still works natively afterwards: "cuda" is CUDA again, npu tensors are real.
    assert torch.device("cuda").type == "cuda" and torch.ones(2, device="npu").device.type == "npu"


def test_overhead_on_cpu_fallback_uses_native_cpu_spellings(sim):
    torch = sim
    before = _patch_points(torch)
    report = bench.run_overhead(backend="cpu", **FAST)
    _check_overhead(report, "cpu")
    natives = {r["call"]: r["native"] for r in report["rows"]}
    # The same work on both sides: x.cuda() moves to the target device, as x.to(d) does (x.cpu() returns x itself).
    assert natives["x.cuda()"] == "x.to(d)" and natives["m.cuda()"] == "m.to(d)"
    assert report["fingerprint"]["backend"] == "cpu"
    _assert_restored(torch, before)


def test_overhead_reports_a_failing_case_on_its_row_and_times_the_rest(sim):
    torch = sim
    before = _patch_points(torch)
    cases = (Case("torch.cuda.no_such_api()", "torch.{t}.synchronize()"), CASES[0])
    report = bench.run_overhead(simulate="npu", cases=cases, **FAST)
    bad, good = report["rows"]
    assert bad["error"].startswith("shim: AttributeError") and "ratio" not in bad
    assert good["error"] is None and good["ratio"] > 0
    assert report["failed"] == 1
    _assert_restored(torch, before)


def test_overhead_leaves_the_shim_off_when_interrupted_while_it_is_on(sim):
    torch = sim
    before = _patch_points(torch)
    seen = []

    def progress(done, total):
        seen.append(cuda_shim.is_activated())
        if len(seen) == len(CASES) + 1:  # the first case timed with the shim on
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bench.run_overhead(simulate="npu", progress=progress, **FAST)
    assert seen[-1] is True  # the fault really hit while the shim was active
    _assert_restored(torch, before)


def test_overhead_refuses_when_the_shim_is_already_on(sim):
    cuda_shim.activate()
    try:
        with pytest.raises(bench.BenchError, match="already active"):
            bench.run_overhead(simulate="npu", **FAST)
        assert cuda_shim.is_activated()  # the caller's activation is left alone
    finally:
        cuda_shim.deactivate()
    assert not cuda_shim.is_activated()


def test_overhead_and_model_refuse_when_the_shim_does_not_activate(sim, monkeypatch):
    monkeypatch.setenv("ASCEND_COMPAT_NO_PATCH", "1")
    with pytest.raises(bench.BenchError, match=r"does not activate here .*ASCEND_COMPAT_NO_PATCH"):
        bench.run_overhead(simulate="npu", **FAST)
    with pytest.raises(bench.BenchError, match="does not activate here"):
        bench.run_model(factory="tests.bench.factories:mlp", simulate="npu", steps=1, warmup=0)
    monkeypatch.delenv("ASCEND_COMPAT_NO_PATCH")
    assert not cuda_shim.is_activated() and cuda_shim.activate() == "npu"  # the no-op activation was undone
    cuda_shim.deactivate()


@pytest.mark.parametrize("bad", [{"repeats": 0}, {"min_time": 0}])
def test_overhead_rejects_bad_settings(sim, bad):
    with pytest.raises(bench.BenchError):
        bench.run_overhead(simulate="npu", **{**FAST, **bad})


def test_time_calls_synchronizes_before_each_stop():
    events = []
    samples = time_calls(
        lambda: events.append("call"), lambda: events.append("sync"), warmup=2, min_time=0, min_iters=3, max_iters=3
    )
    assert len(samples) == 3 and all(s >= 0 for s in samples)
    # warm-up calls, one sync, then every timed call followed by its sync
    assert events == ["call", "call", "sync"] + ["call", "sync"] * 3


def test_ops_on_the_simulated_npu_rows_and_percentiles(sim):
    report = bench.run_ops(device="npu", sizes=(8, 16), min_time=0, min_iters=3, max_iters=3, warmup=1)
    assert report["kind"] == "ops" and report["settings"]["device"] == "npu"
    rows = {(r["op"], r["size"]): r for r in report["rows"]}
    assert set(rows) == {(op, n) for op in OPS for n in (8, 16)}
    assert report["failed"] == 0, [(r["op"], r["error"]) for r in report["rows"] if r["error"]]
    for r in report["rows"]:
        lat = r["latency_us"]
        assert lat["n"] == 3 and 0 < lat["min"] <= lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    assert rows[("matmul", 8)]["gflops"] > 0 and rows[("softmax", 8)]["gflops"] is None
    assert set(report["fingerprint"]) == set(fingerprint.KEYS) and report["fingerprint"]["device"] == "npu"
    json.loads(json.dumps(report, allow_nan=False))


def test_ops_an_op_the_device_cannot_run_is_reported_on_its_row(sim):
    from ascend_compat import simulate

    # Fault: a 512x512 float32 tensor (1 MiB) no longer fits. The limit counts what earlier tests of this process
    # still hold on the device, so it is set above that.
    in_use = sim.npu.memory_allocated(0)  # "npu" is npu:0 here
    simulate.configure(memory_limit=in_use + 256 * 1024)
    try:
        report = bench.run_ops(device="npu", sizes=(8, 512), ops=("matmul", "add"), min_time=0, min_iters=1,
                               max_iters=1, warmup=0)  # fmt: skip
    finally:
        simulate.configure(memory_limit=None)
    errors = {(r["op"], r["size"]): r["error"] for r in report["rows"]}
    assert errors[("matmul", 8)] is None and errors[("add", 8)] is None
    assert "memory" in errors[("matmul", 512)].lower() and "memory" in errors[("add", 512)].lower()
    assert report["failed"] == 2 and "error:" in output.render(report)


def test_ops_on_cpu_in_half_precision(sim):
    report = bench.run_ops(device="cpu", dtype="bfloat16", sizes=(8,), ops=("matmul", "conv2d"), min_time=0,
                           min_iters=2, max_iters=2, warmup=0)  # fmt: skip
    assert report["failed"] == 0 and [r["op"] for r in report["rows"]] == ["matmul", "conv2d"]


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"ops": ("nope",)}, "unknown op"),
        ({"device": "npu:7"}, "not usable"),
        ({"dtype": "int8"}, "unknown dtype"),
        ({"sizes": (0,)}, "positive"),
    ],
)
def test_ops_bad_input_is_a_clear_error(sim, bad, match):
    with pytest.raises(bench.BenchError, match=match):
        bench.run_ops(**{"device": "npu", "sizes": (8,), "min_time": 0, "min_iters": 1, "max_iters": 1, **bad})


def _check_model(report, steps, batch):
    assert report["kind"] == "model"
    for side in ("shim_off", "shim_on"):
        r = report[side]
        lat = r["latency_ms"]
        assert lat["n"] == steps and 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]
        assert r["samples_per_s"] == pytest.approx(batch * steps / (lat["mean"] * steps / 1e3))
    on, off = report["shim_on"], report["shim_off"]
    assert report["throughput_ratio"] == pytest.approx(on["samples_per_s"] / off["samples_per_s"])
    assert report["latency_ratio_p50"] == pytest.approx(on["latency_ms"]["p50"] / off["latency_ms"]["p50"])
    assert set(report["fingerprint"]) == set(fingerprint.KEYS)
    json.loads(json.dumps(report, allow_nan=False))


@pytest.mark.slow
def test_model_factory_train_step_on_cpu_fallback(sim):
    torch = sim
    before = _patch_points(torch)
    report = bench.run_model(factory="tests.bench.factories:mlp", backend="cpu", batch=3, steps=4, warmup=1,
                             rounds=2, train=True)  # fmt: skip
    _check_model(report, steps=4, batch=3)
    assert report["settings"]["mode"] == "train" and report["settings"]["target"] == "cpu"
    assert report["settings"]["factory"] == "tests.bench.factories:mlp"
    _assert_restored(torch, before)


@pytest.mark.parametrize(
    "factory, match",
    [
        ("tests.bench.factories", "SCRIPT_OR_MODULE:FACTORY"),
        ("tests.bench.no_such_module:mlp", "No module named"),
        ("tests.bench.factories:not_a_pair", r"must return \(torch.nn.Module, inputs\)"),
        ("tests.bench.factories:broken", "factory exploded"),
    ],
)
def test_model_bad_factory_is_a_clear_error_and_leaves_the_shim_off(sim, factory, match):
    with pytest.raises(bench.BenchError, match=match):
        bench.run_model(factory=factory, simulate="npu", steps=1, warmup=0)
    assert not cuda_shim.is_activated()


def _fake_report(kind):
    """A report of each kind from the real benchmarks, tiny settings (shared by the output tests)."""
    if kind == "overhead":
        return bench.run_overhead(simulate="npu", cases=CASES[:3], **FAST)
    if kind == "ops":
        return bench.run_ops(device="npu", sizes=(8,), ops=("matmul", "add"), min_time=0, min_iters=2, max_iters=2)
    return bench.run_model(factory="tests.bench.factories:mlp", simulate="npu", batch=2, steps=2, warmup=0)


@pytest.mark.parametrize("kind", ["overhead", "ops", "model"])
def test_table_and_csv_have_one_line_per_case(sim, kind, tmp_path):
    import csv

    report = _fake_report(kind)
    text = output.render(report)
    assert report["fingerprint"]["cpu_model"] in text and "\033[" not in text
    assert "\033[1m" in output.render(report, color=True)
    path = tmp_path / f"{kind}.csv"
    output.write_csv(report, str(path))
    rows = list(csv.DictReader(path.open()))
    header, _ = output.csv_rows(report)
    assert list(rows[0]) == header
    if kind == "overhead":
        assert [r["call"] for r in rows] == [r["call"] for r in report["rows"]]
        for r in rows:
            assert float(r["ratio"]) == pytest.approx(float(r["shim_ns_median"]) / float(r["native_ns_median"]))
            assert r["call"] in text
    elif kind == "ops":
        assert [(r["op"], int(r["size"])) for r in rows] == [("matmul", 8), ("add", 8)]
        assert all(float(r["p50_us"]) > 0 and r["device"] == "npu" for r in rows)
    else:
        assert [r["shim"] for r in rows] == ["off", "on"]
        assert all(float(r["samples_per_s"]) > 0 and not math.isnan(float(r["p99_ms"])) for r in rows)
    assert [p.name for p in tmp_path.iterdir()] == [f"{kind}.csv"]  # no temporary file left behind


@pytest.mark.parametrize("kind", ["overhead", "ops", "model"])
def test_plot_writes_a_png(sim, kind, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"{kind}.png"
    output.plot(_fake_report(kind), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_a_clear_error(sim, tmp_path, monkeypatch):
    report = _fake_report("ops")
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # fault: matplotlib not installed
    with pytest.raises(bench.BenchError, match=r"ascend-compat\[plot\]"):
        output.plot(report, str(tmp_path / "x.png"))
    assert list(tmp_path.iterdir()) == []
