"""The list of files a generator wrote into a folder, with a sha256 each, so that a later run tells the user's
edits and additions from its own output (``report``'s adaptation folder, ``scaffold``'s projects).

A manifest is a small JSON file inside the folder: ``{"generator": ..., "files": {relative posix path: sha256}}``
(the shape both writers have always used, so folders written by earlier versions are read as they are). Reading
tolerates what a crash or a person can leave behind and says which it found (:class:`Manifest` ``state``); each
caller decides how careful to be with a folder whose list it cannot trust. Only the standard library is imported.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import BinaryIO, Optional

from ascend_compat import _atomic

__all__ = ["LEGACY_PREFIX", "Manifest", "dumps", "entries", "file_digest", "folder_digests", "is_edited", "read",
           "safe_relative", "sha256", "unchanged", "user_entries", "write"]

#: The one manifest form without a list: adaptation folders written before the list existed.
LEGACY_PREFIX = "written by ascend-compat "


@dataclass(frozen=True)
class Manifest:
    """What a manifest file held. ``state``: ``listed`` (``files`` is usable), ``missing`` (no file),
    ``unlisted`` (the older form without a list) or ``corrupt`` (unreadable, not JSON, a bad list, or a path
    outside the folder: a truncated write, a hand edit)."""

    state: str
    files: Mapping[str, str] = field(default_factory=dict)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: str) -> Optional[str]:
    """sha256 of the file at ``path``; None when it cannot be read (its mode changed: the user's doing)."""
    digest = hashlib.sha256()
    try:
        with _open_regular(path) as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading when it is a regular file (a symlink to one included); OSError otherwise.
    Opened without blocking: a FIFO put where a file was would otherwise wait for a writer for ever."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def safe_relative(rel: str) -> PurePosixPath:
    """``rel`` as a path inside a folder; ValueError for an absolute path, ``..`` or nothing."""
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"refusing to write {rel!r} outside the project directory")
    return path


def dumps(generator: str, files: Mapping[str, str]) -> str:
    """The manifest's text (for a writer that stages it with its other files)."""
    return json.dumps({"generator": generator, "files": dict(sorted(files.items()))}, indent=1) + "\n"


def write(path: str, generator: str, files: Mapping[str, str], *, fsync: bool = True) -> None:
    """Write the manifest atomically (a reader sees the old list or the new one, never half of one)."""
    _atomic.write_text(path, dumps(generator, files), fsync=fsync)


def read(path: str) -> Manifest:
    """The manifest at ``path``, whatever is there; never raises for its content (see :class:`Manifest`)."""
    try:
        with _open_regular(path) as fh:
            raw = fh.read(64 << 20)
    except FileNotFoundError:
        return Manifest("missing")
    except OSError:  # a directory, a FIFO, no permission: present but not readable as a list
        return Manifest("corrupt")
    if raw.startswith(LEGACY_PREFIX.encode()) and b"\n" not in raw.rstrip(b"\n"):
        return Manifest("unlisted")
    try:
        files = json.loads(raw.decode("utf-8"))["files"]
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            return Manifest("corrupt")
        return Manifest("listed", {str(safe_relative(rel)): digest for rel, digest in files.items()})
    except (ValueError, KeyError, TypeError, RecursionError):  # not JSON, no list, or a path outside the folder
        return Manifest("corrupt")


def entries(top: str, skip: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(relative posix path, path) of every entry under ``top`` that is not a directory, and of every empty
    directory, sorted; symlinks are entries, never followed. ``skip``: relative paths left out."""
    skipped = set(skip)
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        names = filenames + links
        if not dirnames and not filenames and dirpath != top:
            names = [""]
        for n in names:
            path = os.path.join(dirpath, n) if n else dirpath
            rel = os.path.relpath(path, top).replace(os.sep, "/")
            if rel not in skipped:
                found.append((rel, path))
    return sorted(found)


def folder_digests(top: str, skip: Iterable[str] = ()) -> dict[str, str]:
    """Every regular file under ``top`` (relative path -> sha256): what a generator just wrote there."""
    out = {}
    for rel, path in entries(top, skip):
        if os.path.isfile(path) and not os.path.islink(path):
            digest = file_digest(path)
            if digest is None:
                raise PermissionError(f"cannot read {path}, just written")
            out[rel] = digest
    return out


def unchanged(path: str, digest: Optional[str]) -> bool:
    """Whether ``path`` is a regular file (not a symlink) holding exactly what was generated."""
    return (digest is not None and not os.path.islink(path) and os.path.isfile(path)
            and file_digest(path) == digest)


def is_edited(path: str, digest: str) -> bool:
    """Whether the generated file at ``path`` is the user's now: edited, made unreadable, or replaced by a
    symlink or anything else. A file that is gone is not (it is regenerated)."""
    return os.path.lexists(path) and not unchanged(path, digest)


def user_entries(top: str, listed: Mapping[str, str], skip: Iterable[str] = ()) -> list[tuple[str, str]]:
    """The entries of :func:`entries` that are the user's: a file not ``listed`` (added), a listed file edited
    since (:func:`is_edited`), and whatever is not a regular file (a symlink, an empty folder, a FIFO)."""
    return [(rel, path) for rel, path in entries(top, skip)
            if rel not in listed or not unchanged(path, listed[rel])]
