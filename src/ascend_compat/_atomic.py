"""The package's one way to write a file atomically: a temporary file beside the target, then ``os.replace``.

A reader (or a crash) sees the old file or the new one, never half of either. The rules every writer shares:

* the temporary file lives in the target's directory (a rename is atomic only within one file system) and is
  removed on any failure, ``KeyboardInterrupt`` included;
* a new file gets the mode the user's umask gives (``0o666 & ~umask``: 0644 under the usual 022), not
  ``mkstemp``'s private 0600; a replaced file keeps its mode (or that of ``like``);
* a symlink stays a symlink: the file it points to is replaced. Only a regular file (or nothing) is replaced: a
  directory, FIFO, socket or device at the target is refused with :class:`NotRegularFileError` (``-o /dev/null``
  must not turn ``/dev/null`` into a file);
* missing parent directories are created;
* ``fsync=True`` (the default) flushes the data to disk before the rename, so a power loss cannot leave an empty
  file in place of the old one (XFS, or ext4 without ``auto_da_alloc``, can). It costs about a millisecond a file;
  callers pass ``fsync=False`` for caches and regenerable staging, whose torn or empty files are detected and
  rebuilt anyway.

Only the standard library is imported, so every module (the CLI's cold path included) can use it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import Optional, Union

__all__ = ["NotRegularFileError", "new_file_mode", "umask", "write_bytes", "write_text", "write_with"]

PathLike = Union[str, os.PathLike[str]]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class NotRegularFileError(OSError):
    """The target exists and is not a regular file (nor a symlink to one), so it is not replaced."""


def umask() -> int:
    """The process's umask, read without changing it where the platform allows."""
    try:  # Linux shows it; setting it, even briefly, races with other threads creating files
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere it can only be read by setting it: set it straight back
    os.umask(mask)
    return mask


def new_file_mode(executable: bool = False) -> int:
    """The mode ``open()`` would give a new file (``executable``: as a new directory or script gets)."""
    return (0o777 if executable else 0o666) & ~umask()


def _target(path: PathLike) -> str:
    """``path`` with a final symlink resolved; NotRegularFileError when something other than a file is there."""
    path = os.fspath(path)
    real = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "something else")
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        link = (None, real) if real != path else ()
        raise NotRegularFileError(code, f"it is {kind}, not a regular file: not replacing it", path, *link)
    return real


def _create_temporary(directory: str) -> str:
    """A new, empty, private (0600) file in ``directory`` with a name no other writer holds (``O_EXCL``), made
    without ``tempfile`` so that this module stays cheap to import on the CLI's and activation's cold paths."""
    for _ in range(100):
        tmp = os.path.join(directory, f".ascend-compat-{os.urandom(6).hex()}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"cannot create a temporary file in {directory}: every name tried exists")


def write_with(path: PathLike, fill: Callable[[str], None], *, like: Optional[PathLike] = None,
               fsync: bool = True) -> str:
    """Let ``fill(tmp)`` write a temporary file beside ``path`` (writing exactly that path: name any format
    explicitly, the name ends in ``.tmp``), then rename it over ``path``. Returns the path written (a symlink's
    target). See the module docstring for modes, symlinks and ``fsync``."""
    real = _target(path)
    directory = os.path.dirname(os.path.abspath(real))
    os.makedirs(directory, exist_ok=True)
    tmp = _create_temporary(directory)
    done = False
    try:
        fill(tmp)
        if fsync:
            fd = os.open(tmp, os.O_RDWR)  # fill() may have written through any handle: flush the file itself
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        source = os.fspath(like) if like is not None and os.path.exists(like) else real
        try:
            mode = stat.S_IMODE(os.stat(source).st_mode) & 0o1777  # set-id bits: a write clears them
        except FileNotFoundError:
            mode = new_file_mode()
        os.chmod(tmp, mode)
        os.replace(tmp, real)
        done = True
    finally:
        if not done:
            try:
                os.unlink(tmp)
            except OSError:  # gone already, or undeletable: the original error is the one to report
                pass
    return real


def write_bytes(path: PathLike, data: bytes, *, like: Optional[PathLike] = None, fsync: bool = True) -> str:
    """Replace ``path`` with ``data`` atomically; returns the path written. See :func:`write_with`."""

    def fill(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(data)

    return write_with(path, fill, like=like, fsync=fsync)


def write_text(path: PathLike, text: str, *, encoding: str = "utf-8", like: Optional[PathLike] = None,
               fsync: bool = True) -> str:
    """Replace ``path`` with ``text`` (written as is: no newline translation) atomically; returns the path
    written. The text is encoded first, so an unencodable one leaves the disk untouched."""
    return write_bytes(path, text.encode(encoding), like=like, fsync=fsync)
