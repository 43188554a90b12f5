"""Dataclass-like value semantics for small classes on ``activate()``'s path.

Building a dataclass costs about half a millisecond at import; these classes declare ``_FIELDS`` (declaration
order) and ``__slots__`` and get a dataclass's equality and repr from :class:`FieldValue` (hashing is the
subclass's choice). The class itself is defined in the package's ``__init__``, which every import loads anyway,
so that activation does not import this module.
"""

from __future__ import annotations

from ascend_compat import _FieldValue as FieldValue

__all__ = ["FieldValue"]
