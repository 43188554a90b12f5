"""The effort model: a port costed per unit of work, each with a range, its basis and the findings it covers.

Units (``data/effort.json``): a compiled extension, each of its kernels (or the torch_npu operator that already
does its job, or a variant of a kernel already costed), each Triton or tile-DSL kernel, each dependency to swap,
each class of mechanical edits (one rule ``port`` rewrites) and each class of hand edits. Every finding that costs
work belongs to exactly one unit, so the totals of the summary, of each report section and of ``port``'s share are
sums of the same numbers. The building blocks are in ``effort_units``, the kernel units in ``effort_kernels``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Optional

from ascend_compat.migrate.effort_kernels import dsl_units, extension_units, kernel_units, triton_units
from ascend_compat.migrate.effort_units import Builder, Unit, UnitCost, cost, data, npu_operator, rel
from ascend_compat.migrate.extensions import Inventory, Kernel
from ascend_compat.migrate.firstparty import Project
from ascend_compat.migrate.model import Finding, ScanResult

#: Report sections of the bottleneck analysis (the review workflow's categories), in order.
SECTIONS = (
    ("kernels", "CUDA operators and kernels"),
    ("memory", "Memory operations"),
    ("streams", "Streams and events"),
    ("blas_dnn", "cuBLAS and cuDNN"),
    ("attention", "Flash attention"),
    ("extensions", "Custom C++/CUDA extensions"),
    ("amp", "AMP and mixed precision"),
    ("loading", "Model loading and weight formats"),
    ("npu_memory", "NPU memory and KV-cache management"),
    ("boundary", "Python–C++ boundary"),
    ("concurrency", "Concurrency, distributed and async"),
    ("config", "Configuration, hard-coded devices and tooling"),
)
SECTION_KEYS = tuple(k for k, _ in SECTIONS)
_RULE_SECTION = {
    "AC114": "memory", "AC601": "memory", "AC115": "streams", "AC616": "streams", "AC504": "streams",
    "AC116": "loading", "AC508": "loading", "AC614": "boundary", "AC613": "extensions", "AC411": "extensions",
}
_CATEGORY_SECTION = {
    "device": "config", "memory": "memory", "streams": "streams", "amp": "amp", "distributed": "concurrency",
    "attention": "attention", "custom_kernel": "kernels", "blas_dnn": "blas_dnn", "profiling": "config",
    "compile": "config", "api_support": "kernels", "dependency": "loading",
}
#: Memory APIs about the caching allocator and its budget: the NPU memory / KV-cache section.
_NPU_MEMORY = re.compile(r"empty_cache|memory_reserved|max_memory|caching_allocator|memory_fraction|ALLOC_CONF|"
                         r"mem_get_info|memory_stats|reset_peak")


@dataclass
class Effort:
    units: list[Unit]
    existing_port: Optional[dict] = None

    @property
    def low(self) -> float:
        return round(sum(u.low for u in self.units), 2)

    @property
    def high(self) -> float:
        return round(sum(u.high for u in self.units), 2)

    def by_section(self) -> dict[str, tuple[float, float, int]]:
        out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        for u in self.units:
            acc = out[u.section]
            acc[0] += u.low
            acc[1] += u.high
            acc[2] += 1
        return {k: (round(v[0], 2), round(v[1], 2), int(v[2])) for k, v in out.items()}

    def to_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "units": [u.to_dict() for u in self.units],
                "by_section": {k: {"low": lo, "high": hi, "units": n} for k, (lo, hi, n) in self.by_section().items()},
                "existing_port": self.existing_port}


def existing_port(project: Project) -> Optional[dict]:
    for entry in data()["ports"]:
        if project.owns_distribution(entry["project"]) or entry["project"] in project.packages:
            return entry
    return None


def section_of(f: Finding) -> str:
    if f.code in _RULE_SECTION:
        return _RULE_SECTION[f.code]
    if f.category == "memory" and _NPU_MEMORY.search(f.api or f.message):
        return "npu_memory"
    return _CATEGORY_SECTION.get(f.category, "config")


def build_effort(result: ScanResult, inventory: Inventory, project: Project) -> Effort:
    """Assign every finding of ``result`` to one unit of work and cost each unit."""
    root = inventory.root
    b = Builder()
    taken: set[int] = set()
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        by_file[rel(root, f.path)].append(f)

    def claim(fs: list[Finding]) -> list[Finding]:
        out = [f for f in fs if id(f) not in taken]
        taken.update(id(f) for f in out)
        return out

    for ext in inventory.extensions:
        mine = [f for path in ext.files for f in by_file.get(path, [])]
        mine += [f for f in by_file.get(ext.decl.path, []) if f.code == "AC411"]
        extension_units(b, ext, claim(mine))
    orphan_files: dict[str, list[Kernel]] = defaultdict(list)
    for k in inventory.orphan_kernels:
        orphan_files[k.path].append(k)
    for path, ks in sorted(orphan_files.items()):
        kernel_units(b, ks, "not in any declared extension", claim(by_file.get(path, [])))
    triton_units(b, result, claim)
    folded = dsl_units(b, result, claim, root)
    _dependency_units(b, result, claim, folded)
    _class_units(b, [f for f in result.findings if id(f) not in taken])
    port = existing_port(project)
    effort = Effort(b.units)
    if port is not None:
        c = cost("existing_port")
        effort.existing_port = {"project": port["project"], "port": port["port"], "source": port["source"],
                                "low": c.low, "high": c.high, "basis": c.basis}
    return effort


def _dependency_units(b: Builder, result: ScanResult, claim: Callable[[list[Finding]], list[Finding]],
                      folded: set[str]) -> None:
    """One unit per dependency. One whose code is used only by tile-DSL kernels (``folded``: costed with their
    rewrite) is only dropped from the manifests."""
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        if f.category == "dependency" and f.code != "AC508":
            groups[f.api or f.message].append(f)
    for name in sorted(groups):
        fs = claim(groups[name])
        if not fs:
            continue
        codes = {f.code for f in fs}
        kind = ("dependency_rewrite" if "AC701" in codes else "dependency_swap" if "AC702" in codes
                else "dependency_install")
        imports_only = all(f.path.endswith(".py") and not f.path.endswith("setup.py") for f in fs)
        if kind == "dependency_rewrite" and imports_only and len({f.path for f in fs}) <= 2:
            kind = "dependency_rewrite_small"  # imported in one or two files, named in no manifest
        label = f"dependency `{name}`"
        if name in folded and not any(f.path.endswith(".py") and not f.path.endswith("setup.py") for f in fs):
            kind = "dependency_install"
            label += " (used only by the tile-DSL kernels of section 3.1, whose rewrite replaces it: swap or drop it)"
        status = "shim" if codes <= {"AC703"} else "pending"
        if status == "shim":
            kind = "shim"
        b.add(kind, "dependencies", label, fs, alternative=fs[0].effective_alternative,
              status=status)


def _class_units(b: Builder, findings: list[Finding]) -> None:
    groups: dict[tuple[str, str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        how = "fix" if f.is_fixable else "shim" if f.rule.shim_handles else "manual"
        groups[(section_of(f), f.code, how)].append(f)
    per_low, per_high = data()["units"]["manual_class"]["per_occurrence"]
    for (section, code, how), fs in sorted(groups.items(), key=lambda kv: (SECTION_KEYS.index(kv[0][0])
                                                                           if kv[0][0] in SECTION_KEYS else 99,
                                                                           kv[0][1], kv[0][2])):
        fs.sort(key=lambda f: (f.path, f.line, f.col))
        rule = fs[0].rule
        label = f"{code} {rule.name}: {rule.message}"
        if how == "fix":
            b.add("mechanical_class", section, label, fs, alternative=rule.alternative, status="auto-fixable")
        elif how == "shim":
            b.add("shim", section, label, fs, alternative=rule.alternative, status="shim")
        elif all(f.effective_level == "note" and f.rule.effort_days == 0 for f in fs):
            continue
        elif all(f.effective_level == "note" for f in fs):
            b.add("advice", section, label, fs, alternative=fs[0].effective_alternative)
        else:
            n = len(fs) - 1
            b.add("manual_class", section, label, fs, alternative=fs[0].effective_alternative,
                  extra=(n * per_low, n * per_high))


__all__ = ["SECTIONS", "SECTION_KEYS", "Effort", "Unit", "UnitCost", "build_effort", "cost", "data",
           "existing_port", "npu_operator", "section_of"]
