"""``ascend-compat superopt FILE.py:FUNC [--backend B] [--target T] [--out DIR] [--json]``: superoptimize a graph.

FUNC is a function of FILE that takes no arguments and returns an ``ascend_compat.superopt`` kernel graph. The
command prints the plan (``explain()``), writes one Triton file per kernel and ``plan.json`` to ``--out``.

Errors go to stderr and leave stdout empty, ``--json`` or not (as ``check`` and ``verify model`` do). What the user's
own code raised is shown as python shows it for a script: the traceback from the user's first frame, none of ours.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from ascend_compat._factories import exec_registered, python_file_problem
from ascend_compat.cli._common import use_color

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers

EXIT_FAILED = 1  # FILE or FUNC raised, or the graph cannot be superoptimized (a GraphError wherever it is raised)
EXIT_USAGE = 2  # the command line: FILE.py:FUNC, a FUNC that takes arguments or returns no graph, --target, --out

EPILOG = f"""\
exit status:
  0  the kernels and plan.json were written
  {EXIT_FAILED}  FILE or FUNC raised (python's error, traceback from your code), or the
     graph cannot be superoptimized: a GraphError (shapes or dtypes that do
     not fit, no output) whether FUNC raised it while building the graph or
     the search did, or a backend that is not available here
  {EXIT_USAGE}  usage: FILE.py:FUNC (no such file or function, a FUNC that takes
     arguments or returns no graph), an unknown --target, an --out that
     cannot be written
  N  FILE or FUNC raised SystemExit(N), N a non-zero integer (SystemExit(0),
     None or a message: {EXIT_FAILED})
Errors go to stderr and nothing to stdout, with --json too (where FILE's own
prints go to stderr)."""

#: Frames of ours that a traceback of the user's code starts with: this package's and the import machinery's.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _UserCodeError(Exception):
    """FILE or FUNC raised or exited: the text to print on stderr and the exit status."""

    def __init__(self, text: str, status: int) -> None:
        super().__init__(text)
        self.text, self.status = text, status


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("superopt", help="superoptimize a kernel graph into verified Triton kernels (Ascend or CUDA)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", metavar="FILE.py:FUNC", help="a function returning an ascend_compat.superopt graph")
    p.add_argument("--backend", default="ascend", choices=("ascend", "triton", "torch"))
    p.add_argument("--target", help="target profile (ascend-910b, ascend-910b4, ascend-310p, nvidia-h100, ...)")
    p.add_argument("--out", help="directory for the kernels and plan.json (default: ./superopt-FUNC)")
    p.add_argument("--no-cache", action="store_true", help="search again even if a cached plan exists")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def _ours(filename: str) -> bool:
    return filename.startswith(_PACKAGE) or filename.startswith("<frozen importlib")


def _user_traceback(exc: BaseException) -> str:
    """``exc`` formatted as python prints it for a script: our leading frames (this command, importlib) cut off;
    for a GraphError also the library's frames under the user's line that added the op (the message names the op
    and its shapes). A SyntaxError in FILE itself keeps no frame: python's ``File "...", line N`` block alone."""
    from ascend_compat.superopt import GraphError

    te = traceback.TracebackException.from_exception(exc)
    frames = list(te.stack)
    start, end = 0, len(frames)
    while start < end and _ours(frames[start].filename):
        start += 1
    while isinstance(exc, GraphError) and end > start and frames[end - 1].filename.startswith(_PACKAGE):
        end -= 1
    te.stack = traceback.StackSummary.from_list(frames[start:end])
    return "".join(te.format())


def _exit_message(exc: SystemExit, who: str, phase: str, path: str) -> tuple[str, int]:
    """What to say when FILE or FUNC raised SystemExit, and the status: its own when a non-zero integer, else
    EXIT_FAILED (no graph was built, so exit 0 would pass for success)."""
    code = 0 if exc.code is None else exc.code
    status = code if isinstance(code, int) and code != 0 else EXIT_FAILED
    detail = f"status {code}" if isinstance(code, int) else f"the message {str(code)!r}"
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    where = f" (line {lines[-1]})" if lines else ""
    return f"{who} exited with {detail}{phase}{where}; no graph was built", status


def _user_call(call: Callable[[], Any], who: str, phase: str, path: str) -> Any:
    """``call()``, the user's code: what it raises becomes a _UserCodeError (Ctrl-C still interrupts)."""
    try:
        return call()
    except SystemExit as exc:
        message, status = _exit_message(exc, who, phase, path)
        raise _UserCodeError(f"ascend-compat superopt: {message}\n", status) from None
    except Exception as exc:  # anything the user's code raises is theirs to read, at their line
        raise _UserCodeError(f"ascend-compat superopt: {who} failed{phase}:\n{_user_traceback(exc)}",
                              EXIT_FAILED) from None


def _required_arguments(fn: Callable[..., Any]) -> list[str]:
    """The parameters ``fn()`` would be missing (none when its signature cannot be read: it is called anyway)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in params if p.default is inspect.Parameter.empty and p.kind not in variadic]


def _load(spec: str) -> Any:
    """The graph built by FILE.py:FUNC. Raises ValueError (a usage error, our words) or _UserCodeError."""
    file, _, func = spec.rpartition(":")
    if not file or not func:
        raise ValueError(f"expected FILE.py:FUNC, got {spec!r}")
    path = Path(file)
    if not path.exists():
        raise ValueError(f"no such file: {file}")
    problem = python_file_problem(file)
    if problem is not None:  # a folder, a FIFO (never opened: it would wait for a writer), an unreadable file
        raise ValueError(f"{file}: {problem}")
    full = os.path.abspath(file)  # the name the user's frames carry (python makes a script's path absolute too)
    mod_spec = importlib.util.spec_from_file_location(f"_superopt_user_{path.stem}", full)
    if mod_spec is None or mod_spec.loader is None:
        raise ValueError(f"cannot import {file}")
    module = importlib.util.module_from_spec(mod_spec)
    loader = mod_spec.loader
    folder = os.path.dirname(full)
    sys.path.insert(0, folder)  # FILE's own imports of its neighbours work, as for `python FILE.py`
    try:
        _user_call(lambda: exec_registered(mod_spec.name, module, loader), file, " while being loaded", full)
    finally:
        if folder in sys.path:  # by value: FILE may have put entries of its own first
            sys.path.remove(folder)
    fn = getattr(module, func, None)
    if not callable(fn):
        raise ValueError(f"{file} has no function {func!r}")
    missing = _required_arguments(fn)
    if missing:
        raise ValueError(f"{func}() in {file} takes arguments ({', '.join(missing)}); superopt calls FUNC with none")
    from ascend_compat.superopt import KernelGraph

    graph = _user_call(fn, f"{func}() in {file}", "", full)
    if not isinstance(graph, KernelGraph):
        raise ValueError(f"{func}() returned {type(graph).__name__}, not a kernel graph (yr.new_kernel_graph())")
    return graph


def _option_problem(out: str, target: Optional[str]) -> Optional[str]:
    """A usage error found before any work (so FILE does not run and no search is spent for nothing), or None."""
    if target:
        from ascend_compat.superopt._data import target as load_target

        try:
            load_target(target)
        except ValueError as exc:
            return f"--target: {exc}"
    if os.path.exists(out) and not os.path.isdir(out):
        from ascend_compat._atomic import file_kind

        return f"--out {out}: {file_kind(os.stat(out).st_mode, 'a file')}, not a directory"
    return None


def _written_path(exc: OSError, out: str) -> str:
    """The path an OSError of ``save`` names, spelt from ``--out`` as the user gave it (it carries absolute ones)."""
    if not exc.filename:
        return out
    rel = os.path.relpath(os.fspath(exc.filename), os.path.abspath(out))
    return out if rel == "." or rel.startswith("..") else os.path.join(out, rel)


def main(args: argparse.Namespace) -> int:
    out = args.out or f"superopt-{args.spec.rpartition(':')[2]}"
    problem = _option_problem(out, args.target)
    if problem is not None:
        print(f"ascend-compat superopt: {problem}", file=sys.stderr)
        return EXIT_USAGE
    # With --json the report owns stdout: what FILE and FUNC print goes to stderr.
    quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    try:
        with quiet:
            graph = _load(args.spec)
    except ValueError as e:
        print(f"ascend-compat superopt: {e}", file=sys.stderr)
        return EXIT_USAGE
    except _UserCodeError as e:
        sys.stderr.write(e.text)
        return e.status
    from ascend_compat.superopt import BackendUnavailableError, GraphError

    try:
        with quiet:
            opt = graph.superoptimize(backend=args.backend, target=args.target, use_cache=not args.no_cache)
    except (GraphError, BackendUnavailableError, ValueError) as e:
        print(f"ascend-compat superopt: {e}", file=sys.stderr)
        return EXIT_FAILED
    try:
        files = opt.save(out)
    except OSError as e:
        print(f"ascend-compat superopt: cannot write {_written_path(e, out)}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        rec = {k: v for k, v in opt.record.items() if k != "kernels"}
        rec["files"] = [str(f) for f in files]
        rec["kernels"] = [{k: v for k, v in kern.items() if k != "source"} for kern in opt.kernels]
        print(json.dumps(rec, indent=2))
        return 0
    bold, reset = ("\033[1m", "\033[0m") if use_color(sys.stdout) else ("", "")
    print(f"{bold}superopt {args.spec}{reset}")
    print(opt.explain())
    print(f"wrote {', '.join(str(f) for f in files)}")
    return 0
