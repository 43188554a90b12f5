"""Report sections 4 to 7: adaptation code list, verification results, adaptation guide with troubleshooting,
follow-up work; and the appendices."""

from __future__ import annotations

from collections import Counter, defaultdict

from ascend_compat.migrate.render import format_days, inventory_counts, md_code
from ascend_compat.migrate.report_bottlenecks import effort_basis
from ascend_compat.migrate.report_doc import Doc
from ascend_compat.migrate.report_sections import Ctx, adapted, days

MAX_APIS = 100


def adaptation_list(doc: Doc, ctx: Ctx, title: str) -> None:
    doc.h(2, title)
    doc.h(3, "4.1 New files")
    ad = ctx.adaptation
    if ad is None:
        doc.p("No adaptation folder was written for this report (`--no-adapt`); `ascend-compat report` writes one "
              "by default.")
    else:
        doc.p(f"Written to {md_code(ad['folder'])} (never over the repository's own files).")
        doc.table(["File", "Function", "Status"],
                  [[md_code(f["path"]), f["function"], f["status"]] for f in ad["files"]])
        if ad.get("kept"):  # a re-run: files the user added or edited there were carried over, not regenerated
            doc.p("Kept from the previous folder (added or edited by you, carried over unchanged): "
                  + ", ".join(md_code(k) for k in ad["kept"]) + ".")
    doc.h(3, "4.2 Modified files")
    changes = ctx.changes or []
    if not changes:
        doc.p("`ascend-compat port` has nothing to rewrite mechanically in this repository."
              if ctx.changes is not None else "`port` was not run for this report.")
        return
    per_file: dict[str, Counter] = defaultdict(Counter)
    for c in changes:
        per_file[ctx.rel(c.path)][c.code] += 1
    ported = set((ad or {}).get("ported", []))
    rows = []
    for path in sorted(per_file):
        what = ", ".join(f"{code} ×{n}" for code, n in sorted(per_file[path].items()))
        status = f"✅ ported copy `ported/{path}`" if path in ported else "⚠️ pending (`ascend-compat port --write`)"
        rows.append([md_code(path), f"{sum(per_file[path].values())} rewrite(s): {what}", status])
    doc.table(["File", "Modification", "Status"], rows)
    doc.p("Every rewrite, line by line:")
    doc.table(["Location", "Before", "After", "Rule"],
              [[md_code(f"{ctx.rel(c.path)}:{c.line}"), md_code(c.before) if c.before else "",
                md_code(c.after) if c.after else "", c.code]
               for c in sorted(changes, key=lambda c: (ctx.rel(c.path), c.line, c.code))])


def _verification_run(doc: Doc, ctx: Ctx, v: dict) -> None:
    doc.h(3, "5.1 Environment verification")
    doc.table(["Item", "Value"], [[k, str(val)] for k, val in v["environment"].items()])
    doc.h(3, "5.2 Function verification")
    imp = v["imports"]
    failed = [m for m in imp["modules"] if not m["ok"]]
    doc.p(f"**Import of every module of the repository** on {v.get('device', 'the NPU')}: "
          f"{imp['passed']} passed, {len(failed)} failed, {imp.get('not_run', 0)} not run "
          f"({format_days(imp['seconds'])} s).")
    scripts = imp.get("scripts_not_imported") or {}
    if scripts:  # a flat repository's train.py: why it is not in the count
        doc.p("Not imported, because importing a script runs it: "
              + ", ".join(f"{md_code(name + '.py')} ({why})" for name, why in scripts.items())
              + ". Top-level files are imported only when they hold nothing but imports and definitions.")
    if failed:
        doc.table(["Module", "Result", "Error"], [[md_code(m["module"]), "❌ failed", m["error"]] for m in failed])
    passed = [m["module"] for m in imp["modules"] if m["ok"]]
    if passed:
        doc.p("Imported: " + ", ".join(md_code(m) for m in passed) + ".")
    t = v["tests"]
    if t.get("command"):
        doc.p(f"**Test suite:** `{t['command']}`: {t['passed']} passed, {t['failed']} failed, {t['errors']} "
              f"error(s), {t['skipped']} skipped in {format_days(t['seconds'])} s"
              + (f" (stopped at the {t['budget_s']} s budget)" if t.get("timed_out") else "") + ".")
        if t.get("crash"):
            doc.p(f"❌ {t['crash']}.")
        if t.get("failures"):
            doc.table(["Cause (first line of the error)", "Tests", "Result"], _failures_by_cause(t["failures"]))
    else:
        doc.p(f"**Test suite:** {t.get('note', 'none found')}.")
    _precision(doc, v["precision"])


def _precision(doc: Doc, p: dict) -> None:
    doc.h(3, "5.3 Precision verification")
    doc.p(p["note"])
    ops = p["ops"]
    groups = ", ".join(ops.get("groups", []))
    doc.p(f"**Operators of the op groups the repository's torch calls fall in** ({groups}; `{ops['command']}`; "
          "NPU result against a float64 CPU golden, |actual - golden| <= atol + rtol·|golden|):")
    if ops["rows"]:
        c = ops.get("counts", {})
        doc.table(["Operator", "Dtypes", "Max abs error (worst dtype)", "Tolerance", "Result"], ops["rows"])
        doc.p(f"{c.get('pass', 0)} checks passed, {c.get('fail', 0)} failed, {c.get('error', 0)} raised, "
              f"{c.get('skipped', 0)} skipped" + (f"; ran on the CPU instead: {ops['fallback']}"
                                                   if ops.get("fallback") else "") + ".")
    else:
        doc.p(f"The operator checks {ops['note']}.")
    m = p["models"]
    doc.p("**Models the repository builds by itself** (zero-argument `make_model`-style factories, and `nn.Module` "
          "classes whose required arguments are only sizes, given small values; inputs inferred from the first "
          "layer; every layer's output on the NPU compared with the CPU, same weights and inputs):")
    if m["rows"]:
        doc.table(["Model", "Inputs", "Max abs diff (outputs)", "Tolerance", "Result"], m["rows"])
    else:
        doc.p((f"None of the {m['candidates']} candidate(s) below ran on the CPU with an inferred input"
               if m["candidates"] else "No class or factory in the importable modules can be built without "
               "arguments other than sizes") + (f"; {m['note']}" if m["note"] else "")
              + ". Pass one with `report --verify --model MODULE:FACTORY` (a function returning the model, or "
              "`(model, inputs)`).")
    if m["skipped"]:
        doc.table(["Not compared", "Why"], m["skipped"])


def _failures_by_cause(failures: list[list[str]]) -> list[list[str]]:
    """One row per distinct error, most frequent first; parametrized cases of one test counted, not repeated."""
    groups: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row in failures:
        name, result, why = [*row, "", ""][:3]
        groups[(why or "no message", result)][name.split("[", 1)[0]] += 1
    rows = []
    for (why, result), tests in sorted(groups.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        listed = ", ".join(md_code(n) + (f" ×{k}" if k > 1 else "") for n, k in sorted(tests.items()))
        rows.append([md_code(why), f"{sum(tests.values())}: {listed}", result])
    return rows


def verification(doc: Doc, ctx: Ctx, title: str) -> None:
    doc.h(2, title)
    v = ctx.verification
    if v is None:
        doc.p("Not run for this report. `ascend-compat report --verify` imports every module of the repository "
              "and runs its tests (within a time budget) on the NPU, or on the simulated NPU where there is none, "
              "and writes the results here; the adaptation folder's `verify_npu.py` runs the same checks.")
    else:
        _verification_run(doc, ctx, v)
    doc.h(3, "5.4 Issue summary")
    done = [u for u in ctx.units if adapted(ctx, u)]
    rest = [u for u in ctx.units if not adapted(ctx, u)]
    sev = Counter("High" if u.high >= 5 else "Medium" if u.high >= 1 else "Low" for u in rest)
    rows = [["Resolved", str(len(done)), "-"]]
    rows += [["Unresolved", str(sev[s]), s] for s in ("High", "Medium", "Low") if sev[s]]
    doc.table(["Issue type", "Quantity", "Severity"], rows)
    doc.p("Severity: High = a unit that may take 5 or more person-days, Medium 1 to 5, Low under 1.")


def guide(doc: Doc, ctx: Ctx, title: str) -> None:
    doc.h(2, title)
    ad = ctx.adaptation
    folder = ad["folder"] if ad else "ascend_adaptation"
    doc.h(3, "6.1 Prerequisites")
    doc.code("bash", "\n".join([
        "# 1. Ascend driver, firmware and the CANN toolkit (hiascend.com), then in every shell:",
        "source /usr/local/Ascend/ascend-toolkit/set_env.sh",
        f"# 2. torch (CPU build) and the torch_npu release that pins it (torch_npu {ctx.result.torch_npu}.x)",
        f"pip install -r {folder}/requirements-npu.txt",
        "# 3. Check the installation",
        "python3 -c \"import torch, torch_npu; print('NPU available:', torch.npu.is_available())\"",
        "ascend-compat doctor",
    ]))
    doc.h(3, "6.2 Quick adaptation steps")
    doc.ol([
        f"Install the NPU requirements: `pip install -r {folder}/requirements-npu.txt`.",
        f"Use the ported copies in `{folder}/ported/` (or apply them: `ascend-compat port --mode native --write .`) "
        f"and import `{folder}/npu_compat.py` where the code picks its device.",
        "Work through the pending units of section 3, largest first; build each kernel from its scaffold in "
        f"`{folder}/kernels/`.",
        f"Run the verification: `python {folder}/verify_npu.py` (uses the simulated NPU when no NPU is present).",
        "Compare your real model layer by layer on the NPU machine: `ascend-compat verify model "
        "package.module:make_model` (NPU against the CPU; `make_model` is a function of yours returning the model "
        "or `(model, inputs)`); section 5.3 lists the models the report's smoke test built by itself.",
    ])
    doc.h(3, "6.3 Common troubleshooting")
    rows = [[f"`ImportError` for `{e.name}`", f"the compiled extension `{e.name}` is not built for the NPU",
             f"port and rebuild it (section 3.6; {len(e.kernels)} kernel(s))"]
            for e in ctx.analysis.inventory.extensions]
    v = ctx.verification or {}
    errors = Counter(m["error"].split(":")[0] for m in v.get("imports", {}).get("modules", []) if not m["ok"])
    rows += [[f"`{err}` while importing ({n} module(s))", "seen in section 5.2", "see the failing modules there"]
             for err, n in errors.most_common(5) if err]
    rows += [
        ["`import torch_npu` fails", "CANN not installed or `set_env.sh` not sourced", "source set_env.sh; "
         "`ascend-compat doctor`"],
        ["Operator not supported (falls back to CPU or raises)", "the NPU lacks the operator or dtype",
         "use the torch_npu operator in the alternative; `ascend-compat audit` lists the ops a run used"],
        ["Out of memory", "batch size or KV cache sized for the GPU", "reduce batch size; re-size caches "
         "(section 3.9)"],
        ["Precision not up to standard", "fp16 accumulation or AMP settings", "prefer bf16; check section 3.7; "
         "`ascend-compat verify` finds the first diverging layer"],
        ["A CANN error code (EZ9999, EL0004…)", "runtime or operator failure", "`ascend-compat error CODE` "
         "explains it; `ascend-compat explain LOG` reads a whole log"],
    ]
    doc.table(["Issue", "Cause", "Solution"], rows)


def follow_up(doc: Doc, ctx: Ctx, title: str) -> None:
    doc.h(2, title)
    rest = sorted((u for u in ctx.units if not adapted(ctx, u)), key=lambda u: (u.high, u.id))
    short = [u for u in rest if u.high <= 2 and u.kind not in ("kernel", "kernel_complex", "extension")]
    # Re-blocked kernels, DSL rewrites and reimplemented CUDA-only dependencies are long-term work at any size.
    mid = [u for u in rest if u not in short and u.high <= 5
           and u.kind not in ("kernel_complex", "dsl_kernel", "dependency_rewrite")]
    long = [u for u in rest if u not in short and u not in mid]

    def line(us: list) -> str:
        return ", ".join(u.id for u in us) + f" ({days(sum(u.low for u in us), sum(u.high for u in us))})"

    doc.h(3, "7.1 Short term (within 1 week)")
    doc.ul(["Run the ported copies under the shim on the NPU and fix what section 5 shows failing."]
           + ([f"Clear the small units: {line(short)}."] if short else []))
    doc.h(3, "7.2 Mid term (within 1 month)")
    doc.ul(([f"Port the medium units: {line(mid)}."] if mid else [])
           + ["Compare precision and throughput against the GPU baseline (`verify`, `bench`)."])
    doc.h(3, "7.3 Long term")
    doc.ul(([f"Rewrite the large units (complex and DSL kernels, CUDA-only dependencies): {line(long)}."]
            if long else [])
           + ["Add an NPU job to CI: `ascend-compat check --fail-on error` and the test suite on an NPU runner."])


def appendices(doc: Doc, ctx: Ctx, titles: tuple[str, str, str]) -> None:
    result = ctx.result
    doc.h(2, titles[0])
    rows = [[md_code(ctx.rel(f.path)), "failed", f.error] for f in sorted(result.failed, key=lambda f: f.path)]
    rows += [[md_code(ctx.rel(f.path)), "skipped", f.reason] for f in sorted(result.skipped, key=lambda f: f.path)]
    if rows:
        doc.table(["File", "Status", "Reason"], rows)
    else:
        doc.p(f"None: all {len(result.files)} file(s) were scanned.")
    doc.h(2, titles[1])
    inv = inventory_counts(result)
    doc.p(f"torch APIs the code uses, classified against torch_npu {result.torch_npu}: "
          + ", ".join(f"{b['apis']} {st} ({b['uses']} uses)" for st, b in inv.items()) + ".")
    order = {"unsupported": 0, "unknown": 1}
    listed = sorted(((api, e) for api, e in result.api_inventory.items() if e.get("status") in order),
                    key=lambda kv: (order[str(kv[1].get("status"))], -int(kv[1].get("count", 0)), kv[0]))
    if listed:
        doc.table(["API", "Status", "Uses"],
                  [[md_code(api), str(e.get("status")), str(e.get("count", 0))] for api, e in listed[:MAX_APIS]])
        if len(listed) > MAX_APIS:
            doc.p(f"{len(listed) - MAX_APIS} more are in `ascend-compat check --format json` (`api_inventory`).")
    doc.h(2, titles[2])
    effort_basis(doc)


__all__ = ["adaptation_list", "appendices", "follow_up", "guide", "verification"]
