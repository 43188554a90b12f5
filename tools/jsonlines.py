"""Deterministic JSON text for the generated data files: one line per entry of the big tables, so that a
regenerated file diffs line by line (``json.dumps(indent=...)`` would spread each entry over many lines)."""

from __future__ import annotations

import json
from typing import Any, Callable


def render(data: dict[str, Any], expand: Callable[[str, Any], bool]) -> str:
    """``data``'s top-level keys in order; a dict or list value for which ``expand(key, value)`` holds gets one
    line per entry, every other value one line."""
    out = ["{"]
    items = list(data.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, dict) and expand(key, value):
            out.append(f"{json.dumps(key)}: {{")
            out.append(",\n".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in value.items()))
            out.append("}" + comma)
        elif isinstance(value, list) and expand(key, value):
            out.append(f"{json.dumps(key)}: [")
            out.append(",\n".join(json.dumps(v, ensure_ascii=False) for v in value))
            out.append("]" + comma)
        else:
            out.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"
