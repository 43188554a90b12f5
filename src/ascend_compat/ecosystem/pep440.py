"""PEP 440 version keys and specifier tests for the ecosystem reports (vllm-ascend / vLLM / torch_npu releases).

``packaging`` compares versions exactly where it is installed; the small fallback, built on the doctor's version
parser, covers the forms the data files use (a test keeps the two in agreement).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ascend_compat.doctor.versions import PyVersion

try:  # packaging compares PEP 440 versions exactly; the small fallback below covers the forms the data uses.
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - exercised only where packaging is absent
    SpecifierSet = None  # type: ignore[assignment,misc]

__all__ = ["in_spec", "public_version", "version_key"]


def public_version(text: str) -> str:
    """``text`` without its local label (``0.9.1+empty`` → ``0.9.1``: vLLM built for a plugin carries one)."""
    return text.strip().split("+", 1)[0]


def _fallback_key(text: str) -> Optional[tuple]:
    """A sort key of a PEP 440 version (release, pre, post, dev), or None when it does not parse: the doctor's
    parser, used where ``packaging`` is absent."""
    v = PyVersion.try_parse(public_version(text))
    return v.key if v is not None else None


def version_key(text: str) -> Optional[Any]:
    """A comparable form of a version string (local label ignored), or None when it is not a version."""
    if SpecifierSet is not None:
        try:
            return Version(public_version(text))
        except InvalidVersion:
            return None
    return _fallback_key(text)


def _fallback_in_spec(version: str, spec: str) -> bool:
    key = _fallback_key(version)
    if key is None:
        return False
    for clause in spec.split(","):
        m = re.match(r"\s*(==|!=|>=|<=|>|<)\s*(\S+)\s*$", clause)
        if m is None:
            return False
        other = _fallback_key(m.group(2))
        if other is None:
            return False
        op = m.group(1)
        ok = {"==": key == other, "!=": key != other, ">=": key >= other, "<=": key <= other,
              ">": key > other, "<": key < other}[op]
        if not ok:
            return False
    return True


def in_spec(version: str, spec: str) -> bool:
    """Whether ``version`` satisfies the PEP 440 specifier ``spec`` (pre-releases included; local label ignored)."""
    if SpecifierSet is None:
        return _fallback_in_spec(version, spec)
    try:
        return SpecifierSet(spec).contains(Version(public_version(version)), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False
