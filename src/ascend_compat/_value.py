"""Dataclass-like value semantics for small classes on ``activate()``'s path.

Building a dataclass costs about half a millisecond at import; these classes declare ``_FIELDS`` (declaration
order) and ``__slots__`` and get a dataclass's equality and repr from :class:`FieldValue`.
"""

from __future__ import annotations

from typing import Any


class FieldValue:
    """Equality and repr over ``_FIELDS``, as a dataclass gives them (hashing is the subclass's choice)."""

    __slots__ = ()
    _FIELDS: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS) + ")"
