"""Run CuPy's own test-suite against ``ascend_compat.cupy`` and report, per directory of ``tests/cupy_tests``,
passed / failed / errored / not applicable / skipped, on the CPU and on the simulated NPU.

    python benchmarks/cupy/run_cupy_suite.py --sdist /tmp/cupy_sdist/cupy-14.2.0 [--device cpu npu] [--json]
    python benchmarks/cupy/run_cupy_suite.py --download /tmp/cupy_sdist          # fetch the sdist with pip first

Each directory runs in its own pytest process (time-boxed by ``--timeout``) with ``cupy_suite_plugin``, which
makes ``import cupy`` resolve to ``ascend_compat.cupy`` and loads ``cupy.testing`` from the sdist. Counting:
a test file that cannot be imported counts each of its ``test_*`` functions as an error; a skip raised inside
``ascend_compat`` counts as a failure; tests matching a rule of ``na_rules.json`` are not applicable; tests still
unreported when a directory's time box ends (or its process dies) count as errors. Pass rate =
passed / (passed + failed + errored).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
DEFAULT_VERSION = "14.2.0"
CATEGORIES = ("passed", "failed", "errored", "na", "skipped")


def download_sdist(dest: Path, version: str = DEFAULT_VERSION, timeout: int = 600) -> Path:
    """``pip download cupy==<version> --no-binary cupy`` (no CUDA needed) into ``dest``; the unpacked tree."""
    tree = dest / f"cupy-{version}"
    if (tree / "tests" / "cupy_tests").is_dir():
        return tree
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / f"cupy-{version}.tar.gz"
    if not archive.exists():
        env = {**os.environ, "CUPY_INSTALL_USE_STUB": "1"}
        subprocess.run([sys.executable, "-m", "pip", "download", f"cupy=={version}", "--no-binary", "cupy",
                        "--no-deps", "-q", "-d", str(dest)], check=True, env=env, timeout=timeout,
                       capture_output=True)
    return unpack(archive, dest)


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack an sdist archive into ``dest`` (atomically: a temporary folder renamed into place)."""
    with tempfile.TemporaryDirectory(dir=dest) as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        (top,) = list(Path(tmp).iterdir())
        target = dest / top.name
        if not target.exists():
            top.rename(target)
    return target


def resolve_sdist(path: Path) -> Path:
    """An unpacked CuPy sdist from a folder or a ``.tar.gz``; ValueError when it is neither."""
    if path.is_file() and path.name.endswith(".tar.gz"):
        path = unpack(path, path.parent)
    if not (path / "tests" / "cupy_tests").is_dir() or not (path / "cupy" / "testing").is_dir():
        raise ValueError(f"{path} is not an unpacked CuPy sdist (no tests/cupy_tests or cupy/testing)")
    return path


def load_rules(path: Path) -> list[dict[str, str]]:
    doc = json.loads(path.read_text("utf-8"))
    rules = doc["rules"]
    for rule in rules:
        if not {"id", "pattern", "reason"} <= set(rule) or not rule["reason"].strip():
            raise ValueError(f"{path}: every rule needs id, pattern and a reason: {rule}")
    return rules


def directories(sdist: Path) -> dict[str, list[Path]]:
    """Test files by directory of tests/cupy_tests (top-level files under ``(top)``)."""
    root = sdist / "tests" / "cupy_tests"
    out: dict[str, list[Path]] = {"(top)": sorted(root.glob("test_*.py"))}
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and p.name.endswith("_tests")):
        out[sub.name] = sorted(sub.rglob("test_*.py"))
    return {k: v for k, v in out.items() if v}


def count_test_functions(path: Path) -> int:
    """``test_*`` functions of a file (module level and in classes): the count of a file that cannot import."""
    tree = ast.parse(path.read_text("utf-8"))
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return sum(1 for f in funcs if f.name.startswith("test"))


def _run_pytest(sdist: Path, files: list[Path], device: str, rules: list[dict[str, str]], timeout: float,
                test_timeout: int, out_file: Path, keyword: str = "", done_file: Optional[Path] = None
                ) -> tuple[float, Optional[int]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_SIM")}
    env.update({
        "ASCEND_COMPAT_CUPY_SUITE_SDIST": str(sdist), "ASCEND_COMPAT_CUPY_SUITE_DEVICE": device,
        "ASCEND_COMPAT_CUPY_SUITE_OUT": str(out_file), "ASCEND_COMPAT_CUPY_SUITE_RULES": json.dumps(rules),
        "ASCEND_COMPAT_CUPY_SUITE_TEST_TIMEOUT": str(test_timeout),
        "PYTHONPATH": os.pathsep.join([str(HERE), str(sdist / "tests"), env.get("PYTHONPATH", "")]),
        "CUPY_TEST_GPU_LIMIT": "2" if device == "npu" else "1", "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"),
    })
    if done_file is not None:
        env["ASCEND_COMPAT_CUPY_SUITE_DONE"] = str(done_file)
    cmd = [sys.executable, "-m", "pytest", "-p", "cupy_suite_plugin", "-p", "no:cacheprovider", "-q", "--no-header",
           "--continue-on-collection-errors", "-c", str(sdist / "pyproject.toml"), "--rootdir", str(sdist),
           *(["-k", keyword] if keyword else []), *[str(f) for f in files]]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=sdist, env=env, timeout=timeout, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        code: Optional[int] = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    return time.monotonic() - start, code


def _read(out_file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out_file.read_text("utf-8").splitlines() if line.strip()]


def _unreported(records: list[dict[str, Any]]) -> list[str]:
    """Tests collected to run that have no result yet, in run order (the first one was running at a crash)."""
    reported = {r["nodeid"] for r in records if r["kind"] == "result"}
    seen: dict[str, None] = {}
    for r in records:
        if r["kind"] == "collected" and not r["na"] and r["nodeid"] not in reported:
            seen[r["nodeid"]] = None
    return list(seen)


def _file_rule(nodeid: str, rules: list[dict[str, str]]) -> Optional[str]:
    path = nodeid.removeprefix("tests/")
    return next((r["id"] for r in rules if fnmatch.fnmatchcase(path, r["pattern"])), None)


def _tally(records: list[dict[str, Any]], sdist: Path, rules: list[dict[str, str]] | None = None,
           crashed: frozenset[str] = frozenset()) -> tuple[Counter[str], Counter[str], list[dict[str, str]]]:
    """(counts by category, N/A counts by rule, failure samples) from the plugin's records."""
    counts: Counter[str] = Counter()
    by_rule: Counter[str] = Counter()
    collected: dict[str, Optional[str]] = {}
    results: dict[str, dict[str, Any]] = {}
    failures = []
    seen_errors: set[str] = set()
    for rec in records:
        if rec["kind"] == "collected":
            collected[rec["nodeid"]] = rec["na"]
        elif rec["kind"] == "result":
            results[rec["nodeid"]] = rec
        elif rec["kind"] == "collect_error" and rec["nodeid"].endswith(".py") and rec["nodeid"] not in seen_errors:
            seen_errors.add(rec["nodeid"])  # a resumed run reports the same import error again
            n = count_test_functions(sdist / rec["nodeid"])
            rule = _file_rule(rec["nodeid"], rules or [])
            if rule:  # a file ruled not applicable as a whole is so even when it cannot import here
                counts["na"] += n
                by_rule[rule] += n
                continue
            counts["errored"] += n
            failures.append({"nodeid": rec["nodeid"], "outcome": f"import error ({n} tests)",
                             "message": rec["message"][-300:]})
    for nodeid, rule in collected.items():
        if rule:
            counts["na"] += 1
            by_rule[rule] += 1
            continue
        rec = results.get(nodeid)
        outcome = "errored" if rec is None or rec["outcome"] == "error" else rec["outcome"]
        counts[outcome] += 1
        if outcome in ("failed", "errored"):
            why = "crashed the test process" if nodeid in crashed else "not run: time box"
            failures.append({"nodeid": nodeid, "outcome": outcome,
                             "message": why if rec is None else rec["message"][-300:]})
    return counts, by_rule, failures


def run_directory(sdist: Path, name: str, files: list[Path], device: str, rules: list[dict[str, str]],
                  timeout: int, test_timeout: int, max_failures: int = 20, keyword: str = "") -> dict[str, Any]:
    """Run one directory's test files on ``device``; its counts. A process that dies (a crash in native code)
    is restarted on the tests it had not reached, the one it was running counted as errored."""
    crashed: list[str] = []
    seconds, code = 0.0, None
    with tempfile.TemporaryDirectory() as tmp:
        out_file, done_file = Path(tmp) / "records.jsonl", Path(tmp) / "done.txt"
        out_file.touch()
        while True:
            spent, code = _run_pytest(sdist, files, device, rules, timeout - seconds, test_timeout, out_file, keyword,
                                      done_file if crashed else None)
            seconds += spent
            records = _read(out_file)
            pending = [n for n in _unreported(records) if n not in crashed]
            if code is None or code in (0, 1, 2, 5) or not pending or seconds >= timeout or len(crashed) >= 50:
                break
            crashed.append(pending[0])
            reported = [r["nodeid"] for r in records if r["kind"] == "result"]
            done_file.write_text("\n".join(reported + crashed), "utf-8")
    counts, by_rule, failures = _tally(records, sdist, rules, frozenset(crashed))
    applicable = counts["passed"] + counts["failed"] + counts["errored"]
    return {"directory": name, "device": device, **{c: counts[c] for c in CATEGORIES},
            "pass_rate": round(counts["passed"] / applicable, 4) if applicable else None,
            "na_by_rule": dict(by_rule), "seconds": round(seconds, 1), "timed_out": code is None,
            "crashed": crashed, "failure_samples": failures[:max_failures]}


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for device in sorted({r["device"] for r in rows}):
        tot = Counter({c: sum(r[c] for r in rows if r["device"] == device) for c in CATEGORIES})
        applicable = tot["passed"] + tot["failed"] + tot["errored"]
        out[device] = {**tot, "pass_rate": round(tot["passed"] / applicable, 4) if applicable else None}
    return out


def _table(rows: list[dict[str, Any]], totals: dict[str, dict[str, Any]]) -> str:
    head = f"{'directory':<22} {'device':<6} {'passed':>7} {'failed':>7} {'errored':>7} {'n/a':>6} {'skipped':>7} " \
           f"{'pass%':>6} {'sec':>6}"
    lines = [head, "-" * len(head)]
    for r in rows + [{"directory": "TOTAL", "device": d, **t, "seconds": ""} for d, t in totals.items()]:
        rate = "-" if r["pass_rate"] is None else f"{100 * r['pass_rate']:.1f}"
        flag = " (time box)" if r.get("timed_out") else ""
        lines.append(f"{r['directory']:<22} {r['device']:<6} {r['passed']:>7} {r['failed']:>7} {r['errored']:>7} "
                     f"{r['na']:>6} {r['skipped']:>7} {rate:>6} {r['seconds']!s:>6}{flag}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--sdist", type=Path, help="unpacked CuPy 14.x sdist folder, or its .tar.gz")
    src.add_argument("--download", type=Path, metavar="DIR", help="pip-download the sdist into DIR and use it")
    p.add_argument("--version", default=DEFAULT_VERSION, help="CuPy version for --download (default %(default)s)")
    p.add_argument("--device", nargs="+", choices=("cpu", "npu"), default=["cpu", "npu"])
    p.add_argument("--dirs", nargs="+", help="directories of tests/cupy_tests to run (default: all)")
    p.add_argument("--files", nargs="+", help="test files relative to tests/cupy_tests (instead of --dirs)")
    p.add_argument("-k", dest="keyword", default="", help="pytest -k expression selecting tests (subsets)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per directory and device (default 900)")
    p.add_argument("--test-timeout", type=int, default=60, help="seconds per test (default 60)")
    p.add_argument("--rules", type=Path, default=HERE / "na_rules.json")
    p.add_argument("--failures", type=int, default=20, help="failures listed per directory in --json (default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    args = p.parse_args(argv)
    try:
        sdist = download_sdist(args.download, args.version) if args.download else resolve_sdist(args.sdist)
        rules = load_rules(args.rules)
    except (ValueError, OSError, subprocess.SubprocessError) as exc:
        print(f"run_cupy_suite: {exc}", file=sys.stderr)
        return 2
    groups = directories(sdist)
    if args.files:
        root = sdist / "tests" / "cupy_tests"
        missing = [f for f in args.files if not (root / f).is_file()]
        if missing:
            print(f"run_cupy_suite: no such test files: {', '.join(missing)}", file=sys.stderr)
            return 2
        groups = {}
        for f in args.files:
            groups.setdefault(Path(f).parts[0] if len(Path(f).parts) > 1 else "(top)", []).append(root / f)
    elif args.dirs:
        unknown = sorted(set(args.dirs) - set(groups))
        if unknown:
            print(f"run_cupy_suite: unknown directories {unknown}; choose from {sorted(groups)}", file=sys.stderr)
            return 2
        groups = {d: groups[d] for d in args.dirs}
    rows = []
    for device in args.device:
        for name, files in groups.items():
            rows.append(run_directory(sdist, name, files, device, rules, args.timeout, args.test_timeout,
                                      args.failures, args.keyword))
            print(f"  {device} {name}: {rows[-1]['passed']} passed, {rows[-1]['failed']} failed, "
                  f"{rows[-1]['errored']} errored ({rows[-1]['seconds']}s)", file=sys.stderr)  # progress
    totals = summarize(rows)
    if args.json:
        print(json.dumps({"cupy_sdist": str(sdist), "rows": rows, "totals": totals}, indent=1))
    else:
        print(_table(rows, totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
