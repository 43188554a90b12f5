"""``report --verify``: run the repository on the NPU (the simulated one where there is none) and record what
happened: the import of every module of its packages, precision against the CPU (``report_precision``: the
operator checks of the op groups it uses and a forward pass of every model it can build), and its test suite
within a time budget.

Everything runs in child processes through ``ascend-compat run`` (shim active, ``--simulate npu`` off-NPU), so
a module that hangs, exits or crashes the interpreter costs its own budget and nothing else.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional

from ascend_compat.migrate.report_scripts import top_level_modules

#: The child that imports modules: one JSON line per module, flushed, so a timeout keeps what was done.
_IMPORT_DRIVER = r"""
import importlib, json, sys, time, traceback
out = open(sys.argv[1], "a", encoding="utf-8")
for name in json.load(open(sys.argv[2], encoding="utf-8")):
    t = time.perf_counter()
    try:
        importlib.import_module(name)
        rec = {"module": name, "ok": True, "error": ""}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from module code are results too
        rec = {"module": name, "ok": False, "error": (type(exc).__name__ + ": " + str(exc)).splitlines()[0][:300]}
    rec["seconds"] = round(time.perf_counter() - t, 3)
    out.write(json.dumps(rec) + "\n")
    out.flush()
"""
_SKIP_DIRS = frozenset({"__pycache__", "build", "dist", ".git", "node_modules"})


def module_names(root: str, packages: list[str]) -> list[str]:
    """Dotted names of every module of the first-party ``packages`` found under ``root`` (or ``root/src``).

    Top-level scripts are left out: importing ``train.py`` would run the training."""
    names: list[str] = []
    for pkg in sorted(packages):
        for base in (root, os.path.join(root, "src")):
            top = os.path.join(base, pkg)
            if not os.path.isdir(top):
                continue
            # A namespace package (no __init__.py) is entered for its regular subpackages only: its loose
            # top-level files are usually scripts.
            namespace = not os.path.isfile(os.path.join(top, "__init__.py"))
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and d.isidentifier()
                                     and os.path.isfile(os.path.join(dirpath, d, "__init__.py")))
                rel = os.path.relpath(dirpath, base).replace(os.sep, ".")
                if namespace and dirpath == top:
                    continue
                for f in sorted(filenames):
                    if f == "__init__.py":
                        names.append(rel)
                    elif f.endswith(".py") and f[:-3].isidentifier():
                        names.append(f"{rel}.{f[:-3]}")
            break
    return names


def _npu_present() -> bool:
    return importlib.util.find_spec("torch_npu") is not None and os.path.exists("/dev/davinci_manager")


def _runner(simulate: bool) -> list[str]:
    return [sys.executable, "-m", "ascend_compat", "run"] + (["--simulate", "npu"] if simulate else [])


def _env(root: str) -> dict[str, str]:
    env = dict(os.environ)
    paths = [root] + ([os.path.join(root, "src")] if os.path.isdir(os.path.join(root, "src")) else [])
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if "ASCEND_COMPAT_SIM_MEMORY_LIMIT" not in env and _available_memory():
        # A test that asks the simulated NPU for more than the host has then fails with torch's OutOfMemoryError,
        # instead of the kernel's OOM killer ending the whole run (a real NPU ignores this).
        env["ASCEND_COMPAT_SIM_MEMORY_LIMIT"] = str(_available_memory() // 2)
    return env


def _available_memory() -> int:
    """MemAvailable of /proc/meminfo in bytes (0 where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _run(cmd: list[str], root: str, timeout: float, extra_env: Optional[dict[str, str]] = None
         ) -> tuple[int, str, bool]:
    """(exit code, output, timed out); the whole process group is ended at the timeout. ``extra_env``:
    variables to set, ``PYTHONPATH`` among them put first on the path."""
    env = _env(root)
    for key, value in (extra_env or {}).items():
        env[key] = value + os.pathsep + env[key] if key == "PYTHONPATH" and env.get(key) else value
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=max(timeout, 1))
        return proc.returncode, out.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return -9, out.decode("utf-8", "replace"), True


def verify_imports(root: str, modules: list[str], simulate: bool, budget_s: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="ascend-compat-verify-") as tmp:
        driver, names, results = (os.path.join(tmp, n) for n in ("driver.py", "names.json", "results.jsonl"))
        with open(driver, "w", encoding="utf-8") as fh:
            fh.write(_IMPORT_DRIVER)
        with open(names, "w", encoding="utf-8") as fh:
            json.dump(modules, fh)
        t0 = time.perf_counter()
        code, output, timed_out = _run([*_runner(simulate), driver, results, names], root, budget_s)
        seconds = time.perf_counter() - t0
        done = []
        if os.path.exists(results):
            with open(results, encoding="utf-8") as fh:
                done = [json.loads(line) for line in fh if line.strip()]
    if not done and modules and code != 0:
        tail = output.strip().splitlines()[-1:] or ["no output"]
        done = [{"module": modules[0], "ok": False, "error": f"the interpreter failed to start: {tail[0][:300]}"}]
    return {"modules": done, "passed": sum(m["ok"] for m in done), "not_run": len(modules) - len(done),
            "seconds": round(seconds, 2), "timed_out": timed_out}


def _test_dir(root: str) -> Optional[str]:
    for d in ("tests", "test"):
        if os.path.isdir(os.path.join(root, d)):
            return d
    return None


#: A pytest plugin writing one JSON line per test as it finishes, flushed: a run cut off by the budget, or a test
#: that kills the interpreter, keeps every result up to that point (a junit file is written only at the end).
_TEST_LOG_PLUGIN = r"""
import json, os

_OUT = open(os.environ["ASCEND_COMPAT_TEST_LOG"], "a", encoding="utf-8")


def _why(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0][:240] if lines else ""


def pytest_runtest_logreport(report):
    if report.skipped:
        outcome = "skipped"
    elif report.failed:
        outcome = "failed" if report.when == "call" else "errors"
    elif report.when == "call":
        outcome = "passed"
    else:
        return
    _OUT.write(json.dumps({"test": report.nodeid, "outcome": outcome, "why": _why(report) if report.failed else ""})
               + "\n")
    _OUT.flush()
"""


def _parse_log(path: str) -> Optional[dict]:
    """Counts, and each failed or erroring test as [name, result, first line of its error]; None when no test
    reported (pytest did not get that far)."""
    try:
        with open(path, encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh if line.strip()]
    except (OSError, ValueError):
        return None
    if not records:
        return None
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures = []
    for r in records:
        counts[r["outcome"]] += 1
        if r["outcome"] in ("failed", "errors"):
            failures.append([r["test"], "❌ failed" if r["outcome"] == "failed" else "❌ error", r["why"]])
    return {**counts, "failures": failures}


def _parse_progress(output: str) -> dict:
    """Counts from pytest -q progress lines (what a run cut off by the budget printed)."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for line in output.splitlines():
        m = re.match(r"^([.FEsxX]+)\s*(\[\s*\d+%\])?\s*$", line.strip())
        if m:
            s = m.group(1)
            counts["passed"] += s.count(".") + s.count("X")
            counts["failed"] += s.count("F")
            counts["errors"] += s.count("E")
            counts["skipped"] += s.count("s") + s.count("x")
    return {**counts, "failures": []}


def verify_tests(root: str, simulate: bool, budget_s: float) -> dict:
    test_dir = _test_dir(root)
    if test_dir is None:
        return {"command": "", "note": "no tests/ or test/ directory in the repository"}
    with tempfile.TemporaryDirectory(prefix="ascend-compat-tests-") as tmp:
        log = os.path.join(tmp, "tests.jsonl")
        with open(os.path.join(tmp, "ascend_compat_test_log.py"), "w", encoding="utf-8") as fh:
            fh.write(_TEST_LOG_PLUGIN)
        cmd = [*_runner(simulate), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "ascend_compat_test_log",
               "-o", "addopts=", test_dir]
        t0 = time.perf_counter()
        code, output, timed_out = _run(cmd, root, budget_s, {"PYTHONPATH": tmp, "ASCEND_COMPAT_TEST_LOG": log})
        logged = _parse_log(log)
        counts = logged or _parse_progress(output)
    ran = sum(counts[k] for k in ("passed", "failed", "errors", "skipped"))
    tail = [ln for ln in output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    if not ran and code not in (0, 5):  # 5: pytest collected nothing
        counts["failures"] = [[f"pytest did not run (exit {code})", "❌ error", tail[0][:300]]]
    elif not timed_out and code not in (0, 1, 5):
        # pytest itself died (a test crashed the interpreter): the results are those logged before.
        how = " (SIGKILL: usually the out-of-memory killer)" if code in (-9, 137) else ""
        counts["crash"] = (f"pytest ended abnormally (exit {code}{how}) after {ran} test(s); last output: "
                           f"{tail[0][:300]}")
    shown = " ".join(["ascend-compat", "run"] + (["--simulate", "npu"] if simulate else []) +
                     ["-m", "pytest", "-q", test_dir])
    return {"command": shown, **counts, "seconds": round(time.perf_counter() - t0, 2), "timed_out": timed_out,
            "budget_s": round(budget_s), "output_tail": output.strip().splitlines()[-5:]}


def run_verification(root: str, packages: list[str], budget_s: float = 600.0, model: Optional[str] = None,
                     run_tests: bool = True, op_groups: Optional[list[str]] = None) -> dict:
    """Imports, precision and tests of the repository at ``root``; the dict section 5 of the report shows.

    ``op_groups`` are the ``verify ops`` groups to check (default: those of every torch API the repository
    uses, see :func:`ascend_compat.migrate.report_precision.op_groups`; matmul alone when not known)."""
    from ascend_compat.migrate.report_precision import verify_precision

    root = os.path.abspath(root)
    simulate = not _npu_present()
    env = {"Python": platform.python_version(), "Platform": platform.platform(terse=True),
           "Device": "simulated NPU (ascend_compat.simulate: no NPU on this machine)" if simulate
           else "Ascend NPU (torch_npu)", "Time budget": f"{round(budget_s)} s"}
    try:
        import torch

        env["torch"] = torch.__version__
    except ImportError:
        env["torch"] = "not installed"
    modules = module_names(root, packages)
    # Top-level files: only those whose import merely defines things (a script would run, training and all).
    flat, scripts = top_level_modules(root, imported=modules)
    flat = [m for m in flat if m not in modules]
    t0 = time.perf_counter()
    imports = verify_imports(root, modules + flat, simulate, budget_s * 0.25)
    imports["scripts_not_imported"] = scripts
    # The models of top-level files are not built: a flat repository's model file is often sized for training.
    importable = [m["module"] for m in imports["modules"] if m["ok"] and m["module"] not in flat]
    left = max(budget_s - (time.perf_counter() - t0), 30.0)
    precision = verify_precision(_run, _runner(simulate), root, importable, op_groups or ["matmul"], simulate,
                                 left * 0.45, model)
    left = max(budget_s - (time.perf_counter() - t0), 10.0)
    tests = verify_tests(root, simulate, left) if run_tests else {"command": "", "note": "not run (--no-tests)"}
    return {"environment": env, "device": "the simulated NPU" if simulate else "the NPU", "imports": imports,
            "tests": tests, "precision": precision}


__all__ = ["module_names", "run_verification", "verify_imports", "verify_tests"]
