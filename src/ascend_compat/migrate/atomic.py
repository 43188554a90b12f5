"""Atomic file writes shared by ``port``, ``check -o`` and ``report``."""

from __future__ import annotations

import os
import tempfile
from typing import Optional


def _umask() -> int:
    try:  # Linux shows it without changing it (setting it, even briefly, races with other threads)
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere it can only be read by setting it: set it straight back
    os.umask(mask)
    return mask


def write_atomic(path: str, text: str, like: Optional[str] = None) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (a crash leaves the old file whole).

    A symlink stays a symlink: its target is replaced. The file keeps its mode (or that of ``like``); a new file
    gets the mode the umask gives (0644 under the usual 022), not the temporary file's 0600.
    """
    path = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ascend-compat-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        src = like if like is not None and os.path.exists(like) else (path if os.path.exists(path) else None)
        os.chmod(tmp, os.stat(src).st_mode & 0o7777 if src is not None else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
