"""Does any installed distribution declare a backend entry point? A cheap, cached answer for detection.

The exact answer (``importlib.metadata.entry_points()``) reads the metadata of every installed distribution, about
4 ms with ~150 of them, and almost always finds nothing. Detection asks this instead: for each ``sys.path``
directory, whether one of its ``*.dist-info`` / ``*.egg-info`` folders has an ``entry_points.txt`` that mentions
the group at all (a superset of what the exact scan finds). The answer is cached per directory, keyed by the
directory's modification time, in ``$ASCEND_COMPAT_CACHE_DIR`` (or ``$XDG_CACHE_HOME/ascend_compat``, or
``~/.cache/ascend_compat``), so a fresh process pays a few ``stat`` calls. Installing, upgrading or removing a
distribution adds or removes a folder there, which changes the directory's time; a directory changed in the last
few seconds is never cached (its time may not yet tell a later change), and a small folder with no distribution in
it that changed in the last hour (the script's own, most often) is listed on each run instead
(``backends._small_folder_without_distributions``).
Only when some directory may declare the
group does the caller run the exact scan. Anything this module cannot judge cheaply (a zip or egg on
``sys.path``, a custom finder that lists distributions) answers "maybe", which also leads to the exact scan.

Not noticed: an ``entry_points.txt`` edited in place inside an existing ``*.dist-info`` folder (installers never do
that) until its directory changes; ``all_backends()`` (``ascend-compat info``) always runs the exact scan.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from typing import Any

# The fast path (every sys.path directory a cache hit) and the helpers it needs live in the package's __init__
# (detection's own module), so that activation imports this module only when a directory must be scanned.
from ascend_compat.backends import _EP_CACHE_VERSION as _VERSION
from ascend_compat.backends import _METADATA_SUFFIXES, _cached_answer, _other_distribution_finders, _path_entries
from ascend_compat.backends import _entry_point_cache_file as cache_file
from ascend_compat.backends import _read_entry_point_cache as _read

__all__ = ["cache_file", "group_may_be_declared", "scan"]

_MAX_DIRS = 64
#: A directory modified less than this long ago is scanned but not cached (file times are coarse).
_RACY_NS = 3_000_000_000


def _write(path: str, dirs: dict[str, Any]) -> None:
    import json

    from ascend_compat import _write_cache

    # Only directories that still exist (test runs and virtual environments come and go: every process reads
    # this file), and at most the _MAX_DIRS most recently added.
    dirs = dict([(path, hit) for path, hit in dirs.items() if os.path.isdir(path)][-_MAX_DIRS:])
    _write_cache(path, json.dumps({"version": _VERSION, "dirs": dirs}).encode())


def _dir_declares(path: str, needle: bytes) -> bool:
    """Whether a distribution folder directly under ``path`` has an entry_points.txt mentioning ``needle``."""
    try:
        entries = os.scandir(path)
    except OSError:
        return False
    with entries:
        for entry in entries:
            if not entry.name.lower().endswith(_METADATA_SUFFIXES):
                continue
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), "rb") as f:
                    if needle in f.read():
                        return True
            except OSError:  # no entry points, or an egg-info file
                continue
    return False


def group_may_be_declared(group: str) -> bool:
    """False only when no distribution visible on ``sys.path`` can declare an entry point in ``group``."""
    if _other_distribution_finders():
        return True
    where = cache_file()
    return scan(group, where, _read(where), _path_entries())


def scan(group: str, where: str, cached: dict[str, Any], entries: Iterable[tuple[str, os.stat_result]]) -> bool:
    """:func:`group_may_be_declared` once the finders are checked and the cache file ``where`` is read
    (``cached``), over the ``sys.path`` ``entries`` not yet answered (``backends._path_entries``): scans the
    directories the cache cannot answer for and records their answers."""
    changed = False
    needle = group.encode()
    now = time.time_ns()
    try:
        for path, st in entries:
            if not stat.S_ISDIR(st.st_mode) or path.endswith(".egg"):
                return True  # a zip or an egg: let the exact scan read it
            found = _cached_answer(cached, path, st)
            if found is None:
                found = _dir_declares(path, needle)
                if now - st.st_mtime_ns > _RACY_NS and os.stat(path).st_mtime_ns == st.st_mtime_ns:
                    cached.pop(path, None)
                    cached[path] = [st.st_mtime_ns, found]
                    changed = True
            if found:
                return True
        return False
    finally:
        if changed:
            _write(where, cached)
