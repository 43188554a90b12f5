"""Putting a staged adaptation folder in place, and clearing up after a report killed while it did.

The staging folder is marked as this tool's (:mod:`ascend_compat._atomic`'s folder staging) and every step that
leaves something beside the folder leaves it marked: a kill at any point leaves only what the next run
recognises (:func:`recover`) or the user's folder in place. A staging folder is deleted only when everything of
the user's it holds (carried from the folder it was to replace) is also in the folder now; otherwise it is left
and named on stderr, each run, as is a folder moved aside whose target has gone.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Optional

from ascend_compat import _atomic, _manifest

MARKER = ".ascend-compat-adaptation"
KIND = "adaptation"  # the kind of its staging folders (see _atomic's folder staging)
SKIP = (MARKER, _atomic.STAGING_MARKER)


def say(message: str) -> None:
    print(f"ascend-compat report: {message}", file=sys.stderr)


def old_folder(path: str) -> bool:
    """Whether ``path`` is a real folder holding this tool's adaptation marker."""
    return os.path.isdir(path) and not os.path.islink(path) and os.path.isfile(os.path.join(path, MARKER))


def swap_folder(staging: str, folder: str) -> None:
    """Rename ``staging`` to ``folder``. A directory is a tree, not one file, so ``_atomic`` cannot write it, and
    ``os.replace`` refuses a non-empty directory: the old folder is renamed aside first (put back should the
    second rename fail) and deleted only once the new one is in place, so it is never lost half-deleted. A kill
    between the renames leaves it aside, named after the staging folder, for :func:`recover` to put back."""
    aside = None
    if os.path.lexists(folder):
        aside = f"{staging}.old"
        os.replace(folder, aside)
        _atomic.checkpoint("adaptation:aside")
        try:
            os.replace(staging, folder)
        except BaseException:
            os.replace(aside, folder)
            raise
    else:
        os.replace(staging, folder)
    _atomic.checkpoint("adaptation:swapped")
    # The old folder is marked before the new one loses its staging marker: a kill between the two would leave
    # it aside with nothing to tell a later run what it is.
    marked = _mark_aside(aside, folder) if aside is not None else None
    try:
        os.unlink(os.path.join(folder, _atomic.STAGING_MARKER))
        if aside is not None:
            _remove_aside(aside, marked)
    finally:
        if marked is not None:
            marked.release()


def _mark_aside(aside: str, folder: str) -> Optional[_atomic.Staging]:
    """The old folder ``aside`` claimed for deletion: its marker from a killed run, else a new one; None when
    it cannot be marked (then it is deleted unmarked)."""
    claimed = _atomic.abandoned(aside)
    if claimed is not None:
        return claimed
    try:
        return _atomic.mark(aside, KIND, folder, "aside")
    except OSError:
        return None


def _remove_aside(aside: str, marked: Optional[_atomic.Staging]) -> None:
    """Delete the old folder moved aside, its marker last, so that a kill midway leaves it recognisable."""
    try:
        if marked is None:
            raise OSError("not marked")
        _atomic.remove_marked(aside)
    except OSError:
        shutil.rmtree(aside, ignore_errors=True)


def _same(path: str, other: str) -> bool:
    """Whether the entry ``other`` holds what ``path`` does (a link to the same file, a copy, the same symlink)."""
    if os.path.islink(path) or os.path.islink(other):
        return os.path.islink(path) and os.path.islink(other) and os.readlink(path) == os.readlink(other)
    if os.path.isdir(path):
        return os.path.isdir(other)
    try:
        if os.path.samefile(path, other):
            return True
    except OSError:
        return False
    digest = _manifest.file_digest(path)
    return digest is not None and _manifest.unchanged(other, digest)


def only_here(staging: str, folder: str) -> list[str]:
    """The user's entries a killed run had carried into ``staging`` that ``folder`` holds neither as they are nor
    as a version of the user's own (edited since: the newer one). The staging's list is written before anything
    is carried: without one, it holds generated files only."""
    listed = _manifest.read(os.path.join(staging, MARKER))
    if listed.state == "missing":
        return []
    ours = listed.files if listed.state == "listed" else {}
    now = _manifest.read(os.path.join(folder, MARKER))
    generated = now.files if now.state == "listed" else {}
    mine = []
    for rel, path in _manifest.user_entries(staging, ours, skip=SKIP):
        other = os.path.join(folder, *rel.split("/"))
        if _same(path, other):
            continue
        if os.path.lexists(other) and not _manifest.unchanged(other, generated.get(rel)):
            continue  # the folder's is the user's too, and newer
        mine.append(rel)
    return mine


def recover(folder: str) -> None:
    """Clear up what a report killed while writing ``folder`` left (only folders it marked, see
    :mod:`ascend_compat._atomic`), saying each step on stderr: the previous folder, moved aside, is put back when
    ``folder`` is missing (else both are left and the user told where); a staging folder is deleted unless it
    holds files of the user's that ``folder`` lacks; an old folder whose deletion was cut short is deleted."""
    inside = _atomic.abandoned(folder)
    try:
        if inside is not None and inside.info.get("kind") == KIND and inside.info.get("role") == "staging":
            # Swapped into place, killed before its last steps: the folder is complete, the old one maybe aside.
            aside = os.path.join(os.path.dirname(folder), os.path.basename(str(inside.info.get("name"))) + ".old")
            if os.path.basename(aside).startswith(f".{os.path.basename(folder)}.tmp-") and old_folder(aside):
                marked = _mark_aside(aside, folder)
                try:
                    os.unlink(os.path.join(folder, _atomic.STAGING_MARKER))
                    _remove_aside(aside, marked)
                finally:
                    if marked is not None:
                        marked.release()
                say(f"removed {aside}, the previous folder, left by a report killed as it finished (your files "
                    f"in it had been carried into {folder})")
            else:
                os.unlink(os.path.join(folder, _atomic.STAGING_MARKER))
    finally:
        if inside is not None:
            inside.release()
    found = _atomic.leftovers(folder, KIND)
    try:
        for left in found:
            _recover_one(folder, left)
    finally:
        for left in found:
            left.release()


def _recover_one(folder: str, left: _atomic.Staging) -> None:
    aside, role = f"{left.path}.old", left.info.get("role")
    if role not in ("staging", "aside"):
        return  # no role this module gives: not touched
    if role == "staging" and old_folder(aside):  # killed between the two renames
        if os.path.lexists(folder):
            say(f"a report was killed while it replaced {folder}: your earlier folder is {aside} ({folder} was "
                "made again since, so both are left as they are)")
            return
        os.replace(aside, folder)
        say(f"put back {folder}, which a report killed midway had moved to {aside}")
    elif not os.path.isdir(folder) and (role == "aside" or left.info.get("carries")):
        say(f"{left.path}, left by a report that was killed, may hold your earlier files ({folder} is gone): "
            "left as it is")
        return
    elif role == "staging" and left.info.get("carries"):
        mine = only_here(left.path, folder)
        if mine:
            say(f"{left.path}, left by a report that was killed, may hold your earlier files: {', '.join(mine)} "
                f"{'is' if len(mine) == 1 else 'are'} there and not in {folder}; left as it is")
            return
    _atomic.remove_marked(left.path)
    what = "the previous folder" if role == "aside" else "the staging folder"
    say(f"removed {left.path}, {what} of a report that was killed (nothing of yours is only there)")
