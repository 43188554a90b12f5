"""``check``'s engine: find files, scan each (in parallel across cores), collect results as values."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable, Optional, Union

from ascend_compat import settings
from ascend_compat._atomic import file_kind

# pyscan registers the Python rules in this process too (the parent reads them when reporting).
from ascend_compat.migrate import apidb, cxx, deps, pyscan
from ascend_compat.migrate.discover import discover, own_output_skipped
from ascend_compat.migrate.model import FileFailed, FileResult, FileScanned, FileSkipped, ScanResult

#: Files larger than this are never read (generated code, data dumped into .py files).
MAX_BYTES = 8 * 1024 * 1024
#: Size budget per file (Python and C/C++: ``ASCEND_COMPAT_SCAN_FILE_BYTES``): parsing costs 10-200x the source
#: size in memory (a 7 MB .py took 1.1 GiB in ``ast.parse`` alone), so larger sources are skipped with a reason
#: instead of dominating the scan's memory. The largest .py of torch 2.13 and transformers 5.23 is 1.4 MB.
MAX_ANALYSIS_BYTES = {"python": settings.SCAN_FILE_BYTES.default, "cxx": settings.SCAN_FILE_BYTES.default,
                      "deps": MAX_BYTES}
#: Predicted-memory budget per Python file (``ASCEND_COMPAT_SCAN_FILE_MEMORY``), see :func:`predicted_memory`.
MAX_MEMORY = settings.SCAN_FILE_MEMORY.default
#: CPU-time budget per file (``ASCEND_COMPAT_SCAN_FILE_SECONDS``): past it the file is skipped with a reason.
MAX_SECONDS = settings.SCAN_FILE_SECONDS.default
# What a Python file's analysis holds at its peak (tracemalloc, torch/transformers/generated code): ~10 bytes
# per source byte (the text, its lines, string constants) plus ~1.5 KB per punctuation mark, each about one AST
# node with its share of the scanner's tables (dense generated code: 1.4 KB, docstrings: 0.1 KB).
_BYTES_PER_BYTE = 10
_BYTES_PER_MARK = 1500
_MARKS = (b"(", b",", b"=", b".", b"[", b":")
# Below this many files, worker processes cost more than they save.
_PARALLEL_MIN_FILES = 48
_CHUNK = 1 << 20

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Unreadable:
    """Why a file was not read: ``failed`` for an error (unreadable, vanished), else a deliberate skip."""

    reason: str
    failed: bool = False


class BudgetExceededError(Exception):
    """A file's analysis ran past its time budget."""


def read_bytes(path: str, max_bytes: int = MAX_BYTES, seconds: float = MAX_SECONDS) -> Union[bytes, Unreadable]:
    """The bytes of a regular file of at most ``max_bytes``, or an :class:`Unreadable` saying why not.

    Never blocks and never raises for one bad file: FIFOs, devices and sockets (also behind a symlink, whose
    target is what is checked) are skipped without being opened for reading, the read is bounded in size and
    time, and a file swapped between the check and the open is caught by comparing the open file with it.
    """
    try:
        st = os.stat(path)  # follows symlinks: the target is what would be read
    except (OSError, ValueError) as exc:
        return Unreadable(f"cannot read: {getattr(exc, 'strerror', None) or exc}", failed=True)
    link = f"symlink to {os.path.realpath(path)}: " if os.path.islink(path) else ""
    if not stat.S_ISREG(st.st_mode):
        return Unreadable(f"{link}{file_kind(st.st_mode)}, not a regular file")
    if st.st_size > max_bytes:
        return Unreadable(f"{link}larger than {_size(max_bytes)} ({st.st_size} bytes)")
    deadline = time.monotonic() + seconds
    try:
        # O_NONBLOCK: should a FIFO replace the file after the stat, opening it does not wait for a writer.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        return Unreadable(f"cannot read: {exc.strerror or exc}", failed=True)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return Unreadable("changed while being read (no longer the same regular file)")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                return Unreadable(f"{link}larger than {_size(max_bytes)} (grew while being read)")
            if time.monotonic() > deadline:
                return Unreadable(f"reading took longer than the {seconds:g} s budget")
    except OSError as exc:
        return Unreadable(f"cannot read: {exc.strerror or exc}", failed=True)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 and n % (1024 * 1024) == 0 else f"{n} bytes"


def read_source(path: str, max_bytes: int = MAX_BYTES) -> tuple[Optional[bytes], Optional[FileResult]]:
    """The file's bytes, or the result that explains why it is not scanned (see :func:`read_bytes`)."""
    data = read_bytes(path, max_bytes)
    if isinstance(data, Unreadable):
        return None, (FileFailed(path, "", data.reason) if data.failed else FileSkipped(path, "", data.reason))
    if b"\0" in data[:8192]:
        return None, FileSkipped(path, "", "binary file")
    return data, None


@contextlib.contextmanager
def time_budget(seconds: float = MAX_SECONDS) -> Iterator[None]:
    """Raise :class:`BudgetExceededError` in the block once it has used ``seconds`` of CPU time.

    CPU time, not wall time, so a loaded machine does not turn a file into a skipped one; reads cannot block
    (:func:`read_bytes`). A no-op where no interval timer can be used: off the main thread, without
    ``setitimer``, or when the program already runs its own virtual timer.
    """
    usable = (seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0))
    if not usable:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise BudgetExceededError(f"analysis took longer than the {seconds:g} s budget per file")

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def analysis_budget(language: str, max_bytes: Optional[int] = None) -> int:
    """The size budget of one file: ``max_bytes`` when given, else the language's analysis budget (Python and
    C/C++: ``ASCEND_COMPAT_SCAN_FILE_BYTES``; raises :class:`~ascend_compat.settings.SettingError` on a bad one)."""
    if max_bytes is not None:
        return max_bytes
    if language in ("python", "cxx"):
        return min(settings.SCAN_FILE_BYTES.get(), MAX_BYTES)
    return MAX_ANALYSIS_BYTES.get(language, MAX_BYTES)


def memory_budget(memory: Optional[int] = None) -> int:
    """Predicted-memory budget of one Python file: ``memory``, else ``ASCEND_COMPAT_SCAN_FILE_MEMORY``."""
    return memory if memory is not None else settings.SCAN_FILE_MEMORY.get()


def time_limit(seconds: Optional[float] = None) -> float:
    """CPU seconds one file may take: ``seconds``, else ``ASCEND_COMPAT_SCAN_FILE_SECONDS``."""
    return seconds if seconds is not None else settings.SCAN_FILE_SECONDS.get()


def predicted_memory(data: bytes) -> int:
    """About the most memory parsing and scanning Python source ``data`` holds at once, in bytes.

    Counted in a few milliseconds for megabytes (no tokenizing): an upper estimate for code, docstrings and
    data tables alike, so a file over the budget is skipped before ``ast.parse`` allocates anything.
    """
    return _BYTES_PER_BYTE * len(data) + _BYTES_PER_MARK * sum(data.count(m) for m in _MARKS)


def over_memory_budget(data: bytes, memory: int) -> Optional[str]:
    """Why Python source ``data`` is not analysed under the ``memory`` budget, or None when it fits."""
    need = predicted_memory(data)
    if need <= memory:
        return None
    return (f"analysis would need about {_mib(need)} of memory, over the {_mib(memory)} budget per file "
            f"({settings.SCAN_FILE_MEMORY.name})")


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def scan_file(path: str, language: str, line: str = apidb.DEFAULT_LINE, max_bytes: Optional[int] = None,
              seconds: Optional[float] = None, memory: Optional[int] = None) -> FileResult:
    """Scan one file; every failure becomes a value, never an exception.

    Budgets bound the work per file, the environment's (``ASCEND_COMPAT_SCAN_FILE_*``) unless given: ``max_bytes``
    of source, ``memory`` predicted for a Python file's analysis (:func:`predicted_memory`) and ``seconds`` of
    CPU time; past any of them the file is a :class:`FileSkipped` with the reason. A bad budget variable is the
    one exception (:class:`~ascend_compat.settings.SettingError`): it is the same for every file.
    """
    limit = time_limit(seconds)
    try:
        with time_budget(limit):
            return _scan(path, language, line, analysis_budget(language, max_bytes), memory_budget(memory))
    except BudgetExceededError as exc:
        return FileSkipped(path, language, str(exc))


def size_skip_reason(reason: str, language: str) -> str:
    """``reason`` naming the variable that sets the size budget when that budget is why a file was skipped."""
    sized = language in ("python", "cxx") and reason.startswith("larger than")
    return f"{reason} ({settings.SCAN_FILE_BYTES.name})" if sized else reason


def _scan(path: str, language: str, line: str, max_bytes: int, memory: int) -> FileResult:
    data, early = read_source(path, max_bytes)
    if early is not None:
        early.language = language
        if isinstance(early, FileSkipped):
            early.reason = size_skip_reason(early.reason, language)
        return early
    assert data is not None
    if language == "python":
        too_big = over_memory_budget(data, memory)
        if too_big is not None:
            return FileSkipped(path, language, too_big)
    try:
        if language == "python":
            try:
                text = pyscan.decode_python(data)
            except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
                return FileFailed(path, language, f"cannot decode: {exc}", data.count(b"\n"))
            del data  # the text is what is kept; the bytes are garbage from here
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
    except BudgetExceededError:
        raise
    except Exception as exc:
        return FileFailed(path, language, f"internal error while scanning: {type(exc).__name__}: {exc}")


def _scan_task(args: tuple[str, str, str, Optional[int], float, int]) -> FileResult:
    result = scan_file(*args)
    if not gc.isenabled():
        # The cyclic GC is off for speed, but the scanner leaves cycles (pyscan's _Scanner keeps bound methods of
        # itself, and with them the file's AST and text): collect the youngest generation, where all of this
        # file's objects still are, so nothing of one file outlives it (transformers: 1.7 GiB -> tens of MiB).
        gc.collect(0)
    return result


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
    max_bytes: Optional[int] = None,
    seconds: Optional[float] = None,
    memory: Optional[int] = None,
) -> ScanResult:
    """Scan files and directories; the Python API behind ``ascend-compat check``.

    ``max_bytes``, ``seconds`` and ``memory`` are the per-file budgets (see :func:`scan_file`); a bad
    ``ASCEND_COMPAT_SCAN_FILE_*`` value raises :class:`~ascend_compat.settings.SettingError` before any work.
    """
    t0 = time.perf_counter()
    seconds, memory = time_limit(seconds), memory_budget(memory)
    analysis_budget("python", max_bytes)  # read once here: a bad value stops the scan before it starts
    roots = list(paths)
    line = apidb.normalize_line(torch_npu)
    # Largest first so the last task to finish is a small one.
    # A folder that could not be listed, or a FIFO named explicitly: a failure, so the scan is incomplete.
    unscanned: list[FileResult] = []
    with own_output_skipped() as own:  # named in the result: its files are in no count
        files = list(discover(roots, use_git=use_git,
                              on_error=lambda path, why: unscanned.append(FileFailed(path, "", why))))
    sizes = {}
    for p, _ in files:
        try:
            sizes[p] = os.path.getsize(p)
        except OSError:
            sizes[p] = 0
    order = sorted(files, key=lambda f: -sizes[f[0]])
    tasks = [(p, lang, line, max_bytes, seconds, memory) for p, lang in order]
    jobs = jobs or os.cpu_count() or 1
    results: list[FileResult] = unscanned
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
    return ScanResult(roots, results, line, time.perf_counter() - t0, dict(sorted(inventory.items())),
                      own_output_skipped=own)
