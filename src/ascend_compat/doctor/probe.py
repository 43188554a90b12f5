"""The machine as the doctor sees it: a :class:`Probe` holds every outside input the checks use.

A probe carries a root directory standing for ``/``, the environment mapping (with its PATH), the machine name, the
package-version lookup, the library loader, the command runner and the disk-usage call. Defaults are this process's
machine; tests build fake CANN trees and fake ``npu-smi`` scripts and pass their own probe to the real checks.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Protocol

from ascend_compat._dist import version_of


class DiskUsage(Protocol):
    """What :func:`shutil.disk_usage` returns, as far as the checks read it (bytes)."""

    @property
    def total(self) -> int: ...

    @property
    def free(self) -> int: ...


def _python_version() -> tuple[int, int, int]:
    return sys.version_info[0], sys.version_info[1], sys.version_info[2]


def _run(argv: list[str], timeout: float) -> tuple[int, str]:
    """Run ``argv``; (exit status, stdout+stderr). A command that cannot start or hangs reports -1 and why.

    Output is decoded as UTF-8 with undecodable bytes replaced (U+FFFD): a tool printing binary or another encoding
    must give a readable finding, not an exception.
    """
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:g} s"
    except OSError as exc:
        return -1, str(exc)
    return proc.returncode, (proc.stdout or b"").decode("utf-8", "replace") + (proc.stderr or b"").decode(
        "utf-8", "replace")


#: Seconds the library-loading subprocess may take (a constructor that hangs must not hang the doctor).
LIBRARY_LOAD_TIMEOUT = 30.0

# Runs in a fresh interpreter: loads each library given on the command line in order, printing one JSON line
# before (so a crash names the library it happened in) and one after each load.
_LOAD_SCRIPT = """
import ctypes, json, sys
for path in sys.argv[1:]:
    print(json.dumps(["start", path]), flush=True)
    try:
        ctypes.CDLL(path)
        error = None
    except OSError as exc:
        error = str(exc)
    print(json.dumps(["done", path, error]), flush=True)
"""


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _load_libraries(paths: list[str], timeout: float = LIBRARY_LOAD_TIMEOUT) -> dict[str, Optional[str]]:
    """dlopen each of ``paths`` (in order, in one child process); per path None on success or why it failed.

    Loading runs in a subprocess because a library's constructor can abort or segfault, which would kill the doctor.
    When the child dies in a library, that library gets the error (with the signal) and the rest are tried again in
    a new child, so one crashing library never hides the state of the others.
    """
    results: dict[str, Optional[str]] = {}
    todo = list(dict.fromkeys(paths))
    while todo:
        try:
            proc = subprocess.run([sys.executable, "-I", "-S", "-c", _LOAD_SCRIPT, *todo], capture_output=True,
                                  timeout=timeout, check=False)
            out, code, timed_out = proc.stdout, proc.returncode, False
        except subprocess.TimeoutExpired as exc:
            out, code, timed_out = exc.stdout or b"", None, True
        except OSError as exc:
            for path in todo:
                results[path] = f"could not start a process to load it: {exc}"
            break
        current: Optional[str] = None
        for line in out.decode("utf-8", "replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a library's constructor may print to stdout
            if isinstance(record, list) and record[:1] == ["start"] and len(record) == 2:
                current = record[1]
            elif isinstance(record, list) and record[:1] == ["done"] and len(record) == 3:
                results[record[1]] = record[2]
                current = None
        if current is None:
            if code == 0:
                break
            # The child died before loading anything (or between libraries): report it on all that are left.
            why = "timed out" if timed_out else f"the loader process exited with {code}"
            for path in todo:
                results.setdefault(path, why)
            break
        if timed_out:
            results[current] = f"loading it did not finish within {timeout:g} s (a constructor hangs)"
        elif code is not None and code < 0:
            results[current] = (f"loading it killed the process with {_signal_name(code)} (a constructor in it or "
                                "in a dependency crashed)")
        else:
            results[current] = f"loading it ended the process with exit status {code}"
        left = [p for p in todo if p not in results]
        if len(left) == len(todo):  # no progress (a library printed look-alike lines): do not loop forever
            for path in left:
                results[path] = f"the loader process exited with {code}"
            break
        todo = left
    return results


@dataclass
class Probe:
    """The machine as the checks see it. Defaults are this process's machine; tests inject their own."""

    root: Path = Path("/")
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    machine: str = field(default_factory=platform.machine)
    python_version: tuple[int, int, int] = field(default_factory=_python_version)
    dist_version: Callable[[str], Optional[str]] = version_of
    load_libraries: Callable[[list[str]], dict[str, Optional[str]]] = _load_libraries
    run: Callable[[list[str], float], tuple[int, str]] = _run
    disk_usage: Callable[[str], DiskUsage] = shutil.disk_usage
    npu_smi_timeout: float = 20.0

    def at(self, absolute: str) -> Path:
        """A system path (``/usr/local/Ascend/...``) under :attr:`root`."""
        return Path(self.root) / absolute.lstrip("/")

    def which(self, command: str) -> Optional[str]:
        return shutil.which(command, path=self.env.get("PATH", ""))

    def package_version(self, *names: str) -> Optional[str]:
        for name in names:
            version = self.dist_version(name)
            if version:
                return version
        return None
