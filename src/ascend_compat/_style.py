"""One palette for every text report (whether to colour at all is ``cli._common.use_color``: a terminal, no
NO_COLOR). Styles are named by what they mean, so a status reads the same in every command."""

from __future__ import annotations

RESET = "\x1b[0m"
_GOOD, _WARN, _BAD, _DIM, _BOLD, _NOTE = "\x1b[32m", "\x1b[33m", "\x1b[1;31m", "\x1b[2m", "\x1b[1m", "\x1b[36m"
STYLES = {
    # good
    "ok": _GOOD, "pass": _GOOD, "native": _GOOD,
    # needs a look
    "warn": _WARN, "warning": _WARN, "skipped": _WARN, "dtype_unsupported": _WARN, "unknown_code": "\x1b[1;33m",
    # wrong
    "error": _BAD, "fail": _BAD, "falls_back": _BAD,
    # context
    "note": _NOTE, "skip": _DIM, "dim": _DIM, "unknown": _DIM, "bold": _BOLD, "head": _BOLD, "path": _BOLD,
}  # fmt: skip


def paint(text: str, style: str, color: bool = True) -> str:
    """``text`` in the colour of ``style`` (a key of :data:`STYLES`) when ``color``, else unchanged."""
    return f"{STYLES[style]}{text}{RESET}" if color else text
