"""A warm interpreter that forks one child per command: ``ascend-compat ...`` (or a ``-c`` snippet) in a process of
its own, without paying each time for the interpreter's start and the imports of torch and the CLI.

The server imports ``torch``, the CLI's modules and the commands' implementations once, then for each request forks
a child that takes the request's environment, working directory, ``PYTHONPATH`` entries and argv, points fds 0/1/2
at /dev/null (or a file holding the request's ``input``) and two files, runs the command and exits as
``python -m ascend_compat`` would (``SystemExit`` codes, uncaught exceptions printed, threads joined, atexit handlers
run, streams flushed), only without tearing every module down. Each child is a fresh process: nothing one command
does (an activation, a simulator install, ``os.environ``) reaches the next.

Not for checks about the interpreter's start: what is imported first (torch is already imported here), variables
read at start-up (``PYTHON*``, ``ASCEND_COMPAT_AUTO_ACTIVATE``), or signals sent to a running command; those keep a
real ``subprocess`` (``run_python``), and :meth:`ForkServer.run` refuses the start-up variables it knows.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

SERVER = r"""
import atexit, faulthandler, importlib, json, os, pkgutil, signal, sys, threading, time
import torch  # noqa: F401  (what most commands import first; ready before any fork)
from ascend_compat.cli.main import build_parser, main
build_parser()  # every command's module, imported once
# The commands' implementations, compiled once (PYTHONDONTWRITEBYTECODE leaves no .pyc: each fresh interpreter
# compiled them again, seconds per command). Not the simulator or the shim's patches: they are installed in the
# child, as the command does. A module that fails here fails again in the child, which reports it.
for package in ("migrate", "doctor", "ecosystem", "kernel_helper", "superopt", "verify", "bench", "info"):
    try:
        root = importlib.import_module("ascend_compat." + package)
        for found in pkgutil.walk_packages(getattr(root, "__path__", []), root.__name__ + "."):
            importlib.import_module(found.name)
    except Exception:
        pass

def command(req):
    os.setpgid(0, 0)  # the command and its workers: one group to kill on a timeout
    os.dup2(os.open(req["stdin"] or os.devnull, os.O_RDONLY), 0)
    os.dup2(os.open(req["stdout"], os.O_WRONLY | os.O_TRUNC), 1)
    os.dup2(os.open(req["stderr"], os.O_WRONLY | os.O_TRUNC), 2)
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    faulthandler.dump_traceback_later(max(req["timeout"] - 1, 0.5))  # where a command that times out was stuck
    entries = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [p for p in entries if p not in sys.path]
    if req["code"] is not None:
        sys.argv = ["-c"]
        exec(compile(req["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return 0
    sys.argv = ["ascend-compat", *req["argv"]]
    return main(req["argv"])

def child(req):
    # The interpreter's exit (SystemExit codes, uncaught exceptions printed, threads joined, atexit handlers,
    # streams flushed) without its teardown of every module, which costs more than most commands with torch loaded.
    interrupted = False
    try:
        code = command(req)
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code, interrupted = 1, True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if interrupted:  # as the interpreter does: killed by the SIGINT it did not handle
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit((code or 0) & 0xFF)

def serve():
    for line in sys.stdin:
        req = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            child(req)  # never returns
        try:
            os.setpgid(pid, pid)  # also here, so that a timeout right after the fork still finds the group
        except OSError:
            pass
        deadline, status, timed_out = time.monotonic() + req["timeout"], None, False
        while status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = raw
            elif time.monotonic() > deadline:
                timed_out = True
                os.killpg(pid, signal.SIGKILL)
                status = os.waitpid(pid, 0)[1]
            else:
                time.sleep(0.005)
        try:
            os.killpg(pid, signal.SIGKILL)  # workers the command left behind
        except (ProcessLookupError, PermissionError):
            pass
        reply = {"id": req["id"], "rc": os.waitstatus_to_exitcode(status), "timed_out": timed_out}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()

serve()
"""

# Read by the interpreter (or the package's import) at start-up: a forked child started long before they were set.
STARTUP_VARIABLES = ("PYTHONHOME", "PYTHONSTARTUP", "PYTHONWARNINGS", "PYTHONIOENCODING",
                     "PYTHONUTF8", "PYTHONHASHSEED", "PYTHONFAULTHANDLER", "PYTHONDEVMODE", "PYTHONNOUSERSITE",
                     "ASCEND_COMPAT_AUTO_ACTIVATE", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class ForkServer:
    """One warm server process (see the module docstring); :meth:`run` is ``subprocess.run`` for one command."""

    def __init__(self, base_env: dict[str, str]) -> None:
        self._base_env = dict(base_env)
        self._tmp = tempfile.TemporaryDirectory(prefix="forkserver-")
        self._proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, env=self._base_env, cwd=self._tmp.name)
        self.launches = 0
        self._lock = threading.Lock()  # one request at a time on the pipe

    def run(self, argv: Sequence[str] = (), env: Optional[dict[str, str]] = None, cwd: Optional[str | Path] = None,
            timeout: float = 300, code: Optional[str] = None,
            input: Optional[str | bytes] = None) -> subprocess.CompletedProcess[str]:
        """Run ``ascend-compat ARGV`` (or ``python -c CODE``) with ``env`` (the full environment) in ``cwd``, reading
        ``input`` (text is written as UTF-8) on its standard input.

        Returns a text-mode CompletedProcess; raises ``subprocess.TimeoutExpired`` past ``timeout`` seconds."""
        env = dict(self._base_env if env is None else env)
        changed = [k for k in STARTUP_VARIABLES if env.get(k) != self._base_env.get(k)]
        if changed:
            raise ValueError(f"{changed} act at interpreter start-up: use a real subprocess for this check")
        with self._lock:
            return self._run(list(argv), env, cwd, timeout, code, input)

    def _run(self, argv: list[str], env: dict[str, str], cwd: Optional[str | Path], timeout: float,
             code: Optional[str], stdin: Optional[str | bytes]) -> subprocess.CompletedProcess[str]:
        self.launches += 1
        out, err, inp = (Path(self._tmp.name) / f"{self.launches}.{s}" for s in ("out", "err", "in"))
        out.touch()
        err.touch()
        if stdin is not None:
            inp.write_bytes(stdin.encode() if isinstance(stdin, str) else stdin)
        request = {"id": self.launches, "argv": argv, "env": env, "cwd": str(cwd or os.getcwd()), "timeout": timeout,
                   "code": None if code is None else textwrap.dedent(code), "stdout": str(out), "stderr": str(err),
                   "stdin": None if stdin is None else str(inp)}
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        reply = self._reply(self.launches, timeout + 60)
        args = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "ascend_compat", *argv]
        stdout, stderr = (_text(p) for p in (out, err))
        for path in (out, err, inp):
            path.unlink(missing_ok=True)
        if reply["timed_out"]:
            raise subprocess.TimeoutExpired(args, timeout, stdout, stderr)
        return subprocess.CompletedProcess(args, reply["rc"], stdout, stderr)

    def _reply(self, request_id: int, wait: float) -> dict[str, Any]:
        """The server's answer to ``request_id`` (an earlier request's, left by an interrupted caller, is skipped)."""
        assert self._proc.stdout is not None
        while True:
            ready, _, _ = select.select([self._proc.stdout], [], [], wait)
            line = self._proc.stdout.readline() if ready else ""
            if not line:
                raise RuntimeError(f"the fork server stopped answering (exit status {self._proc.poll()})")
            reply: dict[str, Any] = json.loads(line)
            if reply["id"] == request_id:
                return reply

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._tmp.cleanup()


def _text(path: Path) -> str:
    """What ``subprocess.run(..., text=True)`` gives: decoded, universal newlines."""
    return path.read_bytes().decode().replace("\r\n", "\n").replace("\r", "\n")


_SHARED: list[ForkServer] = []


def shared() -> ForkServer:
    """The test session's server (the ``forked`` fixture), started on first use with ``_clean_env()``, stopped at
    exit."""
    if not _SHARED or _SHARED[0]._proc.poll() is not None:
        from tests.conftest import _clean_env

        _SHARED[:] = [ForkServer(_clean_env())]
        atexit.register(_SHARED[0].close)
    return _SHARED[0]


def cli(*args: str, env: Optional[dict[str, str]] = None, cwd: Optional[str | Path] = None,
        timeout: float = 300, input: Optional[str | bytes] = None) -> subprocess.CompletedProcess[str]:
    """``ascend-compat ARGS`` in a fresh forked process of the shared server (see :meth:`ForkServer.run`)."""
    return shared().run(args, env=env, cwd=cwd, timeout=timeout, input=input)


def run_code(code: str, env: Optional[dict[str, str]] = None, timeout: float = 300,
             cwd: Optional[str | Path] = None, input: Optional[str | bytes] = None) -> subprocess.CompletedProcess[str]:
    """``run_python`` (tests/conftest.py) in a forked process: ``env`` is added to ``_clean_env()``."""
    from tests.conftest import _clean_env

    return shared().run(code=code, env={**_clean_env(), **(env or {})}, cwd=cwd, timeout=timeout, input=input)
