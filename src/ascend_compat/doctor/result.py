"""What a doctor check returns: one :class:`Check` value per finding (a check never raises)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

#: A check's possible statuses, best first; ``skip`` means not applicable (or a check it needs failed first).
STATUSES = ("ok", "warn", "error", "skip")


@dataclass(frozen=True)
class Check:
    """One finding: ``status`` is ok, warn, error or skip (not applicable, or needs a check that failed first)."""

    id: str
    title: str
    status: str
    found: str
    why: str = ""
    fix: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> CheckDict:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "found": self.found,
            "why": self.why,
            "fix": self.fix,
            "details": self.details,
        }


class CheckDict(TypedDict):
    """:meth:`Check.to_dict`, one entry of ``doctor --json``'s ``checks``."""

    id: str
    title: str
    status: str
    found: str
    why: str
    fix: str
    details: dict[str, Any]  # check-specific facts (versions, paths, counts)
