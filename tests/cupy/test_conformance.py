"""The CuPy conformance runner (benchmarks/cupy/run_cupy_suite.py): its counting rules on a fake sdist, its N/A
rule list, and a fast CI subset of CuPy 14.2.0's own tests that fails on regressions."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT

RUNNER = ROOT / "benchmarks" / "cupy" / "run_cupy_suite.py"
RULES = ROOT / "benchmarks" / "cupy" / "na_rules.json"
PRODUCT = ROOT / "src" / "ascend_compat"

# CI subset: a few files of CuPy's suite (fft_tests narrowed by -k) and, per directory, the least number of
# their tests that pass on each device (measured: random 177, linalg 71-73, fft 84, creation test_from_data
# 115 cpu / 118 npu, core test_ndarray 163 cpu / 170 npu, test_gufuncs + test_reduction 130 on both, each with
# no failures; misc test_byte_bounds + test_memory_ranges 26 of 26, negative-stride views, 21 before them).
SUBSET = ["random_tests/test_permutations.py", "random_tests/test_random.py", "linalg_tests/test_solve.py",
          "fft_tests/test_fft.py", "creation_tests/test_from_data.py", "core_tests/test_ndarray.py",
          "core_tests/test_gufuncs.py", "core_tests/test_reduction.py", "misc_tests/test_byte_bounds.py",
          "misc_tests/test_memory_ranges.py"]
KEYWORD = "not fft_tests or TestFftshift or TestHfft or TestFftfreq"
FLOORS = {"random_tests": 170, "linalg_tests": 68, "fft_tests": 80, "creation_tests": 112, "core_tests": 288,
          "misc_tests": 26}


def _runner():
    spec = importlib.util.spec_from_file_location("run_cupy_suite", RUNNER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def _fake_sdist(root: Path) -> Path:
    sdist = root / "cupy-0.0.0"
    (sdist / "cupy" / "testing").mkdir(parents=True)
    (sdist / "cupy" / "testing" / "__init__.py").write_text("", "utf-8")
    (sdist / "pyproject.toml").write_text("[tool.pytest.ini_options]\nxfail_strict = true\n", "utf-8")
    demo = sdist / "tests" / "cupy_tests" / "demo_tests"
    demo.mkdir(parents=True)
    (sdist / "tests" / "cupy_tests" / "__init__.py").write_text("", "utf-8")
    (demo / "__init__.py").write_text("", "utf-8")
    product_file = str(PRODUCT / "cupy" / "_fake_for_test.py")
    (demo / "test_demo.py").write_text(textwrap.dedent(f"""
        import pytest
        import cupy
        from cupy import testing  # the sdist's cupy.testing

        _ns = {{}}
        exec(compile("import pytest\\ndef product_skip():\\n    pytest.skip('not implemented')\\n",
                     {product_file!r}, "exec"), _ns)

        def test_pass():
            assert int(cupy.arange(3).sum()) == 3

        def test_fail():
            assert int(cupy.arange(3).sum()) == 4

        def test_suite_skip():
            pytest.skip("requires something")

        def test_product_skip():
            _ns["product_skip"]()

        def test_not_applicable():
            raise AssertionError("deselected by a rule, never run")

        def test_segfault():
            import os, signal
            os.kill(os.getpid(), signal.SIGSEGV)

        def test_after_the_crash():
            assert int(cupy.ones(2).sum()) == 2
    """), "utf-8")
    (demo / "test_broken.py").write_text("import cupy.no_such_module\n\ndef test_a():\n    pass\n\n"
                                         "class TestB:\n    def test_b(self):\n        pass\n", "utf-8")
    return sdist


def test_counting_rules_on_a_fake_sdist(tmp_path):
    sdist = _fake_sdist(tmp_path)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"id": "demo", "pattern": "*::test_not_applicable",
                                            "reason": "demo rule"}]}), "utf-8")
    res = _run("--sdist", str(sdist), "--device", "cpu", "--rules", str(rules), "--json")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["rows"]
    counts = {k: row[k] for k in ("passed", "failed", "errored", "na", "skipped")}
    # failed: test_fail and the skip raised inside ascend_compat; errored: the 2 tests of the file that cannot
    # import and the test that crashed the process (the run resumed after it: test_after_the_crash passed)
    assert counts == {"passed": 2, "failed": 2, "errored": 3, "na": 1, "skipped": 1}
    assert row["na_by_rule"] == {"demo": 1} and row["pass_rate"] == round(2 / 7, 4)
    assert [n.split("::")[-1] for n in row["crashed"]] == ["test_segfault"]
    messages = " ".join(f["message"] for f in row["failure_samples"])
    assert "skip raised inside ascend_compat" in messages and "no_such_module" in messages
    assert "crashed the test process" in messages


def test_usage_errors_exit_2(tmp_path):
    res = _run("--sdist", str(tmp_path), "--device", "cpu")
    assert res.returncode == 2 and "not an unpacked CuPy sdist" in res.stderr
    res = _run("--sdist", str(_fake_sdist(tmp_path)), "--dirs", "nope_tests")
    assert res.returncode == 2 and "unknown directories" in res.stderr


def test_na_rules_are_reviewable():
    doc = json.loads(RULES.read_text("utf-8"))
    assert doc["source"] and doc["rules"]
    ids = [r["id"] for r in doc["rules"]]
    assert len(ids) == len(set(ids))
    for rule in doc["rules"]:
        assert set(rule) == {"id", "pattern", "reason"} and len(rule["reason"]) > 15, rule
    assert _runner().load_rules(RULES) == doc["rules"]


def test_count_test_functions(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text("def test_a():\n    pass\n\nclass TestB:\n    def test_c(self):\n        pass\n"
                 "    def helper(self):\n        pass\n", "utf-8")
    assert _runner().count_test_functions(f) == 2


@pytest.fixture(scope="module")
def cupy_sdist() -> Path:
    """CuPy 14.2.0's sdist: ``ASCEND_COMPAT_CUPY_SDIST`` or a pip download cached under ~/.cache."""
    given = os.environ.get("ASCEND_COMPAT_CUPY_SDIST")
    if given:
        return _runner().resolve_sdist(Path(given))
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ascend_compat" / "cupy_sdist"
    try:
        return _runner().download_sdist(cache)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"CuPy 14.2.0 sdist not available (pip download failed: {exc}); set ASCEND_COMPAT_CUPY_SDIST")


@pytest.mark.parametrize("device", ["cpu", "npu"])
def test_ci_subset_does_not_regress(cupy_sdist, device):
    res = _run("--sdist", str(cupy_sdist), "--device", device, "--files", *SUBSET, "-k", KEYWORD, "--json",
               "--timeout", "600")
    assert res.returncode == 0, res.stderr
    rows = {r["directory"]: r for r in json.loads(res.stdout)["rows"]}
    for directory, floor in FLOORS.items():
        row = rows[directory]
        assert row["passed"] >= floor and not row["timed_out"], (directory, row["passed"], row["failure_samples"])
