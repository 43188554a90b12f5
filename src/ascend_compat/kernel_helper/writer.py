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
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Union

from ascend_compat import _atomic
from ascend_compat.kernel_helper.render import render_project
from ascend_compat.kernel_helper.spec import OpSpec

__all__ = ["MARKER", "ScaffoldResult", "scaffold"]

_EXECUTABLE = frozenset({"build.sh"})
#: The file that marks a directory as scaffold output; it lists the files the scaffold wrote there.
MARKER = ".ascend-compat-scaffold.json"


@dataclass(frozen=True)
class ScaffoldResult:
    """Where the project went and what it contains (relative posix paths, sorted)."""

    path: Path
    files: tuple[str, ...]
    replaced: bool


def _safe_relative(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"refusing to write {rel!r} outside the project directory")
    return path


def _previous_files(target: Path) -> dict[str, str]:
    """The files an earlier scaffold wrote into ``target`` (relative path -> sha256 of what it wrote);
    FileExistsError when ``target`` is neither empty nor scaffold output."""
    if not any(target.iterdir()):
        return {}
    refuse = (f"{target} is not empty and was not created by `ascend-compat scaffold` (no {MARKER}); "
              "--force replaces only scaffold output: choose another --output")
    try:
        files = json.loads((target / MARKER).read_text(encoding="utf-8"))["files"]
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise ValueError("malformed file list")
        return {str(_safe_relative(rel)): digest for rel, digest in files.items()}
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        raise FileExistsError(refuse) from None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _private_folder(parent: Path, prefix: str, target: Path) -> Path:
    """A new private folder in ``parent``; an error names ``target``, the folder the user asked for."""
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    except OSError as exc:
        raise OSError(exc.errno, f"{exc.strerror} (writing it needs a temporary folder in {parent})",
                      str(target)) from exc


def _stage(files: dict[str, str], parent: Path, name: str) -> Path:
    """The project written into a new private folder beside the target (removed again if writing fails)."""
    staging = _private_folder(parent, f".{name}.tmp-", parent / name)
    marker = {"generator": "ascend-compat scaffold",
              "files": {rel: _digest(text.encode("utf-8")) for rel, text in sorted(files.items())}}
    try:
        for rel, text in {**files, MARKER: json.dumps(marker, indent=2) + "\n"}.items():
            dest = staging.joinpath(*_safe_relative(rel).parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            # Plain writes: nothing reads the folder before the renames below, which are the atomic step.
            with open(dest, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)  # created with the umask's mode, as a new file should be
            if rel in _EXECUTABLE:
                dest.chmod(_atomic.new_file_mode(executable=True))
        staging.chmod(_atomic.new_file_mode(executable=True))  # mkdtemp made it 0700
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def _plan(target: Path, new: list[str], old: dict[str, str]) -> list[str]:
    """The paths to swap: the new files, the marker, and the old generated files no longer produced that are
    unchanged since (an edited one is the user's now and stays). Refuses a user's file in a new file's way."""
    root = os.path.realpath(target)
    obsolete = []
    for rel in sorted(set(old) - set(new) - {MARKER}):
        path = target.joinpath(*PurePosixPath(rel).parts)
        try:
            if path.is_file() and not path.is_symlink() and _digest(path.read_bytes()) == old[rel]:
                obsolete.append(rel)
        except OSError:
            continue
    edited = []
    for rel in [*obsolete, *new, MARKER]:
        path = target.joinpath(*PurePosixPath(rel).parts)
        if not os.path.realpath(path).startswith(root + os.sep):
            raise FileExistsError(f"{path} leads outside {target} (a symlinked directory): left as it is")
        if rel not in old and rel != MARKER and (path.exists() or path.is_symlink()):
            raise FileExistsError(f"{path} is not a file the scaffold created: left as it is; move it away first")
        if rel in old and rel in new and _edited(path, old[rel]):
            edited.append(rel)
    if edited:
        raise FileExistsError(f"{', '.join(edited)} in {target}: edited since the scaffold wrote it, so --force "
                              "leaves everything as it is; move the edited files away to regenerate them")
    return [*obsolete, *new, MARKER]


def _edited(path: Path, digest: str) -> bool:
    """Whether the generated file at ``path`` is no longer what the scaffold wrote (a symlink is the user's)."""
    try:
        return path.is_symlink() or (path.is_file() and _digest(path.read_bytes()) != digest)
    except OSError:
        return True


def _swap_in(staging: Path, target: Path, new: list[str], old: dict[str, str]) -> None:
    """Move the staged files into ``target`` one atomic rename each; the replaced and the obsolete generated files
    go to a backup that is restored on failure and deleted on success (it holds only scaffold-made files)."""
    plan = _plan(target, new, old)
    backup = _private_folder(target.parent, f".{target.name}.old-", target)
    moved: list[tuple[Path, Path]] = []  # (from, to), undone in reverse on failure
    created: list[Path] = []
    try:
        for rel in plan:
            dest = target.joinpath(*PurePosixPath(rel).parts)
            if dest.is_symlink() or dest.is_file():
                keep = backup.joinpath(*PurePosixPath(rel).parts)
                keep.parent.mkdir(parents=True, exist_ok=True)
                os.replace(dest, keep)
                moved.append((dest, keep))
            elif dest.exists():
                raise FileExistsError(f"{dest} is in the way of a generated file and is not one: left as it is")
            if rel in new or rel == MARKER:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging.joinpath(*PurePosixPath(rel).parts), dest)
                created.append(dest)
    except BaseException:
        for path in reversed(created):
            path.unlink(missing_ok=True)
        for dest, keep in reversed(moved):
            os.replace(keep, dest)
        raise
    finally:
        shutil.rmtree(backup, ignore_errors=True)  # empty after a rollback; only scaffold files otherwise


def scaffold(spec: OpSpec, output: Union[str, os.PathLike[str]], force: bool = False) -> ScaffoldResult:
    """Render ``spec`` into the directory ``output`` (created; FileExistsError if it exists, unless ``force``).

    With ``force`` an existing directory is replaced only when it is empty or earlier scaffold output; files
    the scaffold did not create are never deleted.
    """
    files = render_project(spec)  # validates the spec before anything touches the disk
    target = Path(output).resolve()
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a directory")
    if target.exists() and not force:
        raise FileExistsError(f"{target} already exists; pass --force (force=True) to replace it")
    old = _previous_files(target) if target.exists() else None
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _stage(files, target.parent, target.name)
    try:
        if old is None:
            os.replace(staging, target)
        else:
            _swap_in(staging, target, sorted(files), old)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ScaffoldResult(target, tuple(files), old is not None)
