"""Run a script or module the way ``python`` does, after preparing the process (simulation, shim)."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
import types
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO, cast

if TYPE_CHECKING:
    from ascend_compat.backends.registry import BackendInfo
    from ascend_compat.doctor.fallback import FallbackSummary


def _shim_spawned_children(backend: Optional[str], dtype_policy: Optional[str]) -> Callable[[], None]:
    """Make the script's spawned children (``torch.multiprocessing.spawn``, spawn-context pools and workers) run
    under the shim as the script does; returns the undo.

    A spawned child is a fresh ``python -c "from multiprocessing.spawn import spawn_main; ..."``: it inherits the
    environment but imports nothing of ours, so ``mp.spawn(worker, nprocs=torch.cuda.device_count())`` would run
    an unshimmed ``worker`` (``init_process_group("nccl")`` failing there). The child's command line imports
    ``ascend_compat`` first, and ``ASCEND_COMPAT_AUTO_ACTIVATE=1`` (with the run's backend and dtype policy)
    activates it when the child imports torch. Forked children inherit the patched process as it is.
    """
    import multiprocessing.spawn as spawn

    from ascend_compat import cuda_shim

    env = {"ASCEND_COMPAT_AUTO_ACTIVATE": "1"}
    if backend:
        env["ASCEND_COMPAT_BACKEND"] = backend
    if dtype_policy:
        env["ASCEND_COMPAT_DTYPE_POLICY"] = dtype_policy
    original = spawn.get_command_line

    def get_command_line(**kwds: Any) -> list[str]:
        cmd = list(original(**kwds))
        if "-c" in cmd:
            i = cmd.index("-c") + 1
            cmd[i] = "import ascend_compat; " + cmd[i]
        return cmd

    # A scope of the package ledger: exact restore of the environment and the spawn hook, also on Ctrl-C.
    scope = cuda_shim.package_ledger().child()
    with scope.transaction():
        for key, value in env.items():
            scope.setitem(os.environ, key, value, label=f"run: {key} for spawned children")
        scope.setattr(spawn, "get_command_line", get_command_line, label="run: spawned children import ascend_compat")
    return scope.restore


def _prepare(backend: Optional[str], report: bool, dtype_policy: Optional[str] = None) -> Optional[str]:
    from ascend_compat import settings

    if settings.SIMULATE.is_set():
        from ascend_compat import simulate

        simulate.install_from_env()
    from ascend_compat import cuda_shim

    cuda_shim.set_reporting(report)
    target = cuda_shim.activate(backend, dtype_policy=dtype_policy)
    if report:
        reason = cuda_shim.noop_reason()
        where = f"CUDA -> {target}" if target else f"inactive ({reason})"
        print(f"ascend-compat: {where}", file=sys.stderr, flush=True)
    return target


def print_report(stream: Optional[TextIO] = None, fallback: Optional[FallbackSummary] = None) -> None:
    """The redirections that ran, most frequent first; dtype substitutions; the CPU-fallback summary if given."""
    from ascend_compat import cuda_shim

    stream = stream or sys.stderr
    counts = sorted(cuda_shim.redirect_counts().items(), key=lambda kv: (-kv[1], kv[0]))
    # active_backend() is typed as a plain ``type``; what it holds is a BackendInfo subclass.
    backend = cast("Optional[type[BackendInfo]]", cuda_shim.active_backend())
    target = backend.device_type if backend is not None else "none"
    print(f"\nascend-compat report: CUDA calls redirected to '{target}'", file=stream)
    if not counts:
        print("  (none)", file=stream)
    for name, n in counts:
        print(f"  {n:>8}  {name}", file=stream)
    from ascend_compat.ecosystem import patching

    # Library patches that did something (applied, provided or failed); waiting / not needed ones are noise here.
    done = {k: v for k, v in patching.status().items() if not v.startswith(("waiting", "not "))}
    if done:
        print("ascend-compat library patches:", file=stream)
        for name, state in sorted(done.items()):
            print(f"  {name}: {state}", file=stream)
    from ascend_compat.cuda_shim import dtype_policy

    rows = dtype_policy.substitutions()
    if rows:
        print(f"ascend-compat dtype policy '{dtype_policy.current_policy()}':", file=stream)
        for row in rows:
            change = f"{row['from']} -> {row['to']}" if row["from"] != row["to"] else f"{row['from']} kept"
            print(f"  {row['count']:>8}  {change}  at {row['site']}", file=stream)
    if fallback is not None:
        print(fallback.format(), file=stream)
    stream.flush()


def run_target(
    script: Optional[str],
    module: Optional[str],
    args: list[str],
    backend: Optional[str] = None,
    report: bool = False,
    dtype_policy: Optional[str] = None,
) -> int:
    """Run ``script`` (a path) or ``module`` with ``args`` as ``sys.argv[1:]``; return the exit code.

    Behaves like the interpreter: ``__name__ == "__main__"``, ``__file__`` set, the script's directory first on
    ``sys.path``, ``SystemExit`` codes honoured and uncaught exceptions printed with exit code 1. With ``report``,
    the CPU-fallback monitor runs too and everything is summarised on stderr at exit.
    """
    target = _prepare(backend, report, dtype_policy)
    undo_children = _shim_spawned_children(backend, dtype_policy) if target is not None else None
    monitor = None
    if report:
        from ascend_compat.doctor.fallback import FallbackMonitor

        monitor = FallbackMonitor().start()
    try:
        return _run(script, module, args)
    finally:
        if undo_children is not None:
            undo_children()
        if report:
            print_report(fallback=monitor.stop() if monitor is not None else None)


#: The exit code of a run ended by Ctrl-C / SIGINT, as shells report ``python`` killed by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130


def _ours(filename: str) -> bool:
    return filename in (__file__, runpy.__file__) or filename.startswith("<frozen runpy")


def _run(script: Optional[str], module: Optional[str], args: list[str]) -> int:
    old_argv, old_path0 = sys.argv, sys.path[0] if sys.path else None
    try:
        if module is not None:
            sys.argv = [module, *args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            assert script is not None
            problem = script_problem(script)
            if problem is not None:
                print(f"ascend-compat run: {problem[0]}", file=sys.stderr)
                return problem[1]
            sys.argv = [script, *args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            if os.path.isdir(script) or _compiled_or_zip(script):
                runpy.run_path(script, run_name="__main__")
            else:
                _run_source(script)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:  # any error in user code: print it like the interpreter, exit code 1 (130 for Ctrl-C)
        etype, value, tb = sys.exc_info()
        # Drop our own frames and runpy's (``<frozen runpy>`` when runpy is frozen) so the traceback starts at the
        # user's code, as ``python script.py`` shows it.
        while tb is not None and _ours(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        traceback.print_exception(etype, value, tb)
        return EXIT_INTERRUPTED if isinstance(value, KeyboardInterrupt) else 1
    finally:
        sys.argv = old_argv
        if old_path0 is not None and sys.path and sys.path[0] != old_path0:
            sys.path.pop(0)
    return 0


def script_problem(script: str) -> Optional[tuple[str, int]]:
    """Why ``script`` cannot be run and the exit code, worded and coded as ``python`` does, or None."""
    if script == "-":
        return None
    if not os.path.exists(script):
        return f"can't open file {script!r}: No such file", 2
    if os.path.isdir(script):
        if any(os.path.isfile(os.path.join(script, name)) for name in ("__main__.py", "__main__.pyc")):
            return None
        return f"can't find '__main__' module in {script!r}", 1
    if os.path.isfile(script):  # a pipe or FIFO is not opened here: that would wait for its writer, or drain it
        try:
            open(script, "rb").close()
        except OSError as exc:
            return f"can't open file {script!r}: [Errno {exc.errno}] {exc.strerror}", 2
    return None


def _compiled_or_zip(script: str) -> bool:
    """A regular file that runpy must run: a ``.pyc`` (by its magic number) or a zip application."""
    import importlib.util
    import zipfile

    if script == "-" or not os.path.isfile(script):
        return False
    with open(script, "rb") as f:
        if f.read(len(importlib.util.MAGIC_NUMBER)) == importlib.util.MAGIC_NUMBER:
            return True
    return zipfile.is_zipfile(script)


def _run_source(script: str) -> None:
    """Run a source script as ``__main__``, as ``python`` does: ``-`` (standard input), a file, a pipe
    (``/dev/stdin``, ``<(...)``), a FIFO.

    Not ``runpy.run_path``: it first offers the path to the zip importer, whose probe drains a pipe (then running
    what is left: nothing, exit code 0), and it gives a file the relative ``__file__`` and ``sys.argv[0]`` it was
    given, where python (3.9+) makes ``__file__`` absolute, so a script that changes directory still finds itself.
    """
    if script == "-":
        source, filename = sys.stdin.buffer.read(), "<stdin>"
    else:
        with open(script, "rb") as f:
            source = f.read()
        filename = os.path.abspath(script) if os.path.isfile(script) else script
    code = compile(source, filename, "exec", dont_inherit=True)  # not runner.py's __future__ imports
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=filename, __cached__=None, __loader__=None, __package__=None, __spec__=None)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main  # as runpy does: pickling and `import __main__` see the script's module
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
