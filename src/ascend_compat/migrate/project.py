"""What a scan knows about the project as a whole: its own packages, its extension boundary and the effort.

:func:`apply_first_party` runs when a :class:`~ascend_compat.migrate.model.ScanResult` is built: a dependency
finding that names the repository's own package (``import awq`` in llm-awq, ``mamba-ssm`` in mamba) is
removed and kept aside. :func:`analyze` (computed once per result, on demand) adds the extension inventory and
the effort model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ascend_compat.migrate.effort import Effort, build_effort
from ascend_compat.migrate.extensions import Inventory, build_inventory
from ascend_compat.migrate.firstparty import Project, detect, imported_module
from ascend_compat.migrate.model import FileScanned, Finding, ScanResult


@dataclass
class Analysis:
    project: Project
    inventory: Inventory
    effort: Effort

    def to_dict(self) -> dict:
        return {"first_party": self.project.to_dict(), "extensions": self.inventory.to_dict(),
                "effort": self.effort.to_dict()}


def _setup_files(result: ScanResult) -> list[str]:
    return [f.path for f in result.files if os.path.basename(f.path) == "setup.py"]


def _first_party_finding(f: Finding, project: Project) -> bool:
    if f.category != "dependency":
        return False
    module = imported_module(f.message)
    if module is not None:
        return project.owns_module(module)
    return bool(f.api) and project.owns_distribution(f.api)


def apply_first_party(result: ScanResult) -> Project:
    """Detect the project's own packages and drop the dependency findings that name them (kept in
    ``result.first_party_dropped``)."""
    project = detect(result.roots, _setup_files(result))
    dropped: list[Finding] = []
    for r in result.files:
        if isinstance(r, FileScanned) and r.findings:
            keep: list[Finding] = []
            for f in r.findings:
                (dropped if _first_party_finding(f, project) else keep).append(f)
            if len(keep) != len(r.findings):
                r.findings = keep
    result.first_party_dropped = dropped
    result.first_party = project.to_dict()
    return project


def analyze(result: ScanResult) -> Analysis:
    """The project, its extension inventory and the effort model of ``result`` (computed once)."""
    cached = result.analysis_cache.get("analysis")
    if isinstance(cached, Analysis):
        return cached
    fp = result.first_party or {}
    project = Project(fp.get("root") or detect(result.roots).root, set(fp.get("distributions", ())),
                      set(fp.get("packages", ())), dict(fp.get("evidence", {})))
    inventory = build_inventory(result, project.root)
    for ext in inventory.extensions:  # the compiled modules are the project's own packages too
        project.packages.add(ext.name)
        project.evidence.setdefault(ext.name, f"{ext.decl.path}:{ext.decl.line}")
    analysis = Analysis(project, inventory, build_effort(result, inventory, project))
    result.analysis_cache["analysis"] = analysis
    return analysis


__all__ = ["Analysis", "analyze", "apply_first_party"]
