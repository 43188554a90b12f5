"""Report section 3: the bottlenecks, one subsection per category of the review workflow, each unit of work
with every occurrence (file:line), the GPU API, the NPU alternative, a numbered plan, before/after code, the
workload with its basis, the impact scope and the status."""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from importlib import resources

from ascend_compat.migrate.effort import SECTIONS, Unit, data
from ascend_compat.migrate.model import Change
from ascend_compat.migrate.render import format_days, md_code
from ascend_compat.migrate.report_doc import Doc
from ascend_compat.migrate.report_sections import Ctx, days, status_of


@lru_cache(maxsize=1)
def plans() -> dict:
    """``data/report_plans.json``: per section, the steps and a before/after example."""
    text = (resources.files("ascend_compat.migrate") / "data" / "report_plans.json").read_text("utf-8")
    return json.loads(text)["sections"]


def _occurrences(ctx: Ctx, u: Unit) -> list[str]:
    seen: list[str] = []
    for where in [f"{ctx.rel(f.path)}:{f.line}" for f in u.findings] + u.refs:
        if where not in seen:
            seen.append(where)
    return seen


def _apis(u: Unit) -> str:
    apis = sorted({f.api for f in u.findings if f.api})
    if apis:
        return ", ".join(md_code(a) for a in apis)
    return u.label.split(":")[0]


def _steps(ctx: Ctx, u: Unit, changes: list[Change]) -> list[str]:
    where = _occurrences(ctx, u)
    first = md_code(where[0]) if where else "its definition"
    if u.kind in ("kernel", "kernel_complex"):
        name = u.label.split("`")[1] if "`" in u.label else u.label
        return [f"Record the kernel's inputs and outputs on the GPU as the reference ({first}).",
                f"Port it to Ascend C from the scaffold `kernels/{name}/` of the adaptation folder (tiling on the "
                "host, vector/cube code on the AI core).",
                "Register the operator with torch_npu and call it where the CUDA kernel was launched.",
                "Compare with the reference (`ascend-compat verify`) at the dtype's tolerance."]
    if u.kind == "kernel_variant":
        return [f"Record the variant's inputs and outputs on the GPU ({first}).",
                f"Add it as one more tiling case (dtype/layout) of {u.alternative}.",
                "Compare with the reference (`ascend-compat verify`) at the dtype's tolerance."]
    if u.family == "dsl_kernel":
        return [f"Record the kernel's inputs and outputs on the GPU as the reference ({first}).",
                f"Rewrite it in {u.alternative}: the GPU DSL's layouts, shared-memory pipeline and MMA atoms do "
                "not carry over; keep its Python entry point.",
                "Compare with the reference (`ascend-compat verify`) at the dtype's tolerance."]
    if u.kind == "export_without_kernel":
        name = u.label.split("`")[1] if "`" in u.label else "the export"
        return [f"Read what `{name}` ({first}) runs: its device code is a functor or a library call (cuBLAS, "
                "cuDNN, NCCL) shared with other exports.",
                "Reimplement it with torch / torch_npu operators (HCCL for collectives), or as an Ascend C operator "
                "registered under the same name in the extension's NPU build.",
                "Compare with the CUDA output at the dtype's tolerance."]
    if u.kind == "extension_replaced":
        decl = md_code(u.refs[0]) if u.refs else first
        return [f"Drop the extension's build entry ({decl}) from the NPU build.",
                "Point its Python call sites at the torch_npu operators of its kernels (section 3.1).",
                f"Re-test its {max(len(u.refs) - 1, 0)} Python use(s) (section 3.10)."]
    if u.family == "torch_npu_operator":
        return [f"Route the call ({first}) to `{u.alternative}`.",
                "Map arguments, layouts and quantization parameters (scales, zero points, group size).",
                "Compare with the CUDA output at the dtype's tolerance; keep the kernel as a fallback until it passes."]
    if u.kind == "extension":
        return [f"Build the extension for the NPU (declared at {first}) with torch_npu's extension builder; keep "
                "its module name so the Python side does not change.",
                f"Replace the CUDA includes, streams and guards in its C++ glue ({len(u.findings)} finding(s) below).",
                "Port its kernels (section 3.1 units that name this extension).",
                f"Re-test its {max(len(u.refs) - 1, 0)} Python use(s) (section 3.10)."]
    if u.kind in ("triton_kernel", "triton_kernel_sibling"):
        return ["Install triton-ascend in place of triton.", f"Compile the kernel ({first}) and retune its block "
                "sizes to the on-chip buffer; drop warp-count assumptions.", "Compare with the GPU output."]
    if u.kind == "triton_helper":
        asm = any("inline_asm" in (f.api or "") for f in u.findings)
        return [f"Port it with the Triton kernels that call it ({first}); it has no launch of its own.",
                "Replace its inline PTX (`inline_asm_elementwise`) with `tl` math: the AI core runs no PTX."
                if asm else "It compiles under triton-ascend as written; check its numerics with the callers.",
                "Compare the calling kernels' outputs with the GPU."]
    if u.status == "auto-fixable":
        mine = [c for c in changes if u.label.startswith(c.code + " ")]
        return [f"Review `ascend-compat port`'s {len(mine)} rewrite(s) of this rule (the ported copies in the "
                "adaptation folder, or `ascend-compat port --mode native --write`).", "Run the tests on the NPU."]
    if u.status == "shim":
        return ["Nothing to change while the code runs under the shim (`ascend-compat run`, "
                "`ascend_compat.activate()`).", f"To drop the shim later: {u.alternative}."]
    return [f"Change each occurrence: {u.alternative or 'see the rule'}.",
            f"{len(u.findings)} occurrence(s) in {len({f.path for f in u.findings})} file(s); the first at {first}.",
            "Re-run `ascend-compat check` and the tests."]


def _before_after(ctx: Ctx, u: Unit, section: str, changes: list[Change]) -> tuple[str, str, str]:
    """(where, before, after): a real rewrite of this unit's rule when port made one, else the example."""
    for c in changes:
        if u.label.startswith(c.code + " "):
            return f"{ctx.rel(c.path)}:{c.line}", c.before, c.after
    if u.kind in ("triton_kernel", "triton_kernel_sibling", "triton_helper"):
        line = _source_line(ctx, u)
        if line:
            return line[0], line[1], "# unchanged: compiled by triton-ascend; retune BLOCK sizes and num_warps at " \
                f"the launch\n{line[1]}"
    if u.family == "torch_npu_operator" and u.alternative:
        line = _source_line(ctx, u)
        if line:
            return line[0], line[1], f"# {u.alternative} (map the arguments as the plan says)\n" \
                f"out = {u.alternative.split(' ')[0]}(...)"
    if u.kind in ("kernel", "kernel_complex"):
        sig = _source_line(ctx, u, until="{")
        name = u.label.split("`")[1] if "`" in u.label else "kernel"
        if sig:
            return sig[0], sig[1], _ascend_c_entry(name)
    line = _source_line(ctx, u)
    if line:  # this unit's own code, with the change the rule asks for
        return line[0], line[1], _after_line(line[0], line[1], u.alternative)
    plan = plans().get(section, {})
    return "example", plan.get("before", ""), plan.get("after", "")


def _after_line(where: str, before: str, alternative: str) -> str:
    """``before`` with torch.cuda spelled torch.npu where the alternative is the torch.npu API, else ``before``
    under a comment naming the alternative (the edit a person makes)."""
    python = where.rsplit(":", 1)[0].endswith(".py")
    if python and "torch.npu" in alternative and "torch.cuda" in before:
        return before.replace("torch.cuda.", "torch.npu.").replace("CUDAGraph", "NPUGraph")
    mark = "#" if python else "//"
    return f"{mark} NPU: {alternative or 'see the plan above'}\n{before}"


def _ascend_c_entry(name: str) -> str:
    """The Ascend C shape a CUDA kernel takes: the scaffold's entry and its launch."""
    return (f"// kernels/{name}/op_kernel/{name}.cpp in the adaptation folder: one GM_ADDR per tensor argument\n"
            f'extern "C" __global__ __aicore__ void {name}(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)\n'
            "{\n    // CopyIn (GM -> UB) / Compute (vector or cube unit) / CopyOut (UB -> GM), tiled by the host\n}\n"
            f"// host, where the CUDA kernel was launched with <<<grid, block, smem, stream>>>:\n"
            f"ACLRT_LAUNCH_KERNEL({name})(blockDim, stream, x, y, workspace, tiling);")


def _source_line(ctx: Ctx, u: Unit, until: str = "") -> tuple[str, str] | None:
    """(file:line, text) of the unit's first location; with ``until``, the following lines up to the one
    holding it (a signature over several lines), at most 8."""
    import os

    from ascend_compat.migrate.scan import read_source

    for ref in u.refs + [f"{ctx.rel(f.path)}:{f.line}" for f in u.findings]:
        path, _, line = ref.rpartition(":")
        if not line.isdigit():
            continue
        data_, _ = read_source(os.path.join(ctx.root, path))
        lines = (data_ or b"").decode("utf-8", "replace").splitlines()
        n = int(line)
        if not 0 < n <= len(lines):
            continue
        end = n
        if until:
            while end < min(len(lines), n + 7) and until not in lines[end - 1]:
                end += 1
        elif path.endswith(".py") and lines[n - 1].lstrip().startswith("@"):  # a decorator: show what it decorates
            while end < min(len(lines), n + 3) and not lines[end - 1].lstrip().startswith(("def ", "class ")):
                end += 1
        text = "\n".join(ln.rstrip() for ln in lines[n - 1:end])
        indent = min((len(ln) - len(ln.lstrip()) for ln in lines[n - 1:end] if ln.strip()), default=0)
        return ref, "\n".join(ln[indent:] for ln in text.splitlines())
    return None


def _unit(doc: Doc, ctx: Ctx, u: Unit, section: str, changes: list[Change]) -> None:
    occ = _occurrences(ctx, u)
    files = {o.rsplit(":", 1)[0] for o in occ}
    modules = sorted({o.split("/")[0] for o in files})
    doc.h(4, f"Issue {u.id}: {u.label}")
    doc.ul([
        f"**Files:** {', '.join(md_code(o) for o in occ) or 'none'}",
        f"**GPU API:** {_apis(u)}",
        f"**NPU alternative:** {u.alternative or 'a rewrite (no direct counterpart)'}",
        f"**Impact scope:** {len(occ)} location(s) in {len(files)} file(s); modules "
        f"{', '.join(md_code(m) for m in modules) or 'none'}",
        f"**Estimated workload:** {days(u.low, u.high)} ({u.basis})",
        f"**Status:** {status_of(ctx, u)}",
    ])
    doc.p("**Migration plan:**")
    doc.ol(_steps(ctx, u, changes))
    where, before, after = _before_after(ctx, u, section, changes)
    if before or after:
        doc.p(f"**Before** ({where}):" if where != "example" else "**Before** (typical code of this category):")
        if where != "example":
            lang = "python" if where.rsplit(":", 1)[0].endswith(".py") else "cpp"
        else:
            lang = "python" if section not in ("kernels", "memory", "blas_dnn") else "cpp"
        doc.code(lang, before)
        doc.p("**After:**")
        doc.code("cpp" if u.kind in ("kernel", "kernel_complex") else lang, after)


def bottlenecks(doc: Doc, ctx: Ctx, title: str) -> None:
    doc.h(2, title)
    by_section: dict[str, list[Unit]] = defaultdict(list)
    for u in ctx.units:
        by_section[u.section].append(u)
    changes = sorted(ctx.changes or [], key=lambda c: (ctx.rel(c.path), c.line))
    doc.p("One subsection per category. Each issue is one unit of work (see the effort model); every occurrence "
          "is listed. Dependencies are in section 2.2.")
    for i, (key, name) in enumerate(SECTIONS, 1):
        units = sorted(by_section.get(key, []), key=lambda u: (-u.high, u.id))
        doc.h(3, f"3.{i} {name}")
        if key == "boundary":
            _boundary(doc, ctx)
        if not units:
            doc.p("No findings in this category.")
            continue
        lo, hi = sum(u.low for u in units), sum(u.high for u in units)
        doc.p(f"{len(units)} unit(s), {days(lo, hi)}. Plan for this category: "
              + " ".join(f"({n}) {s}" for n, s in enumerate(plans().get(key, {}).get("steps", []), 1)))
        for u in units:
            _unit(doc, ctx, u, key, changes)


def _boundary(doc: Doc, ctx: Ctx) -> None:
    """Each extension's exported functions and the Python lines that use them (costed in the extension's unit)."""
    for e in ctx.analysis.inventory.extensions:
        used: dict[str, list[str]] = defaultdict(list)
        for s in e.call_sites:
            used[s.name].append(s.where())
        names = [x.name for x in e.exports] + sorted(n for n in used if n not in {x.name for x in e.exports})
        rows = []
        for n in names:
            export = next((x for x in e.exports if x.name == n), None)
            rows.append([md_code(f"{e.name}.{n}") if n not in ("import",) and not n.startswith("import ") else
                         f"`import {e.name}`", md_code(export.where()) if export else "not exported by its sources",
                         ", ".join(md_code(w) for w in used.get(n, [])) or "no Python use found"])
        doc.p(f"**{md_code(e.name)}**: {len(e.exports)} exported function(s), {len(e.call_sites)} Python use(s); "
              "their port is part of the extension's unit in section 3.6.")
        doc.table(["Python name", "Defined at", "Used at"], rows)


def effort_basis(doc: Doc) -> None:
    """The unit table of data/effort.json, so every range in the report can be traced to its basis."""
    rows = [[k, format_days(v["low"]), format_days(v["high"]), v["basis"], v["source"]]
            for k, v in data()["units"].items()]
    doc.table(["Unit", "Low (days)", "High (days)", "Basis", "Source"], rows)


__all__ = ["bottlenecks", "effort_basis", "plans"]
