"""Migration analyzer: ``check`` (scanner), ``port`` (rewriter) and ``report`` (review report)."""

from __future__ import annotations
