"""The Python scanner's rules, kept under their old name: each is declared with the family class that finds it
(``migrate/rules/py_*.py``) and collected by the registry (``migrate/rules/__init__.py``)."""

from __future__ import annotations

from ascend_compat.migrate.rules import PY_RULES

__all__ = ["PY_RULES"]
