"""Migration analyzer: ``check`` (scanner), ``port`` (rewriter) and ``report`` (review report).

Python API (the CLI is a thin layer over these)::

    from ascend_compat.migrate import check, port_paths, build_report
    result = check(["src/"], torch_npu="2.6")       # ScanResult: per-file results as values
    for r in port_paths(["src/"], mode="native"):    # PortSuccess / PortSkip / PortFailure
        ...

Nothing here imports torch: the analyzer runs on any machine.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "check": "ascend_compat.migrate.scan",
    "scan_file": "ascend_compat.migrate.scan",
    "port_source": "ascend_compat.migrate.port",
    "port_paths": "ascend_compat.migrate.port",
    "planned_changes": "ascend_compat.migrate.port",
    "build_report": "ascend_compat.migrate.report",
    "render": "ascend_compat.migrate.render",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # Lazy, so ``import ascend_compat.migrate.model`` stays cheap in worker processes.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ascend_compat.migrate' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
