"""Write a rendered project atomically: everything goes to a temporary directory next to the target, which is then
renamed into place; an existing target is replaced only with ``force`` (and restored if the swap fails)."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Union

from ascend_compat.kernel_helper.render import render_project
from ascend_compat.kernel_helper.spec import OpSpec

__all__ = ["ScaffoldResult", "scaffold"]

_EXECUTABLE = frozenset({"build.sh"})


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


def scaffold(spec: OpSpec, output: Union[str, os.PathLike[str]], force: bool = False) -> ScaffoldResult:
    """Render ``spec`` into the directory ``output`` (created; FileExistsError if it exists, unless ``force``)."""
    files = render_project(spec)  # validates the spec before anything touches the disk
    target = Path(output).resolve()
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a directory")
    if target.exists() and not force:
        raise FileExistsError(f"{target} already exists; pass --force (force=True) to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)

    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        for rel, text in files.items():
            dest = staging.joinpath(*_safe_relative(rel).parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            dest.chmod(0o755 if rel in _EXECUTABLE else 0o644)
        staging.chmod(0o755)
        replaced = target.exists()
        if replaced:
            backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            backup.rmdir()
            os.replace(target, backup)
            try:
                os.replace(staging, target)
            except OSError:
                os.replace(backup, target)  # put the old project back
                raise
            shutil.rmtree(backup, ignore_errors=True)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ScaffoldResult(target, tuple(files), replaced)
