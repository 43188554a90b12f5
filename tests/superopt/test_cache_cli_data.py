"""The plan cache (hits, corrupted entries, concurrent writers), the CLI, and the targets data schema."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ascend_compat.superopt import _data
from tests._forkserver import cli
from tests.conftest import _clean_env
from tests.superopt.conftest import ROOT, small


def test_second_call_hits_the_cache_and_a_corrupted_entry_is_rebuilt(cache: str) -> None:
    first = small("rmsnorm_linear", dtype="float32").superoptimize(backend="torch", cache_dir=cache)
    second = small("rmsnorm_linear", dtype="float32").superoptimize(backend="torch", cache_dir=cache)
    assert (first.record["cache"], second.record["cache"]) == ("miss", "hit")
    assert second.record["rewrites"] == first.record["rewrites"]
    (entry,) = Path(cache).glob("*.json")
    entry.write_text('{"schema": 1, "backend": "tor')  # a torn write from an older, non-atomic writer
    third = small("rmsnorm_linear", dtype="float32").superoptimize(backend="torch", cache_dir=cache)
    assert third.record["cache"] == "miss" and json.loads(entry.read_text())["backend"] == "torch"
    other = small("rmsnorm_linear", dtype="float16").superoptimize(backend="torch", cache_dir=cache)
    assert other.record["cache"] == "miss" and len(list(Path(cache).glob("*.json"))) == 2  # dtype is in the key


@pytest.mark.slow
def test_concurrent_processes_share_the_cache(cache: str) -> None:
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT)!r})
        from tests.superopt.conftest import small
        opt = small("gated_mlp", dtype="float32").superoptimize(backend="torch", cache_dir={cache!r})
        print(opt.record["cache"])
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_clean_env()) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    (entry,) = Path(cache).glob("*.json")
    assert json.loads(entry.read_text())["backend"] == "torch"
    assert not list(Path(cache).glob(".*.tmp"))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return cli("superopt", *args, cwd=cwd, env={**_clean_env(), "NO_COLOR": "1"}, timeout=300)


def test_cli_json_writes_the_kernels(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    (tmp_path / "model.py").write_text(textwrap.dedent("""
        import ascend_compat.superopt as yr

        def graph():
            g = yr.new_kernel_graph()
            x = g.new_input(dims=(8, 32), dtype=yr.float16)
            w = g.new_input(dims=(32, 16), dtype=yr.float16)
            g.mark_output(g.matmul(g.rms_norm(x), w))
            return g
    """))
    env_cache = str(tmp_path / "cache")
    proc = cli("superopt", "model.py:graph", "--json", "--out", "k", cwd=tmp_path, timeout=300,
               env={**_clean_env(), "ASCEND_COMPAT_CACHE_DIR": env_cache})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["rewrites"] == ["scale-past-matmul"] and data["plan"].startswith("1 kernel(s)")
    assert [Path(f).suffix for f in data["files"]] == [".py", ".json"]
    assert "@triton.jit" in (tmp_path / data["files"][0]).read_text()
    text = _cli("model.py:graph", "--backend", "torch", "--out", "t", cwd=tmp_path)
    assert text.returncode == 0 and "Chosen:" in text.stdout and "\033[" not in text.stdout


@pytest.mark.parametrize(("spec", "message"), [
    ("nofile.py:graph", "no such file: nofile.py"), ("model.py", "expected FILE.py:FUNC"),
    ("model.py:missing", "has no function 'missing'"), ("model.py:not_graph", "returned int, not a kernel graph"),
])
def test_cli_usage_errors_exit_2(tmp_path: Path, spec: str, message: str) -> None:
    (tmp_path / "model.py").write_text("def not_graph():\n    return 3\n")
    proc = _cli(spec, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == ""


def test_targets_schema() -> None:
    data = _data.load()
    assert data["schema_version"] == 1
    required = {"vendor", "chip", "live_tile_budget_bytes", "align_vector_bytes", "align_cube_bytes", "max_grid",
                "dot_dtypes", "dot_min", "dtypes", "unsupported_ops", "hbm_gbps", "l2_bytes", "peak_tflops",
                "launch_us", "source"}
    for name, t in data["targets"].items():
        assert required <= set(t), (name, required - set(t))
        assert t["source"].strip()
        if t["vendor"] == "ascend":
            assert {"cube_cores", "vector_cores", "ub_bytes_per_vector_core"} <= set(t)
            assert "float64" not in t["dtypes"] and t["live_tile_budget_bytes"] <= t["ub_bytes_per_vector_core"] // 2
            assert t["max_grid"] == 65535 and t["align_vector_bytes"] == 32 and t["align_cube_bytes"] == 512
        else:
            assert "shared_memory_bytes_per_sm" in t
    for dt in ("float16", "bfloat16", "float32"):
        tol = _data.tolerance(dt)
        assert tol["atol"] > 0 and tol["rtol"] > 0 and tol["source"]
    assert _data.target("910B4")["name"] == "ascend-910b4"
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        _data.target("tpu")
