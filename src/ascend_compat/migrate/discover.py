"""Which files a scan looks at: git-aware, skipping vendored trees, never looping on symlinks."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Iterator
from typing import Optional

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


def _own_output(folder: str) -> bool:
    return any(os.path.isfile(os.path.join(folder, m)) for m in OWN_OUTPUT_MARKERS)


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


def _git_files(root: str) -> Optional[list[str]]:
    """Files git tracks or would track under ``root`` (ignored files left out); None outside a work tree."""
    try:
        proc = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            capture_output=True, timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    names = sorted({n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n})
    if not names:
        # A directory git ignores as a whole (a site-packages inside a repo) was still named by the user.
        return None
    return names


def _walk(root: str) -> Iterator[str]:
    """All files under ``root``, following directory symlinks once each (a loop is cut at its second visit)."""
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
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


def discover(paths: Iterable[str], use_git: bool = True) -> Iterator[tuple[str, str]]:
    """Yield ``(path, language)`` for every analysable file under ``paths``, each once, in a stable order.

    A file named explicitly is always scanned; inside a directory, git-ignored and vendored files are not.
    """
    emitted: set[str] = set()
    for top in paths:
        if os.path.isdir(top):
            rels = _git_files(top) if use_git else None
            if rels is None:
                rels = list(_walk(top))
            else:  # git lists untracked files too: the tool's own output among them
                rels = _outside_own_output(top, rels)
            for rel in rels:
                if _vendored(rel):
                    continue
                path = os.path.normpath(os.path.join(top, rel))
                lang = language_of(path)
                if lang is None or path in emitted or os.path.isdir(path):
                    continue
                emitted.add(path)
                yield path, lang
        else:
            path = os.path.normpath(top)
            if path not in emitted:
                emitted.add(path)
                # A file given by name is scanned by its suffix, Python when it has none (a script).
                yield path, language_of(path) or "python"
