"""``report --verify``: run the repository on the NPU (the simulated one where there is none) and record what
happened: the import of every module of its packages, its test suite within a time budget, and a precision
comparison against the CPU when a model factory is given.

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
import xml.etree.ElementTree as ET
from typing import Optional

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
    return env


def _run(cmd: list[str], root: str, timeout: float) -> tuple[int, str, bool]:
    """(exit code, output, timed out); the whole process group is ended at the timeout."""
    proc = subprocess.Popen(cmd, cwd=root, env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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


def _parse_junit(path: str) -> Optional[dict]:
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return None
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures = []
    for case in tree.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            counts["failed"] += 1
            failures.append([name, "❌ failed"])
        elif "error" in kinds:
            counts["errors"] += 1
            failures.append([name, "❌ error"])
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
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
        junit = os.path.join(tmp, "junit.xml")
        cmd = [*_runner(simulate), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
               f"--junitxml={junit}", test_dir]
        t0 = time.perf_counter()
        code, output, timed_out = _run(cmd, root, budget_s)
        counts = _parse_junit(junit) or _parse_progress(output)
    ran = sum(counts[k] for k in ("passed", "failed", "errors", "skipped"))
    if not ran and code not in (0, 5):  # 5: pytest collected nothing
        tail = [ln for ln in output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        counts["failures"] = [[f"pytest did not run (exit {code})", tail[0][:300]]]
    shown = " ".join(["ascend-compat", "run"] + (["--simulate", "npu"] if simulate else []) +
                     ["-m", "pytest", "-q", test_dir])
    return {"command": shown, **counts, "seconds": round(time.perf_counter() - t0, 2), "timed_out": timed_out,
            "budget_s": round(budget_s), "output_tail": output.strip().splitlines()[-5:]}


def verify_precision(root: str, model: Optional[str], simulate: bool, budget_s: float) -> dict:
    if not model:
        note = ("Not measured: no model factory was given (`report --verify --model module:make_model`). ")
        if simulate:
            note += ("On the simulated NPU operators run on the host CPU, so a comparison with the CPU checks the "
                     "port's plumbing, not the NPU's numerics; run it on a real NPU for that.")
        return {"rows": [], "note": note}
    cmd = [sys.executable, "-m", "ascend_compat", "verify", "model", model, "--json"] + \
        (["--simulate", "npu"] if simulate else [])
    code, output, timed_out = _run(cmd, root, budget_s)
    try:
        data = json.loads(output[output.index("{"):])
    except ValueError:
        return {"rows": [], "note": f"`ascend-compat verify model {model}` did not finish (exit {code}"
                f"{', budget reached' if timed_out else ''}): {output.strip().splitlines()[-1:] or ''}"}
    ok = bool(data.get("passed", data.get("ok", False)))
    worst = data.get("max_abs_diff", data.get("worst", {}).get("max_abs", ""))
    rows = [[f"`verify model {model}`", str(worst), f"rtol {data.get('rtol', '')}, atol {data.get('atol', '')}",
             "✅ passed" if ok else "❌ failed"]]
    return {"rows": rows, "note": "Outputs of the model on the NPU compared with the CPU reference.", "raw": data}


def run_verification(root: str, packages: list[str], budget_s: float = 600.0, model: Optional[str] = None,
                     run_tests: bool = True) -> dict:
    """Imports, tests and precision of the repository at ``root``; the dict section 5 of the report shows."""
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
    t0 = time.perf_counter()
    imports = verify_imports(root, modules, simulate, budget_s * 0.3)
    left = max(budget_s - (time.perf_counter() - t0), 10.0)
    tests = verify_tests(root, simulate, left * 0.8) if run_tests else {"command": "", "note": "not run (--no-tests)"}
    left = max(budget_s - (time.perf_counter() - t0), 10.0)
    precision = verify_precision(root, model, simulate, left)
    return {"environment": env, "device": "the simulated NPU" if simulate else "the NPU", "imports": imports,
            "tests": tests, "precision": precision}


__all__ = ["module_names", "run_verification", "verify_imports", "verify_precision", "verify_tests"]
