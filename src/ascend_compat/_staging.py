"""One writer at a time for a folder that is staged and swapped (:mod:`ascend_compat._atomic`'s folder staging).

The staging marker's lock tells a live run's folders from a killed run's, but not what a second run may do while
the first is between its renames (the target moved aside, not yet replaced): finding no folder, it would write a
new one without the user's files and then delete the first run's. So every writer of a target holds an exclusive
``flock`` on the target's parent directory from its recovery to its last rename: a second run waits (and says
so on stderr). The parent is locked, not the target, because the target is what gets renamed. Where there is no
flock (not POSIX, a file system without it) runs are not serialised, as before. :func:`discard` deletes a
staging folder marker last. Only the standard library.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Optional

from ascend_compat import _atomic

__all__ = ["discard", "target_lock"]


def _acquire(fd: int, say: Callable[[str], None], parent: str) -> None:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say(f"waiting for another ascend-compat run writing in {parent} to finish")
        fcntl.flock(fd, fcntl.LOCK_EX)


@contextmanager
def target_lock(target: str, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock for writing ``target`` (its parent directory is created); ``say`` tells the user a wait."""
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    fd: Optional[int] = None
    try:  # the descriptor is closed however the wait ends (Ctrl-C included)
        try:
            fd = os.open(parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
            _acquire(fd, say, parent)
        except (ImportError, OSError):  # no flock here (or a folder that cannot be opened): unserialised
            pass
        yield
    finally:
        if fd is not None:
            os.close(fd)  # drops the lock


def discard(folder: str) -> None:
    """Delete a staging folder of this run, its marker last (a kill midway leaves it recognisable); nothing
    when it is gone (renamed into place)."""
    try:
        _atomic.remove_marked(folder)
    except FileNotFoundError:
        pass
    except OSError:  # not deletable entry by entry (a folder made read-only): as much as can be
        shutil.rmtree(folder, ignore_errors=True)
