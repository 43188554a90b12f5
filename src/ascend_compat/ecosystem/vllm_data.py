"""vllm-ascend's published facts (``data/vllm_ascend.json``): its releases with what each pairs with, and which
attention backends each release line selects. Every row carries its ``source``.
"""

from __future__ import annotations

from typing import Any, Optional, TypedDict, cast

from ascend_compat import _data
from ascend_compat.ecosystem.pep440 import in_spec, version_key

__all__ = ["AttentionEra", "Release", "attention_for", "load_table", "newest_final", "release", "releases",
           "releases_for_vllm"]


class _ReleaseRequired(TypedDict):
    vllm_ascend: str
    #: The vLLM versions this release is published for (first: the one to install).
    vllm: list[str]
    #: A PEP 440 specifier of the Python versions it supports.
    python: str
    cann: str
    torch: str
    torch_npu: str
    released: str
    source: str


class Release(_ReleaseRequired, total=False):
    """One vllm-ascend release of the compatibility matrix."""

    triton_ascend: str
    note: str


class _AttentionRequired(TypedDict):
    #: PEP 440 specifiers of the vllm-ascend versions the entry covers.
    versions: list[str]
    engine: str
    #: Backend class path by kind of attention (``default``, ``mla``, ...).
    backends: dict[str, str]
    source: str


class AttentionEra(_AttentionRequired, total=False):
    """The attention backends a range of vllm-ascend releases selects."""

    engine_env: str
    graph_mode: str


def load_table() -> dict[str, Any]:
    """``data/vllm_ascend.json`` as a dict (releases newest first, as the matrix lists them; never change it)."""
    return _data.load("vllm_ascend")


def releases() -> list[Release]:
    """Every vllm-ascend release row of the data file."""
    return cast("list[Release]", load_table()["releases"])


def release(vllm_ascend_version: str) -> Optional[Release]:
    """The matrix row of a vllm-ascend version (compared as PEP 440 versions), or None."""
    key = version_key(vllm_ascend_version)
    if key is None:
        return None
    return next((r for r in releases() if version_key(r["vllm_ascend"]) == key), None)


def _release_order(row: Release) -> Any:
    """Sort key of a release row: its vllm_ascend version (every row's parses: tests/ecosystem/test_vllm.py)."""
    key = version_key(row["vllm_ascend"])
    if key is None:
        raise ValueError(f"vllm_ascend.json: release {row['vllm_ascend']!r} is not a version")
    return key


def releases_for_vllm(vllm_version: str) -> list[Release]:
    """The rows that pair with this vLLM version, newest vllm-ascend first."""
    key = version_key(vllm_version)
    rows = [r for r in releases() if key is not None and any(version_key(v) == key for v in r["vllm"])]
    return sorted(rows, key=_release_order, reverse=True)


def _is_final(version: str) -> bool:
    key = version_key(version)
    return key is not None and not (getattr(key, "is_prerelease", False) or "rc" in version or "dev" in version)


def newest_final() -> Release:
    """The newest final (not release-candidate) release: what to install from scratch."""
    finals = [r for r in releases() if _is_final(r["vllm_ascend"])]
    return max(finals, key=_release_order)


def attention_for(vllm_ascend_version: str) -> Optional[AttentionEra]:
    """The attention entry of a vllm-ascend release (first match), or None when its version does not parse."""
    if version_key(vllm_ascend_version) is None:
        return None
    eras = cast("list[AttentionEra]", load_table()["attention"])
    return next((a for a in eras if any(in_spec(vllm_ascend_version, s) for s in a["versions"])), None)


def _table_range() -> str:
    keys = sorted(releases(), key=_release_order)
    return f"{keys[0]['vllm_ascend']} to {keys[-1]['vllm_ascend']}"
