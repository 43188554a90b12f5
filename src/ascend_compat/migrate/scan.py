"""``check``'s engine: find files, scan each (in parallel across cores), collect results as values."""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Optional

# pyscan registers the Python rules in this process too (the parent reads them when reporting).
from ascend_compat.migrate import apidb, cxx, deps, pyscan
from ascend_compat.migrate.discover import discover
from ascend_compat.migrate.model import FileFailed, FileResult, FileScanned, FileSkipped, ScanResult

#: Files larger than this are reported as skipped (generated code, data dumped into .py files).
MAX_BYTES = 8 * 1024 * 1024
# Below this many files, worker processes cost more than they save.
_PARALLEL_MIN_FILES = 48

ProgressFn = Callable[[int, int], None]


def read_source(path: str, max_bytes: int = MAX_BYTES) -> tuple[Optional[bytes], Optional[FileResult]]:
    """The file's bytes, or the result that explains why it is not scanned."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            return None, FileSkipped(path, "", f"larger than {max_bytes // (1024 * 1024)} MiB ({size} bytes)")
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return None, FileFailed(path, "", f"cannot read: {exc.strerror or exc}")
    if b"\0" in data[:8192]:
        return None, FileSkipped(path, "", "binary file")
    return data, None


def scan_file(path: str, language: str, line: str = apidb.DEFAULT_LINE, max_bytes: int = MAX_BYTES) -> FileResult:
    """Scan one file; every failure becomes a value, never an exception."""
    data, early = read_source(path, max_bytes)
    if early is not None:
        early.language = language
        return early
    assert data is not None
    try:
        if language == "python":
            try:
                text = pyscan.decode_python(data)
            except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
                return FileFailed(path, language, f"cannot decode: {exc}", data.count(b"\n"))
            result = pyscan.scan_python(path, text, line)
            if isinstance(result, FileScanned) and os.path.basename(path) == "setup.py":
                result.findings.extend(deps.scan_setup_py(path, text))
            return result
        if language == "cxx":
            return cxx.scan_cxx(path, data.decode("utf-8", "replace"))
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return FileFailed(path, language, f"cannot decode as UTF-8: {exc}", data.count(b"\n"))
        return deps.scan_manifest(path, text)
    except Exception as exc:
        return FileFailed(path, language, f"internal error while scanning: {type(exc).__name__}: {exc}")


def _scan_task(args: tuple[str, str, str, int]) -> FileResult:
    return scan_file(*args)


def _worker_init() -> None:
    # Parsing allocates millions of short-lived AST nodes; the cyclic GC only costs time here.
    gc.disable()


def _pool(jobs: int) -> ProcessPoolExecutor:
    # fork starts workers in milliseconds with the scanner already imported; no threads run at this point.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork") if "fork" in methods and sys.platform != "darwin" else None
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init)


def check(
    paths: Iterable[str],
    torch_npu: str = apidb.DEFAULT_LINE,
    jobs: Optional[int] = None,
    progress: Optional[ProgressFn] = None,
    use_git: bool = True,
    max_bytes: int = MAX_BYTES,
) -> ScanResult:
    """Scan files and directories; the Python API behind ``ascend-compat check``."""
    t0 = time.perf_counter()
    roots = list(paths)
    line = apidb.normalize_line(torch_npu)
    # Largest first so the last task to finish is a small one.
    files = list(discover(roots, use_git=use_git))
    sizes = {}
    for p, _ in files:
        try:
            sizes[p] = os.path.getsize(p)
        except OSError:
            sizes[p] = 0
    order = sorted(files, key=lambda f: -sizes[f[0]])
    tasks = [(p, lang, line, max_bytes) for p, lang in order]
    jobs = jobs or os.cpu_count() or 1
    results: list[FileResult] = []
    total = len(tasks)
    if jobs > 1 and total >= _PARALLEL_MIN_FILES:
        with _pool(min(jobs, total)) as pool:
            for i, res in enumerate(pool.map(_scan_task, tasks, chunksize=max(1, min(32, total // (jobs * 8)))), 1):
                results.append(res)
                if progress is not None:
                    progress(i, total)
    else:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            for i, task in enumerate(tasks, 1):
                results.append(_scan_task(task))
                if progress is not None:
                    progress(i, total)
        finally:
            if was_enabled:
                gc.enable()
    results.sort(key=lambda r: r.path)
    inventory: dict[str, dict] = {}
    for r in results:
        if isinstance(r, FileScanned):
            for api, n in r.apis.items():
                entry = inventory.get(api)
                if entry is None:
                    inventory[api] = {"count": n, "status": apidb.status(api, line)}
                else:
                    entry["count"] += n
    return ScanResult(roots, results, line, time.perf_counter() - t0, dict(sorted(inventory.items())))
