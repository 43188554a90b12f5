"""Small helpers the reporting commands share: colour and progress conventions."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO

if TYPE_CHECKING:
    import argparse

    #: What each command's ``add_parser(sub)`` receives: the ``add_subparsers()`` of the main parser.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def use_color(stream: TextIO) -> bool:
    """ANSI colour only on a terminal, and never when NO_COLOR is set to a non-empty value (https://no-color.org:
    an empty NO_COLOR is as if unset)."""
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def progress_bar(
    enabled: bool, stream: Optional[TextIO] = None, label: str = "scanning", unit: str = "files"
) -> Optional[Callable[[int, int], None]]:
    """A one-line progress bar on ``stream`` (default: the current ``sys.stderr``, a terminal), or None."""
    # The default is looked up per call: bound at import, it would keep a stream that was replaced since.
    stream = sys.stderr if stream is None else stream
    if not enabled or not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    state = {"last": -1}

    def update(done: int, total: int) -> None:
        pct = done * 100 // max(total, 1)
        if pct == state["last"] and done != total:
            return
        state["last"] = pct
        width = 30
        fill = width * done // max(total, 1)
        stream.write(f"\r{label} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} {unit}")
        if done == total:
            stream.write("\r" + " " * (width + len(label) + 30) + "\r")
        stream.flush()

    return update


def scanned_file_at(output: str, files: Any) -> Optional[str]:
    """The scanned (or unparsable) source file that ``output`` names, whatever the spelling or link, or None: a
    report written there would replace the source it describes."""
    if not os.path.isfile(output):
        return None
    name = os.path.basename(os.path.realpath(output))
    for f in files:
        path = getattr(f, "path", None)
        source = getattr(f, "status", "") in ("scanned", "failed")
        if path and source and os.path.basename(os.path.realpath(path)) == name:
            try:
                if os.path.samefile(path, output):
                    return str(path)
            except OSError:
                continue
    return None


def backend_problem(requested: Optional[str]) -> Optional[str]:
    """Why the backend asked for (``--backend``, else ``ASCEND_COMPAT_BACKEND``) cannot be targeted, or None.

    Checked before any work, so a misspelt name is a usage error naming where it came from and the known backends,
    not a traceback from deep inside the run."""
    from ascend_compat import _setting  # reads the settings module only when the variable is set

    variable = "ASCEND_COMPAT_BACKEND"
    try:
        name = requested or _setting(variable)
    except ValueError as exc:  # settings.SettingError: the message names the variable
        return str(exc)
    if not name:
        return None
    where = "--backend" if requested else variable
    from ascend_compat.backends.registry import get_backend

    try:
        get_backend(name)
    except ValueError as exc:  # "unknown backend 'x'; known: cpu, ..." (entry-point backends included)
        return f"{where}: {exc}"
    return None
