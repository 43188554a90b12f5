"""Time ``check`` over an installed package (default: transformers): wall seconds, files/s, lines/s.

    python benchmarks/bench_check.py [PACKAGE] [--jobs N] [--repeat 3]

Runs the real CLI in a fresh interpreter each time (start-up included), output to /dev/null.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("package", nargs="?", default="transformers")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--format", default="text", help="output format timed (the summary is read from a JSON run)")
    args = ap.parse_args()
    spec = importlib.util.find_spec(args.package)
    assert spec and spec.submodule_search_locations, args.package
    root = next(iter(spec.submodule_search_locations))
    cmd = [sys.executable, "-m", "ascend_compat", "check", root, "--fail-on", "never", "--no-progress"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    walls = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        proc = subprocess.run([*cmd, "--format", args.format], capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - t0)
        if proc.returncode not in (0, 3):
            print(proc.stderr)
            return 1
    summary = json.loads(subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True).stdout)["summary"]
    wall = statistics.median(walls)
    print(f"check {args.package}: {summary['files']} files, {summary['lines']} lines, {summary['findings']} findings, "
          f"{summary['failed']} failed; jobs={args.jobs or os.cpu_count()}; --format {args.format}")
    print(f"  wall median {wall:.2f} s (runs: {', '.join(f'{w:.2f}' for w in walls)}); "
          f"{summary['files'] / wall:.0f} files/s, {summary['lines'] / wall:.0f} lines/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
