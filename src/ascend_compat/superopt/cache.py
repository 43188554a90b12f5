"""Disk cache of superoptimized plans, keyed by graph, shapes, dtypes, backend, target and versions.

Entries are JSON files written atomically (:mod:`ascend_compat._atomic`: a temporary file beside them, then a
rename), so concurrent processes never see half an entry; an entry that does not parse or lacks fields is treated
as a miss and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional

from ascend_compat import _atomic

# 2: split-K plans (a kernel module launching two kernels, max_programs a pair); 3: online-softmax kernels start
# their running max at the lowest float32 (those of 2 gave NaN on key blocks of -inf logits: rebuilt, not served)
SCHEMA = 3
REQUIRED = ("schema", "backend", "target", "plan_graph", "kernels", "search", "verification")


def cache_dir() -> Path:
    """``$ASCEND_COMPAT_CACHE_DIR/superopt`` (default ``~/.cache/ascend_compat/superopt``)."""
    from ascend_compat import settings

    return Path(settings.cache_root()) / "superopt"


def key(signature: dict[str, Any], backend: str, target: str, mode: str, versions: dict[str, Any]) -> str:
    blob = json.dumps({"graph": signature, "backend": backend, "target": target, "mode": mode,
                       "versions": versions, "schema": SCHEMA}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def load(k: str, root: Optional[Path] = None) -> Optional[dict[str, Any]]:
    path = (root or cache_dir()) / f"{k}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or any(f not in data for f in REQUIRED):
        return None
    return data


def store(k: str, record: dict[str, Any], root: Optional[Path] = None) -> Path:
    root = root or cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{k}.json"
    # No fsync: an entry torn by a power loss fails to parse and is rebuilt (see load).
    _atomic.write_text(path, json.dumps({**record, "schema": SCHEMA}), fsync=False)
    return path


def kernel_dir(k: str, root: Optional[Path] = None) -> Path:
    """Where the entry's kernel modules are written for import (Triton reads jitted functions' source files)."""
    d = (root or cache_dir()) / k
    d.mkdir(parents=True, exist_ok=True)
    return d
