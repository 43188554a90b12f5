"""Port every ``.py`` file of installed packages in both modes; every output must parse and re-port to itself.

    python benchmarks/sweep_port.py [PACKAGE ...]        (default: torch transformers)
    python benchmarks/sweep_port.py --every 20 torch      (a sample: every 20th file)

Prints per package: files, changed per mode, failures (file and reason), non-idempotent files, seconds.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from ascend_compat.migrate.port import PortFailure, PortSuccess, port_source
from ascend_compat.migrate.pyscan import decode_python


def package_files(name: str, every: int = 1) -> list[str]:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not an installed package")
    root = next(iter(spec.submodule_search_locations))
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".py"))
    return files[::every]


def sweep_file(path: str) -> dict:
    out: dict = {"path": path}
    try:
        with open(path, "rb") as fh:
            text = decode_python(fh.read())
    except (UnicodeDecodeError, SyntaxError) as exc:
        return {**out, "unreadable": str(exc)}
    for mode in ("native", "shim"):
        r = port_source(path, text, mode)
        if isinstance(r, PortFailure):
            # A file that did not parse in the first place is reported, not a port failure.
            try:
                ast.parse(text)
            except SyntaxError:
                out["unparsable_input"] = True
                return out
            out[f"{mode}_failed"] = r.error
            continue
        if isinstance(r, PortSuccess):
            out[f"{mode}_changed"] = True
            try:
                ast.parse(r.text)
            except SyntaxError as exc:
                out[f"{mode}_broken"] = str(exc)
                continue
            again = port_source(path, r.text, mode)
            if isinstance(again, PortSuccess):
                out[f"{mode}_not_idempotent"] = True
    return out


def sweep(files: list[str], jobs: int) -> list[dict]:
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(sweep_file, files, chunksize=16))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("packages", nargs="*", default=["torch", "transformers"])
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    bad = 0
    for name in args.packages:
        files = package_files(name, args.every)
        t0 = time.perf_counter()
        res = sweep(files, args.jobs)
        dt = time.perf_counter() - t0
        problems = [r for r in res if any(k.endswith(("_failed", "_broken", "_not_idempotent")) for k in r)]
        bad += len(problems)
        print(f"{name}: {len(files)} files in {dt:.1f} s; changed native={sum('native_changed' in r for r in res)} "
              f"shim={sum('shim_changed' in r for r in res)}; "
              f"unparsable inputs={sum('unparsable_input' in r for r in res)}; "
              f"unreadable={sum('unreadable' in r for r in res)}; problems={len(problems)}")
        for r in problems[:20]:
            print("   ", r)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
