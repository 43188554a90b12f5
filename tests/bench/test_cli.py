"""``ascend-compat bench`` as users run it: a process per command (forked from a warm interpreter,
tests/_forkserver.py), tiny settings, shapes and exit codes only."""

from __future__ import annotations

import csv
import json

import pytest

from tests._forkserver import cli
from tests.conftest import ROOT, _clean_env


def _bench(*args, env=None, timeout=240):
    full = _clean_env()
    full.update(env or {})
    return cli("bench", *args, env=full, cwd=ROOT, timeout=timeout)


@pytest.mark.slow
def test_overhead_simulated_npu_json_and_csv(tmp_path):
    out_csv = tmp_path / "overhead.csv"
    proc = _bench("overhead", "--simulate", "npu", "--repeats", "2", "--min-time", "0.001", "--json",
                  "--csv", str(out_csv))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["schema_version"] == 1 and report["kind"] == "overhead"
    assert report["settings"]["target"] == "npu" and report["fingerprint"]["simulated"] is True
    calls = [r["call"] for r in report["rows"]]
    for expected in ('torch.device("cuda")', "x.cuda()", 'x.to("cuda")', "torch.cuda.synchronize()", "m.cuda()",
                     'with torch.autocast("cuda"): pass', "with torch.cuda.amp.autocast(): pass"):  # fmt: skip
        assert expected in calls
    assert all(r["error"] is None and r["ratio"] > 0 for r in report["rows"])
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["call"] for r in rows] == calls


@pytest.mark.slow
def test_overhead_cpu_fallback_table():
    proc = _bench("overhead", "--repeats", "2", "--min-time", "0.001", env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "shim on vs native on cpu" in proc.stdout and "x.to(d)" in proc.stdout and "x.cpu()" not in proc.stdout
    assert "first activation in a fresh process" in proc.stdout
    assert "\033[" not in proc.stdout
    assert "torch.cuda.is_available()" in proc.stdout and "activate():" in proc.stdout


@pytest.mark.slow
def test_ops_and_model_on_the_simulated_npu(tmp_path):
    proc = _bench("ops", "--simulate", "npu", "--sizes", "8,16", "--ops", "matmul,add", "--min-time", "0",
                  "--min-iters", "2", "--max-iters", "2", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert [(r["op"], r["size"]) for r in report["rows"]] == [("matmul", 8), ("matmul", 16), ("add", 8), ("add", 16)]
    assert report["settings"]["device"] == "npu"

    out_csv = tmp_path / "model.csv"
    proc = _bench("model", "--simulate", "npu", "--factory", "tests.bench.factories:mlp", "--batch", "2",
                  "--steps", "2", "--warmup", "0", "--train", "--csv", str(out_csv))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "shim on / off" in proc.stdout and "train" in proc.stdout
    assert [r["shim"] for r in csv.DictReader(out_csv.open())] == ["off", "on"]


def test_model_takes_the_factory_verify_model_takes(tmp_path):
    # One factory for both commands: a script path, called without arguments, returning (model, inputs).
    script = tmp_path / "make.py"
    script.write_text("import torch\n\ndef make():\n    torch.manual_seed(0)\n"
                      "    return torch.nn.Linear(4, 4), torch.randn(3, 4)\n")
    proc = _bench("model", "--simulate", "npu", "--factory", f"{script}:make", "--steps", "2", "--warmup", "0",
                  "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["settings"]["factory"] == f"{script}:make"
    assert report["failed"] == 0 and report["shim_on"]["samples_per_s"] > 0 and report["shim_off"]["samples_per_s"] > 0
    assert report["settings"]["batch"] == 3  # the factory chose its inputs: (3, 4)


@pytest.mark.slow
def test_model_default_gpt2_tiny_with_plot(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("matplotlib")
    png = tmp_path / "model.png"
    proc = _bench("model", "--simulate", "npu", "--batch", "2", "--seq-len", "8", "--steps", "2", "--warmup", "0",
                  "--threads", "1", "--json", "--plot", str(png))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["settings"]["factory"] == "ascend_compat.bench.model:gpt2_tiny"
    assert report["fingerprint"]["torch_threads"] == 1
    assert report["shim_on"]["samples_per_s"] > 0 and report["shim_off"]["samples_per_s"] > 0
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "args, message",
    [
        (["ops", "--device", "cpu", "--ops", "nope"], "unknown op"),
        (["model", "--device-typo"], "unrecognized arguments"),
        (["model", "--factory", "no_such_module_xyz:fn"], "No module named"),
        ([], "BENCHMARK"),
        (["model", "--csv", "/nonexistent-dir/out.csv"], "directory does not exist"),
    ],
)
def test_bad_input_exits_non_zero_with_a_clear_message(args, message):
    proc = _bench(*args)
    assert proc.returncode == 2
    assert message in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_plot_without_matplotlib_stops_before_running(tmp_path, forked):
    # Fault: matplotlib is not importable (the 'plot' extra is not installed).
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from ascend_compat.cli.main import main\n"
        f"raise SystemExit(main(['bench', 'overhead', '--plot', {str(tmp_path / 'x.png')!r}]))\n"
    )
    proc = forked.run(code=code, cwd=ROOT)
    assert proc.returncode == 2
    assert "ascend-compat[plot]" in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_csv_that_cannot_be_written_after_the_run_keeps_the_report(tmp_path, monkeypatch, capsys):
    # A full disk after a long run used to lose every figure: the report was printed only after the files.
    import errno

    from ascend_compat.bench import output
    from ascend_compat.cli.main import main

    def full_disk(report, path):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(output, "write_csv", full_disk)
    code = main(["bench", "ops", "--device", "cpu", "--sizes", "8", "--ops", "add", "--min-time", "0",
                 "--min-iters", "2", "--max-iters", "2", "--json", "--csv", str(tmp_path / "ops.csv")])
    out, err = capsys.readouterr()
    assert code == 2 and "No space left on device" in err and "the report is above" in err, err
    assert [(r["op"], r["size"]) for r in json.loads(out)["rows"]] == [("add", 8)]
