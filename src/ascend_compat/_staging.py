"""Writing a folder (a tree of files, which :mod:`ascend_compat._atomic` cannot replace in one rename): it is
staged beside its target and swapped into place, and a run killed midway leaves only what a later run recognises.

* A folder is staged beside its target (:func:`make_staging`) as ``.NAME.tmp-*`` (a backup ``.NAME.old-*``, an
  old folder moved aside ``.NAME.tmp-*.old``) holding :data:`STAGING_MARKER`, locked (flock) by the writer while
  it lives: a later run recognises a killed run's leftover by both (:func:`abandoned`, :func:`leftovers`), never
  mistakes a live run's folder or the user's for one, and removes it marker last (:func:`remove_marked`,
  :func:`discard`).
* One writer at a time per target (:func:`target_lock`). The marker's lock tells a live run's folders from a
  killed run's, but not what a second run may do while the first is between its renames (the target moved aside,
  not yet replaced): finding no folder, it would write a new one without the user's files and then delete the
  first run's. So every writer of a target holds an exclusive ``flock`` on the target's parent directory from its
  recovery to its last rename: a second run waits (and says so on stderr). The parent is locked, not the target,
  because the target is what gets renamed. Where there is no flock (not POSIX, a file system without it) runs are
  not serialised.

Only the standard library is imported.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Optional

__all__ = ["STAGING_MARKER", "Staging", "abandoned", "checkpoint", "discard", "leftovers", "make_staging", "mark",
           "named_like", "remove_marked", "target_lock"]

STAGING_MARKER = ".ascend-compat-staging"
_TOOL = "ascend-compat"

#: Test-only: called with the name of each point of a folder write where a kill leaves the most behind (the
#: interrupted-staging tests pause a real writer there and SIGKILL it). Nothing in the package sets it.
staging_hook: Optional[Callable[[str], None]] = None


def checkpoint(point: str) -> None:
    """Call :data:`staging_hook` (tests only)."""
    if staging_hook is not None:
        staging_hook(point)


class Staging:
    """A folder marked as this tool's (``info``: the marker's record), with the marker's lock held by this
    process until :meth:`release` or its end (the kernel drops a lock however the process ends)."""

    def __init__(self, path: str, info: dict, fd: Optional[int]) -> None:  # no dataclasses: a cold-path module
        self.path, self.info, self.fd = path, info, fd

    def release(self) -> None:
        """Close the marker, dropping its lock."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _where(target: str) -> str:
    """``target`` named the same whichever way it was reached (its parent's symlinks resolved)."""
    parent, name = os.path.split(os.path.abspath(target))
    return os.path.join(os.path.realpath(parent), name)


def mark(folder: str, kind: str, target: str, role: str, **extra: object) -> Staging:
    """Write the staging marker into ``folder`` (a folder of this run) and hold its lock; see :class:`Staging`."""
    import json

    info = {"tool": _TOOL, "kind": kind, "role": role, "target": _where(target), "name": os.path.basename(folder),
            "pid": os.getpid(), **extra}
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(os.path.join(folder, STAGING_MARKER), flags, 0o644)
    try:
        _lock(fd, blocking=True)
        os.write(fd, (json.dumps(info) + "\n").encode())
    except BaseException:
        os.close(fd)
        raise
    return Staging(folder, info, fd)


def make_staging(target: str, kind: str, role: str = "staging", **extra: object) -> Staging:
    """A new private folder ``.NAME.tmp-*`` (``role="backup"``: ``.NAME.old-*``) beside ``target``, marked; an
    error names ``target``."""
    import tempfile

    parent, name = os.path.split(os.path.abspath(target))
    try:
        folder = tempfile.mkdtemp(prefix=f".{name}.{'old' if role == 'backup' else 'tmp'}-", dir=parent)
    except OSError as exc:
        raise OSError(exc.errno, f"{exc.strerror} (writing it needs a temporary folder in {parent})",
                      os.fspath(target)) from exc
    try:
        return mark(folder, kind, target, role, **extra)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _lock(fd: int, blocking: bool) -> bool:
    """flock ``fd`` exclusively; False when another open file holds it. Without flock (not POSIX) nothing can
    tell a live writer from a dead one: False, so that no leftover is ever touched."""
    try:
        import fcntl
    except ImportError:
        return blocking
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def abandoned(folder: str) -> Optional[Staging]:
    """``folder`` claimed (its lock now held by this process) when it is a real directory holding this tool's
    staging marker whose writer is gone; None otherwise (no marker, not ours, or its writer still running)."""
    import json

    path = os.path.join(folder, STAGING_MARKER)
    try:
        if os.path.islink(folder) or not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = json.loads(os.read(fd, 1 << 16).decode("utf-8")) if _lock(fd, blocking=False) else None
    except (OSError, ValueError):  # unreadable, or torn by a kill while it was written: not recognised
        info = None
    if isinstance(info, dict) and info.get("tool") == _TOOL and isinstance(info.get("target"), str):
        return Staging(folder, info, fd)
    os.close(fd)
    return None


def named_like(target: str) -> list[str]:
    """The paths beside ``target`` named by the staging pattern for it (sorted; whoever made them)."""
    import re

    parent, name = os.path.split(os.path.abspath(target))
    pattern = re.compile(rf"\.{re.escape(name)}\.(tmp|old)-[A-Za-z0-9_]{{1,32}}(\.old)?")
    try:
        return [os.path.join(parent, n) for n in sorted(os.listdir(parent)) if pattern.fullmatch(n)]
    except OSError:
        return []


def leftovers(target: str, kind: str, say: Optional[Callable[[str], None]] = None) -> list[Staging]:
    """The staging folders beside ``target`` that a killed run of ``kind`` left (claimed; release them):
    named by the staging pattern for ``target`` and holding the marker naming ``kind`` and ``target``.

    A folder of that name a run was killed in before it was marked (:func:`_clear_unmarked`) is deleted here
    (said through ``say``): it holds nothing, and no later run could recognise it otherwise. The caller holds
    :func:`target_lock`, so no live writer of ``target`` is between creating a folder and marking it."""
    found = []
    for path in named_like(target):
        claimed = abandoned(path)
        if claimed is None:
            if _clear_unmarked(path) and say is not None:
                say(f"removed {path}, an empty staging folder of a run that was killed as it started")
            continue
        if claimed.info.get("kind") == kind and claimed.info["target"] == _where(target):
            found.append(claimed)
        else:
            claimed.release()
    return found


def _clear_unmarked(folder: str) -> bool:
    """Delete ``folder`` when it is one :func:`make_staging` was killed in before it was marked, and say whether
    it did: a real directory of this user, still ``mkdtemp``'s 0700, holding nothing or only an empty marker
    that no live process holds locked (a kill between creating the marker and writing it). Anything else, the
    user's own look-alike included, is left; so is everything where there is no flock to tell a live writer by."""
    marker = os.path.join(folder, STAGING_MARKER)
    try:
        import fcntl  # noqa: F401  (without flock, runs are not serialised: a live writer could be in the gap)

        st = os.lstat(folder)
        if (not stat.S_ISDIR(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o700
                or st.st_uid != getattr(os, "getuid", lambda: -1)()):
            return False
        entries = os.listdir(folder)
        if entries == [STAGING_MARKER]:
            m = os.lstat(marker)
            if not stat.S_ISREG(m.st_mode) or m.st_size != 0 or not _free(marker):
                return False
            os.unlink(marker)
        elif entries:
            return False
        os.rmdir(folder)  # refused should anything have appeared in it meanwhile
    except (ImportError, OSError):
        return False
    return True


def _free(path: str) -> bool:
    """Whether no process holds ``path``'s lock (it is taken and dropped again)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        return _lock(fd, blocking=False)
    finally:
        os.close(fd)


def remove_marked(folder: str) -> None:
    """Delete a folder this tool marked, its marker last, so that a kill midway leaves it still recognisable."""
    for entry in os.scandir(folder):
        if entry.name == STAGING_MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    os.unlink(os.path.join(folder, STAGING_MARKER))
    os.rmdir(folder)


def discard(folder: str) -> None:
    """Delete a staging folder of this run, its marker last (a kill midway leaves it recognisable); nothing
    when it is gone (renamed into place)."""
    try:
        remove_marked(folder)
    except FileNotFoundError:
        pass
    except OSError:  # not deletable entry by entry (a folder made read-only): as much as can be
        shutil.rmtree(folder, ignore_errors=True)


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
