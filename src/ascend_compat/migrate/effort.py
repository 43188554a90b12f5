"""The effort model: a port costed per unit of work, each with a range, its basis and the findings it covers.

Units (``data/effort.json``): a compiled extension, each of its kernels (or the torch_npu operator that already
does its job), each Triton kernel, each dependency to swap, each class of mechanical edits (one rule ``port``
rewrites) and each class of hand edits. Every finding that costs work belongs to exactly one unit, so the totals
of the summary, of each report section and of ``port``'s share are sums of the same numbers.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Callable, Optional

from ascend_compat.migrate.extensions import Extension, Inventory, Kernel
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
class UnitCost:
    low: float
    high: float
    basis: str
    source: str


@dataclass
class Unit:
    """One piece of work: what it is, what it costs, and the findings (occurrences) it covers."""

    id: str
    kind: str  # a key of data/effort.json units, or "shim" (handled at runtime, no cost)
    section: str  # one of SECTION_KEYS, or "dependencies"
    label: str
    low: float
    high: float
    basis: str
    findings: list[Finding] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)  # file:line of what it covers besides findings
    alternative: str = ""
    status: str = "pending"  # pending | auto-fixable | adapted | shim | existing-port

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "section": self.section, "label": self.label,
                "low": self.low, "high": self.high, "basis": self.basis, "status": self.status,
                "alternative": self.alternative, "refs": self.refs,
                "occurrences": [f"{f.path}:{f.line}" for f in self.findings]}


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


@lru_cache(maxsize=1)
def data() -> dict:
    """``data/effort.json``: units, torch_npu operators, published ports."""
    return json.loads((resources.files("ascend_compat.migrate") / "data" / "effort.json").read_text("utf-8"))


def cost(kind: str) -> UnitCost:
    u = data()["units"][kind]
    return UnitCost(float(u["low"]), float(u["high"]), u["basis"], u["source"])


def npu_operator(name: str, path: str = "") -> Optional[dict]:
    """The torch_npu operator entry whose pattern matches a kernel / export name (or, for a kernel, its source
    path and name together: a GEMV in a quantization source is a quantized matmul), or None."""
    for entry in data()["operators"]:
        if any(re.search(p, name, re.I) for p in entry["match"]):
            return entry
    if path:
        for entry in data()["operators"]:
            if any(re.search(pp, path, re.I) and re.search(np_, name, re.I) for pp, np_ in entry.get("in_path", ())):
                return entry
    return None


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


class _Builder:
    def __init__(self) -> None:
        self.units: list[Unit] = []

    def add(self, kind: str, section: str, label: str, findings: list[Finding], refs: list[str] | None = None,
            alternative: str = "", status: str = "pending", extra: tuple[float, float] = (0.0, 0.0)) -> Unit:
        c = cost(kind) if kind != "shim" else UnitCost(0.0, 0.0, "handled at runtime by the ascend-compat shim", "")
        unit = Unit(f"U-{len(self.units) + 1:03d}", kind, section, label, round(c.low + extra[0], 2),
                    round(c.high + extra[1], 2), c.basis, findings, refs or [], alternative, status)
        self.units.append(unit)
        return unit


def _rel(root: str, path: str) -> str:
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


#: What makes a kernel hard to port, in words (the rule codes and API fragments ``extensions`` records).
_REASONS = {"AC607": "CUB/Thrust block primitives", "AC608": "CUDA libraries", "AC611": "inline PTX",
            "mma": "tensor-core MMA", "wmma": "tensor-core WMMA", "ldmatrix": "ldmatrix", "cp.async": "cp.async",
            "__shfl": "warp shuffles", "cub::": "CUB"}


def _kernel_unit(b: _Builder, k: Kernel, where: str, findings: list[Finding]) -> None:
    op = npu_operator(k.name, k.path)
    if op is not None:  # a kernel outside any extension that torch_npu already implements
        b.add("torch_npu_operator", "kernels", f"kernel `{k.name}` ({where}): {op['what']}", findings,
              [f"{k.path}:{k.line}"], op["torch_npu"])
    elif k.complex:
        uses = ", ".join(_REASONS.get(r, f"`{r}`") for r in k.reasons)
        b.add("kernel_complex", "kernels", f"kernel `{k.name}` ({where}; uses {uses})", findings,
              [f"{k.path}:{k.line}"], "an Ascend C kernel (`ascend-compat scaffold`)")
    else:
        b.add("kernel", "kernels", f"kernel `{k.name}` ({where})", findings, [f"{k.path}:{k.line}"],
              "an Ascend C kernel (`ascend-compat scaffold`)")


def _extension_units(b: _Builder, ext: Extension, findings: list[Finding]) -> None:
    d = ext.decl
    if not ext.cuda and not findings:
        return  # a CPU extension builds unchanged on the NPU host
    b.add("extension", "extensions", f"extension `{ext.name}` ({d.kind}, {len(ext.sources)} source file(s), "
          f"{len(ext.exports)} export(s), {len(ext.kernels)} kernel(s), {len(ext.call_sites)} Python use(s))",
          findings, [f"{d.path}:{d.line}"] + [s.where() for s in ext.call_sites],
          "rebuild with torch_npu (NpuExtension / OpPlugin registration)")
    # Kernels (and exports) that one torch_npu operator replaces are one unit: forward, backward and the
    # variants of a fused RoPE are routed to the operator together.
    by_op: dict[str, list[str]] = defaultdict(list)
    what: dict[str, str] = {}
    plain = []
    for k in ext.kernels:
        op = npu_operator(k.name, k.path)
        if op is None:
            plain.append(k)
            continue
        by_op[op["torch_npu"]].append(f"`{k.name}` ({k.path}:{k.line})")
        what[op["torch_npu"]] = op["what"]
    for k in plain:
        _kernel_unit(b, k, f"extension {ext.name}", [])
    extra = []
    for e in ext.exports:
        op = npu_operator(e.name)
        if op is not None:
            by_op[op["torch_npu"]].append(f"export `{e.name}` ({e.where()})")
            what[op["torch_npu"]] = op["what"]
        else:
            extra.append(e)
    for op_name, items in sorted(by_op.items()):
        refs = [re.sub(r".*\((.*)\)$", r"\1", i) for i in items]
        b.add("torch_npu_operator", "kernels", f"{what[op_name]} in `{ext.name}`: {', '.join(items)}", [], refs,
              op_name)
    # Exports beyond the kernels have device code shared with other exports (functors of one kernel template).
    for e in extra[len(plain):]:
        b.add("export_without_kernel", "boundary", f"export `{ext.name}.{e.name}` (its device code is shared "
              "with other exports)", [], [e.where()], "an Ascend C operator per export")


def build_effort(result: ScanResult, inventory: Inventory, project: Project) -> Effort:
    """Assign every finding of ``result`` to one unit of work and cost each unit."""
    root = inventory.root
    b = _Builder()
    taken: set[int] = set()
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        by_file[_rel(root, f.path)].append(f)

    def claim(fs: list[Finding]) -> list[Finding]:
        out = [f for f in fs if id(f) not in taken]
        taken.update(id(f) for f in out)
        return out

    for ext in inventory.extensions:
        mine = [f for rel in ext.files for f in by_file.get(rel, [])]
        mine += [f for f in by_file.get(ext.decl.path, []) if f.code == "AC411"]
        _extension_units(b, ext, claim(mine))
    orphan_files: dict[str, list[Kernel]] = defaultdict(list)
    for k in inventory.orphan_kernels:
        orphan_files[k.path].append(k)
    for rel, ks in sorted(orphan_files.items()):
        fs = claim(by_file.get(rel, []))
        for i, k in enumerate(ks):
            _kernel_unit(b, k, "not in any declared extension", fs if i == 0 else [])
    _triton_units(b, result, claim)
    _dependency_units(b, result, claim)
    _class_units(b, [f for f in result.findings if id(f) not in taken])
    port = existing_port(project)
    effort = Effort(b.units)
    if port is not None:
        c = cost("existing_port")
        effort.existing_port = {"project": port["project"], "port": port["port"], "source": port["source"],
                                "low": c.low, "high": c.high, "basis": c.basis}
    return effort


def _triton_units(b: _Builder, result: ScanResult, claim: Callable[[list[Finding]], list[Finding]]) -> None:
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        if f.code.startswith("AC41") or f.code.startswith("AC42"):
            if f.code != "AC411" and f.code != "AC412":
                by_file[f.path].append(f)
    for path in sorted(by_file):
        fs = by_file[path]
        kernels = [f for f in fs if f.code == "AC410"]
        rest = claim([f for f in fs if f.code != "AC410"])
        launched = _launched_names(path)
        first_costed = False
        for i, k in enumerate(kernels):
            m = re.search(r"`([^`]+)`", k.message)
            bare = m.group(1) if m else k.api
            kind = "triton_helper"
            if bare in launched:  # a file's first launched kernel carries the shared set-up; the others add less
                kind, first_costed = ("triton_kernel_sibling" if first_costed else "triton_kernel"), True
            what = "Triton device function (no grid launch found)" if kind == "triton_helper" else "Triton kernel"
            b.add(kind, "kernels", f"{what} `{bare}` ({os.path.basename(path)})",
                  claim([k]) + (rest if i == 0 else []), alternative="triton-ascend")


def _launched_names(path: str) -> set[str]:
    """Names launched on a grid (``name[grid](...)``, ``wrap_triton(name)[grid](...)``) in the Python files of
    ``path``'s package directory."""
    from ascend_compat.migrate.scan import read_source

    out: set[str] = set()
    d = os.path.dirname(path)
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return out
    for n in names:
        if n.endswith(".py"):
            data_, _ = read_source(os.path.join(d, n))
            text = (data_ or b"").decode("utf-8", "replace")
            out.update(re.findall(r"\b([A-Za-z_]\w*)\s*\[[^\]\n]*\]\s*\(", text))
            # torch.library.wrap_triton(kernel)[grid](...) launches ``kernel`` through torch.compile's path.
            out.update(re.findall(r"\bwrap_triton\s*\(\s*([A-Za-z_]\w*)\s*\)", text))
    return out


def _dependency_units(b: _Builder, result: ScanResult, claim: Callable[[list[Finding]], list[Finding]]) -> None:
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
        status = "shim" if codes <= {"AC703"} else "pending"
        if status == "shim":
            kind = "shim"
        b.add(kind, "dependencies", f"dependency `{name}`", fs, alternative=fs[0].effective_alternative,
              status=status)


def _class_units(b: _Builder, findings: list[Finding]) -> None:
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


__all__ = ["SECTIONS", "SECTION_KEYS", "Effort", "Unit", "build_effort", "cost", "data", "existing_port",
           "npu_operator", "section_of"]
