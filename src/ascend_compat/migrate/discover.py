"""Which files a scan looks at: git-aware, skipping vendored trees, never looping on symlinks."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Optional

from ascend_compat._atomic import file_kind
from ascend_compat.migrate import deps
from ascend_compat.migrate.cxx import CXX_SUFFIXES

PYTHON_SUFFIXES = (".py", ".pyi")

#: Directory names never descended into below a scanned root (vendored code, environments, build output).
VENDORED = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", ".eggs", "node_modules",
    "site-packages", "dist-packages", "third_party", "third-party", "thirdparty", "vendor", "vendored", "_vendor",
    "externals", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build", "dist",
})


#: A folder holding one of these files is ascend-compat's own output: ``report``'s adaptation folder (its manifest,
#: ``adaptation.MARKER``) or a folder being staged for it. Below a scanned root it is left out: scanned again, its
#: ported copies counted as the user's code and the next ``report`` ported the folder into itself.
OWN_OUTPUT_MARKERS = (".ascend-compat-adaptation", ".ascend-compat-staging")

#: ``on_error(path, reason)``: a folder that could not be listed, or a non-regular file named explicitly.
ErrorFn = Callable[[str, str], None]

# git's warning for a folder it cannot list (LC_ALL=C), relative to the work tree's top.
_GIT_UNLISTED = re.compile(r"^warning: could not open directory '(.*)': (.*)$", re.MULTILINE)


def unlisted_reason(strerror: str) -> str:
    """The error text of a folder whose files could not be listed."""
    return f"cannot list this folder: {strerror}; none of its files were scanned"


# The list :func:`own_output_skipped` collects into while its block runs (None outside one). A context variable,
# not a parameter: discovery's callers yield the files it finds, and only ``scan.check`` (ScanResult's
# ``own_output_skipped``) wants the folders it left out.
_skipped: ContextVar[Optional[list[str]]] = ContextVar("ascend_compat_own_output_skipped", default=None)


@contextmanager
def own_output_skipped() -> Iterator[list[str]]:
    """The folders of ascend-compat's own output (:data:`OWN_OUTPUT_MARKERS`) that :func:`discover` leaves out
    while the block runs, each once, named as reached from the root given, in the order met: ``check`` names
    them, so that a user is not left wondering why a folder's files are not counted."""
    found: list[str] = []
    token = _skipped.set(found)
    try:
        yield found
    finally:
        _skipped.reset(token)


def _own_output(folder: str) -> bool:
    """Whether ``folder`` is ascend-compat's own output (then noted for :func:`own_output_skipped`)."""
    own = any(os.path.isfile(os.path.join(folder, m)) for m in OWN_OUTPUT_MARKERS)
    found = _skipped.get()
    if own and found is not None:
        folder = os.path.normpath(folder)
        if os.path.realpath(folder) not in {os.path.realpath(f) for f in found}:  # reached from two roots
            found.append(folder)
    return own


def language_of(path: str) -> Optional[str]:
    """``python``, ``cxx``, ``deps`` or None (not analysed) for a file name."""
    name = os.path.basename(path)
    if deps.is_manifest(path):
        return "deps"
    if name.endswith(PYTHON_SUFFIXES):
        return "python"
    if name.endswith(CXX_SUFFIXES):
        return "cxx"
    return None


def _vendored(rel: str) -> bool:
    parts = rel.replace(os.sep, "/").split("/")[:-1]
    return any(p in VENDORED or p.endswith(".egg-info") for p in parts)


def _git(root: str, *args: str) -> Optional[subprocess.CompletedProcess[bytes]]:
    env = {**os.environ, "LC_ALL": "C", "LANGUAGE": ""}  # untranslated warnings, which are parsed
    try:
        return subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=60, check=False, env=env)
    except (OSError, subprocess.SubprocessError):
        return None


def _git_files(root: str, on_error: Optional[ErrorFn] = None) -> Optional[list[str]]:
    """Files git tracks or would track under ``root`` (ignored files left out); None outside a work tree.

    A folder git could not list (its untracked files unseen) goes to ``on_error``."""
    proc = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
    if proc is None or proc.returncode != 0:
        return None
    names = sorted({n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n})
    if not names:
        # A directory git ignores as a whole (a site-packages inside a repo) was still named by the user.
        return None
    names = sorted(_with_submodules(root, names, on_error))
    unlisted = _GIT_UNLISTED.findall(proc.stderr.decode("utf-8", "surrogateescape"))
    if unlisted and on_error is not None:
        top = _git(root, "rev-parse", "--show-toplevel")
        base = top.stdout.decode("utf-8", "surrogateescape").strip() if top and top.returncode == 0 else root
        for folder, why in unlisted:  # git names the folder from the work tree's top
            path = os.path.relpath(os.path.join(base, folder), os.path.realpath(root))
            on_error(os.path.normpath(os.path.join(root, path)) + os.sep, unlisted_reason(why))
    return names


def _with_submodules(root: str, names: list[str], on_error: Optional[ErrorFn]) -> Iterator[str]:
    """``names`` with each folder git lists as one entry (a submodule, a nested repository) replaced by its files:
    ``ls-files`` cannot recurse into them with ``--others``, and their code is the user's too."""
    for name in names:
        folder = os.path.join(root, name)
        if not os.path.isdir(folder):
            yield name
            continue
        inner = _git_files(folder, on_error)
        for rel in inner if inner is not None else _walk(folder, on_error):
            yield os.path.join(name.rstrip("/"), rel)


def _walk(root: str, on_error: Optional[ErrorFn] = None) -> Iterator[str]:
    """All files under ``root``, following directory symlinks once each (a loop is cut at its second visit).

    A folder that cannot be listed goes to ``on_error`` (``os.walk`` alone would leave it out silently)."""
    def unlisted(exc: OSError) -> None:
        if on_error is not None:
            on_error(os.path.normpath(str(exc.filename or root)) + os.sep, unlisted_reason(exc.strerror or str(exc)))

    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if d not in VENDORED and not d.endswith(".egg-info")
                             and not _own_output(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            yield os.path.relpath(os.path.join(dirpath, name), root)


def _outside_own_output(top: str, rels: list[str]) -> list[str]:
    """``rels`` (paths relative to ``top``) without those inside a folder of ascend-compat's own output."""
    own: dict[str, bool] = {}

    def inside(folder: str) -> bool:
        if not folder:
            return False  # ``top`` itself: named by the user, so scanned
        if folder not in own:
            own[folder] = inside(os.path.dirname(folder)) or _own_output(os.path.join(top, folder))
        return own[folder]

    return [rel for rel in rels if not inside(os.path.dirname(rel))]


def discover(paths: Iterable[str], use_git: bool = True,
             on_error: Optional[ErrorFn] = None) -> Iterator[tuple[str, str]]:
    """Yield ``(path, language)`` for every analysable file under ``paths``, each once, in a stable order.

    A file named explicitly is always scanned; inside a directory, git-ignored and vendored files are not.
    ``on_error(path, reason)`` receives what leaves the scan incomplete: a folder that could not be listed
    (its path ends with a separator), and a FIFO, device or socket named explicitly (found inside a folder,
    such a file is yielded, and the reader skips it). Without ``on_error`` those are left out silently.
    """
    emitted: set[str] = set()  # _key()s: a folder named twice, or through a symlink, is scanned once
    real_dirs: dict[str, str] = {}  # each folder's realpath, resolved once (files share their folder)
    if on_error is not None:
        on_error = _once(on_error)
    for top in paths:
        if os.path.isdir(top):
            rels = _git_files(top, on_error) if use_git else None
            if rels is None:
                rels = list(_walk(top, on_error))
            else:  # git lists untracked files too: the tool's own output among them
                rels = _outside_own_output(top, rels)
            for rel in rels:
                if _vendored(rel):
                    continue
                path = os.path.normpath(os.path.join(top, rel))
                lang = language_of(path)
                if lang is None:
                    continue
                key = _key(path, real_dirs)
                if key in emitted or os.path.isdir(path):
                    continue
                emitted.add(key)
                yield path, lang
        else:
            path = os.path.normpath(top)
            key = _key(path, real_dirs)
            if key in emitted:
                continue
            emitted.add(key)
            special = _special(path)
            if special and on_error is not None:
                on_error(path, f"{special}, not a regular file: named explicitly, it cannot be scanned")
                continue
            # A file given by name is scanned by its suffix, Python when it has none (a script).
            yield path, language_of(path) or "python"


def _key(path: str, real_dirs: dict[str, str]) -> str:
    """``path`` with its folders' symlinks resolved, not its own: two links to one device stay two files.
    ``real_dirs``: the folders resolved so far in this discovery."""
    folder = os.path.dirname(path) or "."
    real = real_dirs.get(folder)
    if real is None:
        real = real_dirs[folder] = os.path.realpath(folder)
    return os.path.join(real, os.path.basename(path))


def _once(on_error: ErrorFn) -> ErrorFn:
    """``on_error`` called once per path (a folder named twice is one folder not listed)."""
    said: set[str] = set()

    def once(path: str, why: str) -> None:
        if os.path.realpath(path) not in said:
            said.add(os.path.realpath(path))
            on_error(path, why)

    return once


def _special(path: str) -> str:
    """What ``path`` is when it exists and is no regular file (its target, for a symlink), else ""."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return ""  # missing or unreadable: the reader says why
    return "" if stat.S_ISREG(mode) else file_kind(mode)
