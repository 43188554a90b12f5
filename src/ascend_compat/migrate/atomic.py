"""``write_atomic``, the name ``port``, ``check -o`` and ``report`` have long used: :mod:`ascend_compat._atomic`
is the one implementation (kept importable here for code that imports the old name)."""

from __future__ import annotations

from typing import Optional

from ascend_compat._atomic import write_text

__all__ = ["write_atomic"]


def write_atomic(path: str, text: str, like: Optional[str] = None) -> None:
    """Write ``text`` to ``path`` atomically, durably (fsync), keeping the mode of ``path`` (or ``like``); a new
    file gets the umask's mode. A symlink's target is replaced; a directory or device is refused."""
    write_text(path, text, like=like)

