"""The package's one way to write a file atomically: a temporary file beside the target, then ``os.replace``.

A reader (or a crash) sees the old file or the new one, never half of either. The rules every writer shares:

* the temporary file lives in the target's directory (a rename is atomic only within one file system) and is
  removed on any failure, ``KeyboardInterrupt`` included. On Linux it has no name until just before the rename
  (``O_TMPFILE``), so a process killed while writing (SIGKILL, or SIGTERM, which runs no ``finally``) leaves
  nothing behind either;
* a new file gets the mode the user's umask gives (``0o666 & ~umask``: 0644 under the usual 022), not
  ``mkstemp``'s private 0600; a replaced file keeps its mode (or that of ``like``) and, where the process may
  give it (root, or a group it is in), its owner and group, as writing into it would;
* a file that is not writable for the process is refused with ``PermissionError``, as ``open(path, "w")``
  refuses it (a rename needs only the directory's permission, and would replace a file the user made
  read-only); with ``like``, the target is a copy being made and only the directory's permission counts;
* an ``OSError`` names ``path``, never the temporary file;
* a symlink stays a symlink: the file it points to is replaced. Only a regular file (or nothing) is replaced: a
  directory, FIFO, socket or device at the target is refused with :class:`NotRegularFileError` (``-o /dev/null``
  must not turn ``/dev/null`` into a file);
* missing parent directories are created;
* ``fsync=True`` (the default) flushes the data to disk before the rename, so a power loss cannot leave an empty
  file in place of the old one (XFS, or ext4 without ``auto_da_alloc``, can). It costs about a millisecond a file;
  callers pass ``fsync=False`` for caches and regenerable staging, whose torn or empty files are detected and
  rebuilt anyway.

A folder, a tree of files, is written by staging it beside its target instead: :mod:`ascend_compat._staging`.
Only the standard library is imported, so every module (the CLI's cold path included) can use it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import Optional, Union

__all__ = ["NotRegularFileError", "check_target", "file_kind", "new_file_mode", "umask", "write_bytes", "write_text",
           "write_with"]

PathLike = Union[str, os.PathLike[str]]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def file_kind(mode: int, other: str = "something else") -> str:
    """What a file of ``mode`` that is not regular is, for messages: ``a directory``, ``a FIFO``, ``a socket``..."""
    return next((name for test, name in _KINDS if test(mode)), other)


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


def _target(path: PathLike, writable: bool) -> str:
    """``path`` with a final symlink resolved; NotRegularFileError when something other than a file is there,
    PermissionError when ``writable`` and a file not writable for this process is there."""
    path = os.fspath(path)
    real = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    if not stat.S_ISREG(mode):
        kind = file_kind(mode)
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        link = (None, real) if real != path else ()
        raise NotRegularFileError(code, f"it is {kind}, not a regular file: not replacing it", path, *link)
    if writable and not os.access(real, os.W_OK):
        raise PermissionError(errno.EACCES, "Permission denied (the file is read-only for you: not replacing it)",
                              path)
    return real


def check_target(path: PathLike) -> None:
    """Raise now the error a write of ``path`` would meet for what is there or its permissions (a directory, a
    FIFO, a read-only file, a folder no file can be created in), so that a command refuses before a long run
    instead of losing its results after it. Races aside: the write itself checks again."""
    real = _target(path, writable=True)
    directory = os.path.dirname(os.path.abspath(real))
    while not os.path.lexists(directory) and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)  # the folder makedirs would create the rest in
    if not os.path.isdir(directory):
        raise NotADirectoryError(errno.ENOTDIR, f"Not a directory: {directory}", os.fspath(path))
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, f"Permission denied (an atomic write creates a temporary file in "
                              f"{directory})", os.fspath(path))


def _create_temporary(directory: str, link_from: Optional[str] = None) -> str:
    """A new name in ``directory`` no other writer holds: a new, empty, private (0600) file (``O_EXCL``), or a
    link to ``link_from`` (an anonymous file, given its name only now, just before the rename). Made without
    ``tempfile`` so that this module stays cheap to import on the CLI's and activation's cold paths."""
    for _ in range(100):
        tmp = os.path.join(directory, f".ascend-compat-{os.urandom(6).hex()}.tmp")
        try:
            if link_from is None:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
            else:
                _link(link_from, tmp)
        except FileExistsError:
            continue
        except OSError as exc:  # e.g. a directory you may not create files in, though the file may be writable
            raise OSError(exc.errno, f"{exc.strerror} (an atomic write creates a temporary file in {directory})") \
                from exc
        return tmp
    raise FileExistsError(f"cannot create a temporary file in {directory}: every name tried exists")


def _link(proc_path: str, name: str) -> None:
    """``linkat(..., AT_SYMLINK_FOLLOW)``: the anonymous file behind ``/proc/self/fd/N`` gets ``name``. (Python
    calls plain ``link()``, which fails with EXDEV on that path, unless a directory fd is given.)"""
    dfd = os.open(os.path.dirname(name), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.link(proc_path, os.path.basename(name), dst_dir_fd=dfd, follow_symlinks=True)
    finally:
        os.close(dfd)


def write_with(path: PathLike, fill: Callable[[str], None], *, like: Optional[PathLike] = None,
               fsync: bool = True) -> str:
    """Let ``fill(tmp)`` write the file at ``tmp``, then put it in ``path``'s place with one rename. Returns the
    path written (a symlink's target). ``tmp`` names no format (name it explicitly) and, on Linux, is a
    ``/proc/self/fd`` path: open it in this process, not in a child. See the module docstring for modes,
    owners, permissions, symlinks and ``fsync``."""
    real = _target(path, writable=like is None)
    directory = os.path.dirname(os.path.abspath(real))
    fd: Optional[int] = None
    tmp = named = None  # tmp: what fill writes; named: a directory entry of ours, removed unless renamed
    try:
        os.makedirs(directory, exist_ok=True)
        fd = _anonymous(directory)
        if fd is not None:
            tmp = f"/proc/self/fd/{fd}"
            _fill(tmp, fill, fsync, real, like)
            try:
                named = _create_temporary(directory, link_from=tmp)
            except OSError:  # a kernel or sandbox that cannot name it: a named temporary file after all
                named = None
        if named is None:
            tmp = named = _create_temporary(directory)
            _fill(tmp, fill, fsync, real, like)
        os.replace(named, real)
        named = None
    except OSError as exc:
        # The temporary file is an implementation detail: say which file could not be written.
        if type(exc).__module__ == "builtins" and exc.errno is not None and exc.filename in (None, tmp, named):
            raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from exc
        raise
    finally:
        if fd is not None:
            os.close(fd)
        if named is not None:
            try:
                os.unlink(named)
            except OSError:  # gone already, or undeletable: the original error is the one to report
                pass
    return real


def _anonymous(directory: str) -> Optional[int]:
    """A file in ``directory`` without a name (Linux's ``O_TMPFILE``), written through ``/proc/self/fd``: a
    process killed while it is filled (SIGKILL, or SIGTERM, which runs no ``finally``) leaves nothing behind.
    None where the platform or the file system (NFS, some FUSE) has none: a named temporary file then."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return None


def _fill(tmp: str, fill: Callable[[str], None], fsync: bool, real: str, like: Optional[PathLike]) -> None:
    """Write the temporary file, flush it (fill may have written through any handle: the file itself is
    flushed) and give it its mode and owner."""
    fill(tmp)
    if fsync:
        fd = os.open(tmp, os.O_RDWR)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    _copy_metadata(tmp, real, like)


def _copy_metadata(tmp: str, real: str, like: Optional[PathLike]) -> None:
    """Give ``tmp`` the owner and group of the file it replaces, as far as this process may, and the mode of
    ``like`` (else of the file it replaces, else the umask's)."""
    try:
        old: Optional[os.stat_result] = os.stat(real)
    except FileNotFoundError:
        old = None
    if old is not None:
        _give_owner(tmp, old)
    model = old
    if like is not None:
        try:
            model = os.stat(like)
        except FileNotFoundError:
            pass
    # Without the set-id bits: a write into the file clears them.
    os.chmod(tmp, stat.S_IMODE(model.st_mode) & 0o1777 if model is not None else new_file_mode())


def _give_owner(tmp: str, old: os.stat_result) -> None:
    """Owner and group of ``old`` for ``tmp``: root may give both, an ordinary user a group it is in."""
    mine = os.stat(tmp)
    if not hasattr(os, "chown") or (mine.st_uid, mine.st_gid) == (old.st_uid, old.st_gid):
        return
    try:
        os.chown(tmp, old.st_uid, old.st_gid)
    except PermissionError:
        if mine.st_gid != old.st_gid:
            try:
                os.chown(tmp, -1, old.st_gid)
            except PermissionError:  # not a member: the group is this process's, as for any file it creates
                pass


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
