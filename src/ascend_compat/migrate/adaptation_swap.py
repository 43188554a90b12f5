"""Putting a staged adaptation folder in place, and clearing up after a report killed while it did.

The staging folder is marked as this tool's (:mod:`ascend_compat._staging`) and every step that leaves
something beside the folder leaves it marked or recognisable: a kill at any point leaves only what the next run
recognises (:func:`recover`) or the user's folder in place. A killed run's staging folder, and the previous
folder it moved aside, are deleted only when everything of the user's they hold (carried from the folder they
were to replace) is also in the folder now; otherwise they are left and named on stderr, each run, as they are
while the folder is gone (the user deleted it after the kill).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Optional

from ascend_compat import _manifest, _staging

MARKER = ".ascend-compat-adaptation"
KIND = "adaptation"  # the kind of its staging folders (see ascend_compat._staging)
SKIP = (MARKER, _staging.STAGING_MARKER)


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
        _staging.checkpoint("adaptation:aside")
        try:
            os.replace(staging, folder)
        except BaseException:
            os.replace(aside, folder)
            raise
    else:
        os.replace(staging, folder)
    _staging.checkpoint("adaptation:swapped")
    # The old folder is marked before the new one loses its staging marker: a kill between the two would leave
    # it aside with nothing to tell a later run what it is.
    marked = _mark_aside(aside, folder) if aside is not None else None
    try:
        os.unlink(os.path.join(folder, _staging.STAGING_MARKER))
        if aside is not None:
            _remove_aside(aside, marked)
    finally:
        if marked is not None:
            marked.release()


def _mark_aside(aside: str, folder: str) -> Optional[_staging.Staging]:
    """The old folder ``aside`` claimed for deletion: its marker from a killed run, else a new one; None when
    it cannot be marked (then it is deleted unmarked)."""
    claimed = _staging.abandoned(aside)
    if claimed is not None:
        return claimed
    try:
        return _staging.mark(aside, KIND, folder, "aside")
    except OSError:
        return None


def _remove_aside(aside: str, marked: Optional[_staging.Staging]) -> None:
    """Delete the old folder moved aside, its marker last, so that a kill midway leaves it recognisable."""
    try:
        if marked is None:
            raise OSError("not marked")
        _staging.remove_marked(aside)
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
    :mod:`ascend_compat._staging`), saying each step on stderr: the previous folder, moved aside, is put back when
    ``folder`` is missing (else both are left and the user told where); a staging folder, and a previous folder
    left aside (marked, its deletion cut short, or unmarked, the new folder deleted by the user since), are
    deleted unless they hold files of the user's that ``folder`` lacks; an empty staging folder a report was
    killed in before marking it is deleted."""
    inside = _staging.abandoned(folder)
    try:
        if inside is not None and inside.info.get("kind") == KIND and inside.info.get("role") == "staging":
            # Swapped into place, killed before its last steps: the folder is complete, the old one maybe aside.
            aside = os.path.join(os.path.dirname(folder), os.path.basename(str(inside.info.get("name"))) + ".old")
            if os.path.basename(aside).startswith(f".{os.path.basename(folder)}.tmp-") and old_folder(aside):
                marked = _mark_aside(aside, folder)
                try:
                    os.unlink(os.path.join(folder, _staging.STAGING_MARKER))
                    _remove_aside(aside, marked)
                finally:
                    if marked is not None:
                        marked.release()
                say(f"removed {aside}, the previous folder, left by a report killed as it finished (your files "
                    f"in it had been carried into {folder})")
            else:
                os.unlink(os.path.join(folder, _staging.STAGING_MARKER))
    finally:
        if inside is not None:
            inside.release()
    found = _staging.leftovers(folder, KIND, say)
    try:
        for left in found:
            _recover_one(folder, left)
    finally:
        for left in found:
            left.release()
    for aside in _unmarked_asides(folder):
        _settle(aside, folder, None)


def _unmarked_asides(folder: str) -> list[str]:
    """Previous folders a report moved aside and left unmarked: killed once the new folder was in place (the
    new one held the staging marker), the new folder deleted by the user since. Each is this tool's: named
    after a staging folder of ``folder`` with ``.old`` added and holding the adaptation marker. One whose staging
    folder is still there is that folder's to recover (:func:`_recover_one`)."""
    prefix = f".{os.path.basename(folder)}.tmp-"
    return [path for path in _staging.named_like(folder)
            if os.path.basename(path).startswith(prefix) and path.endswith(".old") and old_folder(path)
            and not os.path.lexists(os.path.join(path, _staging.STAGING_MARKER))
            and not os.path.lexists(path[:-len(".old")])]


def _recover_one(folder: str, left: _staging.Staging) -> None:
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
    elif role == "aside" or left.info.get("carries"):
        _settle(left.path, folder, left)
        return
    _staging.remove_marked(left.path)  # what it carried is in the folder put back
    say(f"removed {left.path}, the staging folder of a report that was killed (nothing of yours is only there)")


def _settle(path: str, folder: str, left: Optional[_staging.Staging]) -> None:
    """A killed run's folder that may hold the user's files (a staging folder they were carried into, or the
    previous folder, moved aside; ``left``: its claimed marker, None when it has none): left and named on
    stderr while something of the user's is there and not in ``folder``, else deleted, marker last."""
    what = "the staging folder" if left is not None and left.info.get("role") == "staging" else "the previous folder"
    if not os.path.isdir(folder):
        say(f"{path}, left by a report that was killed, may hold your earlier files ({folder} is gone): left as "
            "it is")
        return
    mine = only_here(path, folder)
    if mine:
        say(f"{path}, left by a report that was killed, may hold your earlier files: {', '.join(mine)} "
            f"{'is' if len(mine) == 1 else 'are'} there and not in {folder}; left as it is")
        return
    if left is not None:
        _staging.remove_marked(path)
    else:  # marked first, so that a kill midway leaves it recognisable
        marked = _mark_aside(path, folder)
        try:
            _remove_aside(path, marked)
        finally:
            if marked is not None:
                marked.release()
    say(f"removed {path}, {what} of a report that was killed (nothing of yours is only there)")
