"""Installed distributions, read from their metadata (no import of the package itself)."""

from __future__ import annotations

import importlib.metadata
from typing import Optional


def version_of(dist: str) -> Optional[str]:
    """The installed version of distribution ``dist``, or None when it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
