"""Report sections 1 and 2: executive summary, code structure, every dependency, the extension boundary."""

from __future__ import annotations

import ast
import datetime
import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import PurePath
from typing import Optional

from ascend_compat.migrate.effort import SECTIONS, Unit
from ascend_compat.migrate.model import Change, FileResult, FileScanned, FileSkipped, ScanResult
from ascend_compat.migrate.project import Analysis
from ascend_compat.migrate.render import cxx_not_analysed, format_days, md_code
from ascend_compat.migrate.report_deps import collect, judge
from ascend_compat.migrate.report_doc import Doc

_CUDA_EXT = {".cu", ".cuh"}
_CXX_EXT = {".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx"}
_PY_EXT = {".py", ".pyi"}


@dataclass
class Ctx:
    """Everything a section is built from."""

    result: ScanResult
    analysis: Analysis
    changes: Optional[list[Change]]
    root: str
    date: datetime.date
    adaptation: Optional[dict] = None  # adaptation.write_adaptation(...).to_dict()
    verification: Optional[dict] = None  # report_verify.run_verification(...)

    def rel(self, path: str) -> str:
        full = os.path.abspath(path)
        rel = os.path.relpath(full, self.root) if os.path.splitdrive(full)[0] == os.path.splitdrive(self.root)[0] \
            else full
        return PurePath(path).as_posix() if rel.startswith(os.pardir) else PurePath(rel).as_posix()

    @property
    def units(self) -> list[Unit]:
        return self.analysis.effort.units


def days(low: float, high: float) -> str:
    if format_days(low) == format_days(high):  # "0–0 person-days" reads like a typo
        return f"{format_days(high)} person-days"
    return f"{format_days(low)}–{format_days(high)} person-days"


def adapted(ctx: Ctx, u: Unit) -> bool:
    """A unit is adapted when the shim handles it or the adaptation folder holds its rewrite."""
    return u.status == "shim" or (u.status == "auto-fixable" and ctx.adaptation is not None
                                  and bool(ctx.adaptation.get("ported")))


def status_of(ctx: Ctx, u: Unit) -> str:
    if u.status == "shim":
        return "✅ Adapted (handled at runtime by the ascend-compat shim)"
    if u.status == "auto-fixable":
        return ("✅ Adapted (ported copies in the adaptation folder)" if adapted(ctx, u)
                else "⚠️ Pending (`ascend-compat port` rewrites it)")
    return "⚠️ Pending"


def adaptation_status(ctx: Ctx) -> tuple[str, int, int]:
    done = sum(adapted(ctx, u) for u in ctx.units)
    remaining = len(ctx.units) - done
    if remaining == 0:
        return "✅ Fully Adapted", done, remaining
    if done:
        return "⚠️ Partially Adapted", done, remaining
    return "❌ Not adapted yet", done, remaining


def _cxx_coverage(result: ScanResult) -> str:
    parsed = sum(1 for f in result.files if isinstance(f, FileScanned) and f.language == "cxx")
    unparsed = len(cxx_not_analysed(result))
    if unparsed:
        return f"❌ {parsed} of {parsed + unparsed}: the C/C++/CUDA parser (tree-sitter) is missing, see the top"
    return f"✅ all {parsed}" if parsed else "none in the repository"


def executive_summary(doc: Doc, ctx: Ctx, title: str) -> None:
    eff = ctx.analysis.effort
    status, done, remaining = adaptation_status(ctx)
    inv = ctx.analysis.inventory
    doc.h(2, title)
    doc.table(["Item", "Value"], [
        ["Original code repository", md_code(ctx.root)],
        ["Review date", ctx.date.isoformat()],
        ["Adaptation status", status],
        ["Total identified bottlenecks", str(len(ctx.units))],
        ["Adapted bottlenecks", str(done)],
        ["Remaining bottlenecks", str(remaining)],
        ["Estimated effort (remaining)", days(sum(u.low for u in ctx.units if not adapted(ctx, u)),
                                              sum(u.high for u in ctx.units if not adapted(ctx, u)))],
        ["Estimated effort (all bottlenecks)", days(eff.low, eff.high)],
        ["Compiled extensions", f"{len(inv.extensions)} ({sum(len(e.kernels) for e in inv.extensions)} kernels, "
                                f"{sum(len(e.call_sites) for e in inv.extensions)} Python uses)"],
        ["First-party packages", ", ".join(md_code(p) for p in sorted(ctx.analysis.project.packages)) or "none found"],
        ["C/C++/CUDA files analysed", _cxx_coverage(ctx.result)],
    ])
    if eff.existing_port:
        p = eff.existing_port
        doc.p(f"**An Ascend port of this project exists:** {p['port']}. Adopting it is estimated at "
              f"{days(p['low'], p['high'])} ({p['basis']}); the figures above are for porting this code yourself.")
    top = sorted((u for u in ctx.units if not adapted(ctx, u)), key=lambda u: (-u.high, u.id))[:5]
    if top:
        doc.p("**Largest remaining units of work:**")
        doc.ol(f"{u.id} {u.label}: {days(u.low, u.high)}" for u in top)
    by = eff.by_section()
    rows = [[name, str(by[key][2]), days(by[key][0], by[key][1])] for key, name in
            (*SECTIONS, ("dependencies", "Dependencies (section 2.2)")) if key in by]
    doc.table(["Category", "Units", "Effort"], [*rows, ["Total", str(len(ctx.units)), days(eff.low, eff.high)]])
    doc.p("Effort is costed per unit of work (a kernel, an extension, a dependency swap, a class of edits), "
          "each with the range and basis shown in section 3; the totals here are their sums.")


def _file_type(r: FileResult) -> str:
    ext = os.path.splitext(r.path)[1].lower()
    if r.language == "deps":
        return "Manifests"
    if ext in _CUDA_EXT:
        return "CUDA"
    if ext in _CXX_EXT or r.language == "cxx":
        return "C/C++"
    return "Python" if ext in _PY_EXT or r.language == "python" else "Other"


def _docstring(path: str) -> str:
    from ascend_compat.migrate.scan import read_source

    data, _ = read_source(path, 1024 * 1024)
    try:
        doc = ast.get_docstring(ast.parse(data or b"")) or ""
    except (SyntaxError, ValueError):
        return ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    return first[:160] + ("…" if len(first) > 160 else "")


def _package_outline(folder: str) -> str:
    """A package without a docstring described by what it is made of: its subpackages and the names its
    ``__init__.py`` imports for its users."""
    from ascend_compat.migrate.scan import read_source

    subs = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n, "__init__.py")))
    data, _ = read_source(os.path.join(folder, "__init__.py"), 1024 * 1024)
    try:
        tree = ast.parse(data or b"")
    except (SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    names = [a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
             for a in node.names if a.name != "*" and not (a.asname or a.name).startswith("_")]
    parts = []
    if subs:
        parts.append("subpackages " + ", ".join(md_code(n) for n in subs[:8]) + (" …" if len(subs) > 8 else ""))
    if names:
        parts.append("exports " + ", ".join(md_code(n) for n in names[:8]) + (" …" if len(names) > 8 else ""))
    return "; ".join(parts)


def _core_modules(ctx: Ctx) -> list[list[str]]:
    """Top-level directories by lines of code, with what their entry module says they do."""
    per_dir: dict[str, list[FileScanned]] = defaultdict(list)
    for r in ctx.result.files:
        if isinstance(r, FileScanned) and r.language in ("python", "cxx"):
            rel = ctx.rel(r.path)
            per_dir[rel.split("/")[0] if "/" in rel else "(top level)"].append(r)
    rows = []
    for d, files in sorted(per_dir.items(), key=lambda kv: -sum(f.lines for f in kv[1]))[:12]:
        langs = Counter(_file_type(f) for f in files)
        init = os.path.join(ctx.root, d, "__init__.py")
        what = (_docstring(init) or _package_outline(os.path.join(ctx.root, d))) if os.path.isfile(init) else ""
        if not what:
            biggest = max(files, key=lambda f: f.lines)
            what = (_docstring(biggest.path) if biggest.language == "python" else "") or \
                f"largest file {md_code(ctx.rel(biggest.path))}"
        kind = "first-party package" if d in ctx.analysis.project.packages else "directory"
        rows.append([md_code(d), kind, ", ".join(f"{n} {lang}" for lang, n in sorted(langs.items())),
                     str(sum(f.lines for f in files)), what])
    return rows


def code_structure(doc: Doc, ctx: Ctx, title: str) -> None:
    doc.h(2, title)
    doc.h(3, "2.1 Code structure overview")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in ctx.result.files:
        c = counts[_file_type(r)]
        c[0] += 1
        c[1] += 0 if isinstance(r, FileSkipped) else r.lines
    rows = [[t, str(c[0]), str(c[1])] for t, c in sorted(counts.items())]
    rows.append(["Total", str(sum(c[0] for c in counts.values())), str(sum(c[1] for c in counts.values()))])
    doc.table(["Files", "Count", "Lines"], rows)
    doc.p("**Core modules:**")
    doc.table(["Module", "Kind", "Files", "Lines", "What it does"], _core_modules(ctx))
    project = ctx.analysis.project
    doc.p("**First-party (this repository's own) names**, never reported as third-party dependencies: "
          + (", ".join(f"{md_code(n)} ({where})" for n, where in sorted(project.evidence.items())) or "none found")
          + (f". {len(ctx.result.first_party_dropped)} import finding(s) of these names were left out of the "
             "dependency findings." if ctx.result.first_party_dropped else "."))


def dependencies(doc: Doc, ctx: Ctx) -> None:
    doc.h(3, "2.2 Dependency analysis")
    deps_ = collect(ctx.result, ctx.analysis.project, ctx.rel)
    if not deps_:
        doc.p("The repository declares and imports no third-party package.")
        return
    unit_of = {u.label.split("`")[1]: u for u in ctx.units if u.section == "dependencies" and "`" in u.label}
    for unit in ctx.units:  # a dependency used only by kernels rewritten for the NPU goes with their unit
        for f in unit.findings:
            if f.category == "dependency":
                unit_of.setdefault(f.api or f.message, unit)
    rows = []
    for d in deps_:
        compat, alt = judge(d)
        u = unit_of.get(d.name)
        cell = "none" if u is None else f"{u.id}: {days(u.low, u.high)}" + (
            "" if u.section == "dependencies" else " (goes with this kernel's rewrite)")
        rows.append([md_code(d.name), ", ".join(sorted(d.specs)) or "any", compat, alt, cell,
                     ", ".join(md_code(w) for w in d.where)])
    doc.table(["Dependency", "Version", "Compatibility", "NPU alternative", "Effort unit", "Declared / imported at"],
              rows)


def extension_inventory(doc: Doc, ctx: Ctx) -> None:
    doc.h(3, "2.3 Compiled extensions (the Python–C++/CUDA boundary)")
    inv = ctx.analysis.inventory
    if not inv.extensions and not inv.orphan_kernels:
        doc.p("The repository declares no compiled extension (no `CUDAExtension`/`CppExtension` in a setup.py, "
              "no `torch.utils.cpp_extension.load*` call, no CMake module target) and defines no CUDA kernel.")
        return
    rows = []
    for e in inv.extensions:
        rows.append([md_code(e.name), e.decl.kind, md_code(f"{e.decl.path}:{e.decl.line}"),
                     f"{len(e.sources)}" + (f" ({len(e.missing)} missing)" if e.missing else ""),
                     ", ".join(md_code(x.name) for x in e.exports) or "none found",
                     ", ".join(md_code(k.name) for k in e.kernels) or "none", str(len(e.call_sites))])
    doc.table(["Extension module", "Built by", "Declared at", "Sources", "Exported functions", "Kernels",
               "Python uses"], rows)
    for e in inv.extensions:
        doc.p(f"**{md_code(e.name)}** sources: " + (", ".join(md_code(s) for s in e.sources) or "none found")
              + (f"; missing: {', '.join(md_code(s) for s in e.missing)}" if e.missing else "")
              + ". Python uses: " + (", ".join(f"{md_code(s.where())} ({s.name})" for s in e.call_sites)
                                      or "none found") + ".")
    if inv.orphan_kernels:
        doc.p(f"**Kernels outside any declared extension** ({len(inv.orphan_kernels)}): "
              + ", ".join(f"{md_code(k.name)} at {md_code(f'{k.path}:{k.line}')}" for k in inv.orphan_kernels)
              + ".")


__all__ = ["Ctx", "adaptation_status", "adapted", "code_structure", "days", "dependencies", "executive_summary",
           "extension_inventory", "status_of"]
