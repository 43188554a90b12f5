"""Write a rendered project without ever losing anything the scaffold did not create.

A new project is written to a temporary directory next to the target and renamed into place. An existing target is
replaced only with ``force``, and only when it is empty or a previous scaffold output (it holds the marker file
:data:`MARKER`, which lists the files the scaffold wrote, with a sha256 each): each generated file is then swapped
in with an atomic rename, old generated files that are no longer produced are removed, and every other file stays.
A generated file edited since (a kernel body filled in) is the user's: ``force`` refuses to replace it, changing
nothing, until it is moved away. Should any step fail, the old files are put back. This is not
:mod:`ascend_compat._atomic`'s one-file shape because the change is a set of files: they are staged together,
swapped in one rename each and rolled back together from a backup. Files and folders get the modes the user's
umask gives; an error names the target, never a temporary folder.

The staging folder and the backup are marked as this tool's (:mod:`ascend_compat._staging`): a
run killed midway is cleared up by the next one (:func:`_recover`), which says on stderr what it did. The file
list and the "edited since?" test are :mod:`ascend_compat._manifest`'s.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional, Union

from ascend_compat import _atomic, _manifest, _staging
from ascend_compat.kernel_helper.render import render_project
from ascend_compat.kernel_helper.spec import OpSpec

__all__ = ["MARKER", "ScaffoldResult", "scaffold"]

_EXECUTABLE = frozenset({"build.sh"})
#: The file that marks a directory as scaffold output; it lists the files the scaffold wrote there.
MARKER = ".ascend-compat-scaffold.json"
_KIND = "scaffold"  # the kind of its staging folders (see ascend_compat._staging)


@dataclass(frozen=True)
class ScaffoldResult:
    """Where the project went and what it contains (relative posix paths, sorted)."""

    path: Path
    files: tuple[str, ...]
    replaced: bool


_safe_relative = _manifest.safe_relative


def _say(message: str) -> None:
    print(f"ascend-compat scaffold: {message}", file=sys.stderr)


def _previous_files(target: Path) -> dict[str, str]:
    """The files an earlier scaffold wrote into ``target`` (relative path -> sha256 of what it wrote);
    FileExistsError when ``target`` is neither empty nor scaffold output."""
    if not any(target.iterdir()):
        return {}
    manifest = _manifest.read(str(target / MARKER))
    if manifest.state == "listed":
        return dict(manifest.files)
    why = f"no {MARKER}" if manifest.state == "missing" else f"its {MARKER} is damaged"
    raise FileExistsError(f"{target} is not empty and was not created by `ascend-compat scaffold` ({why}); "
                          "--force replaces only scaffold output: choose another --output")


def _stage(files: dict[str, str], target: Path) -> _staging.Staging:
    """The project written into a new marked folder beside the target (removed again if writing fails)."""
    staging = _staging.make_staging(str(target), _KIND)
    marker = _manifest.dumps("ascend-compat scaffold", {rel: _manifest.sha256(text.encode("utf-8"))
                                                       for rel, text in files.items()})
    try:
        for rel, text in {MARKER: marker, **files}.items():  # the list first: see _strays
            dest = Path(staging.path).joinpath(*_safe_relative(rel).parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            # Plain writes: nothing reads the folder before the renames below, which are the atomic step.
            with open(dest, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)  # created with the umask's mode, as a new file should be
            if rel in _EXECUTABLE:
                dest.chmod(_atomic.new_file_mode(executable=True))
        os.chmod(staging.path, _atomic.new_file_mode(executable=True))  # mkdtemp made it 0700
    except BaseException:
        _discard(staging)
        raise
    return staging


def _plan(target: Path, new: list[str], old: dict[str, str]) -> list[str]:
    """The paths to swap: the new files, the marker, and the old generated files no longer produced that are
    unchanged since (an edited one is the user's now and stays). Refuses a user's file in a new file's way."""
    root = os.path.realpath(target)
    obsolete = [rel for rel in sorted(set(old) - set(new) - {MARKER})
                if _manifest.unchanged(str(target.joinpath(*PurePosixPath(rel).parts)), old[rel])]
    edited = []
    for rel in [*obsolete, *new, MARKER]:
        path = target.joinpath(*PurePosixPath(rel).parts)
        if not os.path.realpath(path).startswith(root + os.sep):
            raise FileExistsError(f"{path} leads outside {target} (a symlinked directory): left as it is")
        if rel not in old and rel != MARKER and (path.exists() or path.is_symlink()):
            raise FileExistsError(f"{path} is not a file the scaffold created: left as it is; move it away first")
        if rel in old and rel in new and _manifest.is_edited(str(path), old[rel]):
            edited.append(rel)
    if edited:
        raise FileExistsError(f"{', '.join(edited)} in {target}: edited since the scaffold wrote it, so --force "
                              "leaves everything as it is; move the edited files away to regenerate them")
    return [*obsolete, *new, MARKER]


def _swap_in(staging: Path, target: Path, new: list[str], old: dict[str, str]) -> None:
    """Move the staged files into ``target`` one atomic rename each; the replaced and the obsolete generated files
    go to a backup that is restored on failure and deleted on success (it holds only scaffold-made files). The
    manifest moves last: a run killed midway leaves the new one in the staging folder (see :func:`_recover`)."""
    plan = _plan(target, new, old)
    backup = _staging.make_staging(str(target), _KIND, role="backup", staging=staging.name)
    moved: list[tuple[Path, Path]] = []  # (from, to), undone in reverse on failure
    created: list[Path] = []
    try:
        for rel in plan:
            dest = target.joinpath(*PurePosixPath(rel).parts)
            if dest.is_symlink() or dest.is_file():
                keep = Path(backup.path).joinpath(*PurePosixPath(rel).parts)
                keep.parent.mkdir(parents=True, exist_ok=True)
                os.replace(dest, keep)
                moved.append((dest, keep))
            elif dest.exists():
                raise FileExistsError(f"{dest} is in the way of a generated file and is not one: left as it is")
            if rel in new or rel == MARKER:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging.joinpath(*PurePosixPath(rel).parts), dest)
                created.append(dest)
            _staging.checkpoint(f"scaffold:swapped {rel}")
    except BaseException:
        for path in reversed(created):
            path.unlink(missing_ok=True)
        for dest, keep in reversed(moved):
            os.replace(keep, dest)
        raise
    finally:
        _discard(backup)  # empty after a rollback; only scaffold files otherwise


def _discard(folder: _staging.Staging) -> None:
    """Delete a folder of this run, its marker last (a kill midway leaves it recognisable), and release it."""
    try:
        _staging.discard(folder.path)
    finally:
        folder.release()


def _recover(target: Path) -> None:
    """Clear up after a scaffold of ``target`` that was killed (only folders it marked, see
    :mod:`ascend_compat._staging`): a stale staging marker in ``target`` is removed, a swap left midway is rolled
    back (the earlier files put back where nothing has changed since, else left in their backup and said
    where), and staging folders, which hold only generated files, are deleted (one holding a file the user saved
    in it since is left, and named). Each step is said on stderr."""
    inside = _staging.abandoned(str(target))
    if inside is not None:
        try:
            if inside.info.get("kind") == _KIND and inside.info.get("role") == "staging":
                os.unlink(target / _staging.STAGING_MARKER)  # renamed into place, killed before this last step
        finally:
            inside.release()
    found = _staging.leftovers(str(target), _KIND, _say)
    try:
        stagings = {os.path.basename(s.path): s for s in found if s.info.get("role") == "staging"}
        for backup in (s for s in found if s.info.get("role") == "backup"):
            _roll_back(target, backup, stagings.pop(str(backup.info.get("staging")), None))
        for staging in stagings.values():
            if _discard_leftover(staging):
                _say(f"removed {staging.path}, the staging folder of a scaffold that was killed (generated files "
                     "only)")
    finally:
        for s in found:
            s.release()


def _roll_back(target: Path, backup: _staging.Staging, staging: Optional[_staging.Staging]) -> None:
    """Undo a swap into ``target`` killed midway (see :func:`_recover`)."""
    new = _manifest.read(os.path.join(staging.path, MARKER)) if staging is not None else None
    if not target.is_dir():  # deleted since: putting back the generated files it held would make a broken project
        for s in (backup, staging):
            if s is not None:
                _discard_leftover(s)
        _say(f"removed {backup.path}, left by a scaffold --force that was killed ({target} is gone since: the "
             "generated files it held are not put back)")
        return
    if staging is None or new is None or new.state != "listed":
        # The manifest had moved in, the last step: the backup holds only the replaced generated files.
        for s in (backup, staging):
            if s is not None:
                _discard_leftover(s)
        _say(f"removed {backup.path}, left by a scaffold --force that was killed after its last step")
        return
    saved = _manifest.entries(backup.path, skip=[_staging.STAGING_MARKER])
    differ = []
    for rel, path in saved:
        dest = os.path.join(target, *_safe_relative(rel).parts)
        if os.path.isdir(path) and not os.path.islink(path):
            continue  # an empty folder of the backup's own
        if os.path.lexists(dest) and not _manifest.unchanged(dest, new.files.get(rel)):
            differ.append(rel)  # not what the killed run moved in: changed since, and so the user's
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        os.replace(path, dest)
    if differ:
        _say(f"a scaffold --force of {target} was killed midway; the earlier versions of {', '.join(differ)} are "
             f"in {backup.path}; the files now in {target} changed after that run, so neither copy was touched: "
             "compare them and keep the one you want")
        return
    old = _manifest.read(os.path.join(target, MARKER))  # the earlier manifest, back in place
    moved_in = {rel for rel, _ in saved}
    for rel, digest in new.files.items():  # a path the earlier project lacked: the killed run moved the file in
        dest = os.path.join(target, *_safe_relative(rel).parts)
        if old.state == "listed" and rel not in old.files and rel not in moved_in and _manifest.unchanged(dest, digest):
            os.unlink(dest)
    _discard_leftover(backup)
    _discard_leftover(staging)
    _say(f"a scaffold --force of {target} was killed midway: its earlier files are back in place")


def _strays(folder: _staging.Staging) -> list[str]:
    """What a killed scaffold's staging or backup folder holds that the scaffold did not put there (a file the
    user saved in it since; not a folder the swap emptied). A staging folder's list is its first file; a
    backup's is the earlier manifest, when it was moved there (else the backup is not checked: it holds files
    the swap verified as generated)."""
    listed = _manifest.read(os.path.join(folder.path, MARKER))
    if listed.state != "listed" and folder.info.get("role") == "backup":
        return []
    files = listed.files if listed.state == "listed" else {}
    # Paths not listed only: a listed file that differs may be one a kill cut short while it was written.
    return [rel for rel, path in _manifest.entries(folder.path, skip=[_staging.STAGING_MARKER, MARKER])
            if rel not in files and (os.path.islink(path) or not os.path.isdir(path))]  # empty: the swap emptied it


def _discard_leftover(folder: _staging.Staging) -> bool:
    """Delete a killed run's folder unless it holds something of the user's (then say where); whether deleted."""
    strays = _strays(folder)
    if strays:
        _say(f"{folder.path}, left by a scaffold that was killed, holds {', '.join(strays)}, not written by it: "
             "left as it is")
        return False
    _staging.remove_marked(folder.path)
    return True


def scaffold(spec: OpSpec, output: Union[str, os.PathLike[str]], force: bool = False) -> ScaffoldResult:
    """Render ``spec`` into the directory ``output`` (created; FileExistsError if it exists, unless ``force``).

    With ``force`` an existing directory is replaced only when it is empty or earlier scaffold output; files
    the scaffold did not create are never deleted. What a killed earlier run left beside it is cleared up first.
    """
    files = render_project(spec)  # validates the spec before anything touches the disk
    target = Path(output).resolve()
    with _staging.target_lock(str(target), _say):  # one run at a time from recovery to the last rename
        return _write(files, target, force)


def _write(files: dict[str, str], target: Path, force: bool) -> ScaffoldResult:
    _recover(target)
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a directory")
    if target.exists() and not force:
        raise FileExistsError(f"{target} already exists; pass --force (force=True) to replace it")
    old = _previous_files(target) if target.exists() else None
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _stage(files, target)
    try:
        if old is None:
            os.replace(staging.path, target)
            _staging.checkpoint("scaffold:renamed")
            os.unlink(target / _staging.STAGING_MARKER)
        else:
            _swap_in(Path(staging.path), target, sorted(files), old)
    finally:
        _discard(staging)
    return ScaffoldResult(target, tuple(files), old is not None)
