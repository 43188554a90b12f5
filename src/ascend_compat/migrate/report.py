"""``ascend-compat report``: the GPU→NPU review report, for a lead who may read only its first screen.

The report is built once as a small document tree (headings, paragraphs, lists, tables, code blocks) and
written as Markdown or as self-contained HTML from that same tree. Everything is sorted, so a given scan,
change list and date always give the same text.
"""

from __future__ import annotations

import datetime
import html
import os
import re
import shlex
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Optional

from ascend_compat import __version__
from ascend_compat.migrate.model import (
    DIFFICULTIES,
    LEVELS,
    Change,
    FileResult,
    FileScanned,
    FileSkipped,
    Finding,
    Rule,
    ScanResult,
    level_rank,
)
from ascend_compat.migrate.render import format_days, inventory_counts, md_cell, md_code

REPORT_FORMATS = ("markdown", "html")

STATUS_READY = "READY"
STATUS_SHIM = "READY WITH SHIM"
STATUS_WORK = "NEEDS WORK"
STATUS_MAJOR = "MAJOR REWRITE"

#: The change list is capped in the report; ``port --json`` has all of it.
MAX_CHANGES = 200
#: The API inventory appendix lists at most this many APIs.
MAX_APIS = 100

SECTION_TITLES = (
    "1. Executive summary",
    "2. Code structure",
    "3. Dependency compatibility",
    "4. Bottlenecks",
    "5. Adaptation list",
    "6. Verification plan",
    "7. Adaptation guide",
    "8. Follow-up work",
    "Appendix A. Files not scanned",
    "Appendix B. torch API inventory",
)

_FILE_TYPES = ("Python", "CUDA", "C/C++", "Manifests", "Other")
_CUDA_EXT = {".cu", ".cuh"}
_CXX_EXT = {".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".tpp"}
_PY_EXT = {".py", ".pyi", ".pyw"}

# What a person does about each category of finding; the rule's alternative (its own column) says with what.
_PLANS = {
    "device": "Replace the CUDA-specific call with the NPU one in the alternative; keep the device choice in one "
              "place.",
    "memory": "Use the NPU memory API or allocator setting in the alternative; re-tune it on the NPU.",
    "streams": "Move the stream, event or graph code to its `torch.npu` counterpart; re-check every "
               "synchronisation point.",
    "amp": "Use `torch.amp` with device type `npu`; re-check loss scaling and the fp16/bf16 choice.",
    "distributed": "Switch collectives and their settings to HCCL; test a multi-card launch early.",
    "attention": "Call the NPU fused attention (or SDPA) instead; match mask and layout conventions, then "
                 "compare outputs.",
    "custom_kernel": "Re-implement the kernel for Ascend (Ascend C, or triton-ascend for Triton) or express it "
                     "with torch ops; keep the CUDA version as the numerical reference.",
    "blas_dnn": "Replace the flag with its NPU counterpart or drop it; confirm the numerics did not move.",
    "profiling": "Switch to the NPU tool in the alternative (npu-smi, mstx, the torch_npu profiler).",
    "compile": "Check graph-mode support on this torch_npu line (torchair); stay eager where it is missing.",
    "api_support": "Use an op the NPU supports, or run this step on the CPU and measure the cost.",
    "dependency": "Swap the package for the alternative or its NPU build, and adapt the code that calls it.",
}

_LEVEL_WORDS = {"error": "blocked", "warning": "needs change", "note": "compatible"}

# Used on Python 3.9, which lacks sys.stdlib_module_names: the standard modules projects commonly import.
_STDLIB_FALLBACK = frozenset(
    "__future__ abc argparse array ast asyncio atexit base64 bisect builtins bz2 calendar collections "
    "concurrent contextlib copy csv ctypes dataclasses datetime decimal difflib enum errno functools gc "
    "getpass glob gzip hashlib heapq hmac html http importlib inspect io itertools json logging lzma math "
    "mmap multiprocessing numbers operator os pathlib pickle platform pprint queue random re sched secrets "
    "select shlex shutil signal socket sqlite3 ssl stat statistics string struct subprocess sys sysconfig "
    "tarfile tempfile textwrap threading time timeit tokenize traceback types typing unittest urllib uuid "
    "warnings weakref xml zipfile zlib".split()
)


# ------------------------------------------------------------------------------------------- document tree

Block = tuple  # ("h", level, text) | ("p", text) | ("ul"|"ol", items) | ("table", headers, rows) | ("code", lang, text)


@dataclass
class _Doc:
    """A report as blocks; inline text uses Markdown's `code` and **bold** only."""

    title: str
    blocks: list[Block] = field(default_factory=list)

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", level, text))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def ul(self, items: Iterable[str]) -> None:
        self.blocks.append(("ul", list(items)))

    def ol(self, items: Iterable[str]) -> None:
        self.blocks.append(("ol", list(items)))

    def table(self, headers: list[str], rows: list[list[str]]) -> None:
        self.blocks.append(("table", headers, rows))

    def code(self, lang: str, text: str) -> None:
        self.blocks.append(("code", lang, text))

    def to_markdown(self) -> str:
        out: list[str] = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                out.append("#" * b[1] + " " + b[2])
            elif kind == "p":
                out.append(b[1])
            elif kind in ("ul", "ol"):
                out.extend(
                    (f"{i}. " if kind == "ol" else "- ") + item.replace("\n", " ") for i, item in enumerate(b[1], 1)
                )
            elif kind == "table":
                out.append("| " + " | ".join(md_cell(c) for c in b[1]) + " |")
                out.append("|" + "|".join("---" for _ in b[1]) + "|")
                out.extend("| " + " | ".join(md_cell(c) for c in row) + " |" for row in b[2])
            elif kind == "code":
                fence = "````" if "```" in b[2] else "```"
                out.append(f"{fence}{b[1]}\n{b[2].rstrip()}\n{fence}")
            out.append("")
        return "\n".join(out).rstrip("\n") + "\n"

    def to_html(self) -> str:
        body: list[str] = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                body.append(f"<h{b[1]}>{_inline_html(b[2])}</h{b[1]}>")
            elif kind == "p":
                body.append(f"<p>{_inline_html(b[1])}</p>")
            elif kind in ("ul", "ol"):
                items = "".join(f"<li>{_inline_html(i)}</li>" for i in b[1])
                body.append(f"<{kind}>{items}</{kind}>")
            elif kind == "table":
                head = "".join(f"<th>{_inline_html(c)}</th>" for c in b[1])
                rows = "".join(
                    "<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>" for row in b[2]
                )
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
            elif kind == "code":
                lang, code = html.escape(b[1]), html.escape(b[2].rstrip())
                body.append(f'<pre><code class="language-{lang}">{code}</code></pre>')
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(self.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body)
            + "\n</body>\n</html>\n"
        )


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
    "table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #ccc;padding:.25rem .5rem;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}code{background:#f5f5f5;padding:0 .2rem}"
    "pre{background:#f5f5f5;padding:.75rem;overflow-x:auto}pre code{padding:0}"
)
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def _inline_html(text: str) -> str:
    """Escape ``text`` for HTML, turning Markdown code spans and bold into elements."""
    codes: list[str] = []

    def stash(m: re.Match) -> str:
        inner = m.group(2)
        if len(inner) > 1 and inner.startswith(" ") and inner.endswith(" "):
            inner = inner[1:-1]  # CommonMark strips the padding added around backticks
        codes.append(f"<code>{html.escape(inner, quote=False)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    # Code spans first (their content is literal), bold over the rest: bold may contain code spans.
    text = _CODE_SPAN.sub(stash, text.replace("\x00", ""))
    text = _BOLD.sub(r"<strong>\1</strong>", html.escape(text, quote=False))
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], text)


# ----------------------------------------------------------------------------------------------- analysis


@dataclass
class Bottleneck:
    """Findings of one rule on one API that a person has to handle (neither ``port`` nor the shim does)."""

    id: str
    rule: Rule
    api: str
    alternative: str
    findings: list[Finding]
    files: int
    effort_days: float

    @property
    def occurrences(self) -> int:
        return len(self.findings)


def _manual(f: Finding) -> bool:
    return not f.is_fixable and not f.rule.shim_handles


def _key(f: Finding) -> str:
    # What makes two findings "the same API": the API when the scanner names one, else the message.
    return f.api or f.message


def bottlenecks(result: ScanResult) -> list[Bottleneck]:
    """Manual findings grouped by (rule, API): hardest first, then the most occurrences, then most files.

    Manual means neither ``port`` nor the shim takes care of it; notes that cost no effort are left out.
    """
    groups: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in result.findings:
        # A note that costs nothing (e.g. a package that works as is) blocks nothing.
        if _manual(f) and (f.effective_level != "note" or f.effort_days > 0):
            groups[(f.code, _key(f))].append(f)
    items = []
    for (code, api), fs in groups.items():
        fs = sorted(fs, key=lambda f: (f.path, f.line, f.col))
        items.append((code, api, fs))
    items.sort(key=lambda it: (
        -DIFFICULTIES.index(it[2][0].rule.difficulty),
        -len(it[2]),
        -len({f.path for f in it[2]}),
        -max(level_rank(f.effective_level) for f in it[2]),
        it[0],
        it[1],
    ))
    return [
        Bottleneck(
            id=f"B-{i:03d}", rule=fs[0].rule, api=api, alternative=fs[0].effective_alternative, findings=fs,
            files=len({f.path for f in fs}), effort_days=round(sum(f.effort_days for f in fs), 2),
        )
        for i, (_code, api, fs) in enumerate(items, 1)
    ]


def overall_status(result: ScanResult) -> tuple[str, str]:
    """The one-word verdict and the sentence that justifies it."""
    findings = result.findings
    if not findings:
        return STATUS_READY, "no CUDA-specific code was found."
    major = [
        f for f in findings
        if (f.rule.difficulty == "hard" and level_rank(f.effective_level) >= level_rank("warning"))
        or (f.category in ("custom_kernel", "dependency") and f.effective_level == "error")
    ]
    if major:
        what = ", ".join(sorted({f.category.replace("_", " ") for f in major}))
        return STATUS_MAJOR, f"{len(major)} finding(s) need a rewrite rather than an edit ({what})."
    work = [f for f in findings if _manual(f) and level_rank(f.effective_level) >= level_rank("warning")]
    if work:
        return STATUS_WORK, f"{len(work)} finding(s) need a manual change; nothing needs a rewrite."
    return STATUS_SHIM, (
        "every warning and error is handled by the shim at runtime or rewritten by `port`; only notes remain."
    )


def _file_type(r: FileResult) -> str:
    ext = os.path.splitext(r.path)[1].lower()
    if r.language == "deps":
        return "Manifests"
    if ext in _CUDA_EXT:
        return "CUDA"
    if ext in _CXX_EXT or r.language == "cxx":
        return "C/C++"
    if ext in _PY_EXT or r.language == "python":
        return "Python"
    return "Other"


def _lines(r: FileResult) -> int:
    return 0 if isinstance(r, FileSkipped) else r.lines


def _stdlib() -> frozenset[str]:
    names = getattr(sys, "stdlib_module_names", None)
    return frozenset(names) if names else _STDLIB_FALLBACK


class _Paths:
    """Paths as the report shows them: POSIX, relative to the project root when inside it."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def rel(self, path: str) -> str:
        full = os.path.abspath(path)
        try:
            rel = os.path.relpath(full, self.root)
        except ValueError:  # another drive on Windows
            return PurePath(path).as_posix()
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return PurePath(path).as_posix()
        return PurePath(rel).as_posix()


def _loc(paths: _Paths, f: Finding) -> str:
    return f"{paths.rel(f.path)}:{f.line}"


def _where(paths: _Paths, fs: list[Finding]) -> str:
    more = f" (+{len(fs) - 1} more)" if len(fs) > 1 else ""
    return md_code(_loc(paths, fs[0])) + more


def _api_label(b: Bottleneck) -> str:
    return md_code(b.api) if b.findings[0].api else b.rule.name


# ------------------------------------------------------------------------------------------------ sections


def _executive_summary(doc: _Doc, result: ScanResult, blocks: list[Bottleneck]) -> None:
    findings = result.findings
    status, why = overall_status(result)
    n_files = len({f.path for f in findings})
    by_level = Counter(f.effective_level for f in findings)
    levels = ", ".join(f"{by_level[lv]} {lv}{'s' if by_level[lv] != 1 else ''}" for lv in reversed(LEVELS))
    fixable = sum(f.is_fixable for f in findings)
    shim = sum(f.rule.shim_handles for f in findings)
    manual = sum(_manual(f) for f in findings)
    effort = sum(f.effort_days for f in findings)
    inv = inventory_counts(result)
    n_apis = sum(b["apis"] for b in inv.values())
    scanned = sum(isinstance(f, FileScanned) for f in result.files)
    doc.h(2, SECTION_TITLES[0])
    doc.p(f"**Status: {status}**: {why}")
    items = [
        f"**Findings:** {len(findings)} in {n_files} file(s) ({levels})",
        f"**Auto-fixable by `ascend-compat port`:** {fixable}",
        f"**Handled at runtime by the shim (`ascend-compat run`):** {shim}",
        f"**Remaining manual:** {manual} (neither rewritten by `port` nor handled by the shim)",
        f"**Estimated effort:** {format_days(effort)} person-days",
        f"**torch APIs on torch_npu {result.torch_npu}:** {n_apis} used: {inv['supported']['apis']} supported, "
        f"{inv['unsupported']['apis']} unsupported, {inv['unknown']['apis']} unknown",
        f"**Scan:** {scanned} file(s) scanned, {len(result.failed)} failed, {len(result.skipped)} skipped"
        + (" (incomplete: see Appendix A)" if result.failed else ""),
    ]
    doc.ul(items)
    if blocks:
        doc.p("**Top blockers:**")
        doc.ol(
            f"{b.id} {_api_label(b)} ({b.rule.difficulty}, {b.occurrences}× in {b.files} file(s)): "
            f"{b.alternative or 'no NPU alternative known'}; ~{format_days(b.effort_days)} person-days"
            for b in blocks[:3]
        )
    else:
        doc.p("**Top blockers:** none; nothing needs a person before a first NPU run.")


def _code_structure(doc: _Doc, result: ScanResult, paths: _Paths) -> None:
    doc.h(2, SECTION_TITLES[1])
    stats: dict[str, list[int]] = {t: [0, 0, 0] for t in _FILE_TYPES}  # files, lines, findings
    for r in result.files:
        s = stats[_file_type(r)]
        s[0] += 1
        s[1] += _lines(r)
        s[2] += len(r.findings) if isinstance(r, FileScanned) else 0
    rows = [[t, str(s[0]), str(s[1]), str(s[2])] for t, s in stats.items() if s[0]]
    rows.append(["Total", str(len(result.files)), str(sum(_lines(r) for r in result.files)),
                 str(len(result.findings))])
    doc.table(["Type", "Files", "Lines", "Findings"], rows)

    # Main dependencies: third-party modules by how many files import them, plus flagged packages.
    local = set()
    for r in result.files:
        parts = PurePath(paths.rel(r.path)).parts
        if parts:
            local.add(os.path.splitext(parts[0])[0])
            if len(parts) > 1:
                local.add(os.path.splitext(parts[1])[0])  # src/<pkg>/ layouts
    stdlib = _stdlib()
    importers: Counter[str] = Counter()
    for r in result.files:
        if isinstance(r, FileScanned):
            for mod in set(r.imports):
                top = mod.split(".")[0]
                if top and top not in stdlib and top not in local:
                    importers[top] += 1
    flagged = sorted({
        f.api for f in result.findings
        if f.category == "dependency" and f.api and level_rank(f.effective_level) >= level_rank("warning")
    })
    deps = sorted(importers.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    if deps or flagged:
        parts = [f"{md_code(m)} ({n} file{'s' if n != 1 else ''})" for m, n in deps]
        text = "**Main dependencies:** " + (", ".join(parts) if parts else "none imported")
        if flagged:
            more = f" and {len(flagged) - 10} more" if len(flagged) > 10 else ""
            text += f". Flagged in section 3: {', '.join(md_code(p) for p in flagged[:10])}{more}"
        doc.p(text + ".")
    else:
        doc.p("**Main dependencies:** no third-party imports found.")

    # Core modules: directories when the project has several, else its files; most findings, then most lines.
    units: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # files, lines, findings, manual
    dirs = {PurePath(paths.rel(r.path)).parent.as_posix() for r in result.files}
    by_dir = len(dirs) > 1
    for r in result.files:
        rel = paths.rel(r.path)
        if by_dir:
            d = PurePath(rel).parent.as_posix()
            rel = "(root)" if d in ("", ".") else d + "/"
        s = units[rel]
        s[0] += 1
        s[1] += _lines(r)
        if isinstance(r, FileScanned):
            s[2] += len(r.findings)
            s[3] += sum(_manual(f) for f in r.findings)
    core = sorted(units.items(), key=lambda kv: (-kv[1][2], -kv[1][1], kv[0]))[:5]
    if core:
        doc.p(f"**Core modules** (the {'directories' if by_dir else 'files'} with the most findings, then the "
              "most lines):")
        doc.table(["Directory" if by_dir else "File", "Files", "Lines", "Findings", "Manual"],
                  [[md_code(d), *(str(x) for x in s)] for d, s in core])


def _dependencies(doc: _Doc, result: ScanResult, paths: _Paths) -> None:
    doc.h(2, SECTION_TITLES[2])
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        if f.category == "dependency":
            groups[_key(f)].append(f)
    if not groups:
        doc.p("No dependency findings: no manifest or import names a package with a known NPU problem.")
        return
    rows = []
    for pkg, fs in sorted(groups.items(), key=lambda kv: (
            -max(level_rank(f.effective_level) for f in kv[1]), kv[0])):
        fs.sort(key=lambda f: (f.path, f.line, f.col, f.code))
        worst = max((f.effective_level for f in fs), key=level_rank)
        codes = ", ".join(sorted({f.code for f in fs}))
        alts = sorted({f.effective_alternative for f in fs if f.effective_alternative})
        rows.append([md_code(pkg), f"{_LEVEL_WORDS[worst]} ({worst})", codes, fs[0].message,
                     _where(paths, fs), "; ".join(alts) or "none known"])
    doc.table(["Package", "Status", "Rule", "Finding", "Where", "Alternative"], rows)


def _bottlenecks(doc: _Doc, blocks: list[Bottleneck], paths: _Paths) -> None:
    doc.h(2, SECTION_TITLES[3])
    if not blocks:
        doc.p("No bottlenecks: every finding is rewritten by `port` or handled by the shim.")
        return
    doc.p("Findings that need a person, one row per rule and API, hardest first and then by how many places "
          "share the API. Effort is the estimate for all occurrences together.")
    doc.table(
        ["ID", "Location", "API", "NPU alternative", "Migration plan", "Difficulty", "Effort (person-days)",
         "Impact"],
        [
            [b.id, _where(paths, b.findings), _api_label(b), b.alternative or "none known",
             _PLANS.get(b.rule.category, "Change the code by hand."), b.rule.difficulty,
             format_days(b.effort_days), f"{b.occurrences}× in {b.files} file(s)"]
            for b in blocks
        ],
    )


def _adaptations(doc: _Doc, changes: Optional[list[Change]], paths: _Paths) -> None:
    doc.h(2, SECTION_TITLES[4])
    if changes is None:
        doc.p("`port` was not run for this report. `ascend-compat port --mode native PATH` shows the diff it "
              "would apply; add `--write` to apply it.")
        return
    if not changes:
        doc.p("`port` has nothing to rewrite automatically in this project.")
        return
    ordered = sorted(changes, key=lambda c: (paths.rel(c.path), c.line, c.code, c.before, c.after))
    per_rule = Counter(c.code for c in ordered)
    n_files = len({c.path for c in ordered})
    doc.p(f"`ascend-compat port --mode native` makes {len(ordered)} change(s) in {n_files} file(s) ("
          + ", ".join(f"{code} ×{n}" for code, n in sorted(per_rule.items())) + ").")
    doc.table(
        ["File", "Line", "Before", "After", "Rule"],
        [[md_code(paths.rel(c.path)), str(c.line), md_code(c.before) if c.before else "",
          md_code(c.after) if c.after else "", c.code] for c in ordered[:MAX_CHANGES]],
    )
    if len(ordered) > MAX_CHANGES:
        doc.p(f"... and {len(ordered) - MAX_CHANGES} more; `ascend-compat port --json PATH` lists them all.")


def _test_command(root: str) -> Optional[str]:
    """How to run the project's tests under the shim, or None when it has none we can see."""
    for d in ("tests", "test"):
        if os.path.isdir(os.path.join(root, d)):
            return f"ascend-compat run -m pytest -q {d}"
    for name in ("pytest.ini", "conftest.py"):
        if os.path.isfile(os.path.join(root, name)):
            return "ascend-compat run -m pytest -q"
    for name, marker in (("pyproject.toml", "[tool.pytest"), ("setup.cfg", "[tool:pytest]"), ("tox.ini", "[pytest]")):
        try:
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as fh:
                if marker in fh.read():
                    return "ascend-compat run -m pytest -q"
        except OSError:
            continue
    return None


def _entry_script(result: ScanResult, paths: _Paths) -> str:
    """A likely entry point at the top of the project, for the commands the guide shows."""
    top = {paths.rel(r.path) for r in result.files if r.language == "python"}
    for name in ("train.py", "main.py", "run.py", "inference.py", "infer.py", "app.py"):
        if name in top:
            return name
    return "your_script.py"


def _verification(doc: _Doc, project_root: str, date: datetime.date) -> None:
    doc.h(2, SECTION_TITLES[5])
    tests = _test_command(project_root)
    doc.ol([
        "**Environment:** `ascend-compat doctor` checks the driver, CANN, torch and torch_npu versions.",
        "**Import test:** `import torch, torch_npu` must work and see at least one NPU.",
        "**Static check:** `ascend-compat check . --fail-on error` must pass once the bottlenecks are done.",
        f"**Project tests:** `{tests}` runs the test suite on the NPU through the shim."
        if tests else "**Project tests:** none found; add a smoke test that runs one forward and backward step.",
        "**Precision:** `ascend-compat verify model ...` compares NPU outputs with the reference device.",
        "**Performance:** `ascend-compat bench model ...` measures throughput to compare with the GPU baseline.",
    ])
    script = [
        "#!/usr/bin/env bash",
        f"# Verification for {os.path.basename(os.path.abspath(project_root)) or project_root}: generated by "
        f"ascend-compat {__version__} on {date.isoformat()}.",
        "# MODEL: a factory of the model the project trains or serves (path/to/file.py:make_model or",
        "# package.module:fn) returning the model or (model, sample inputs); the last two steps need it.",
        "set -euo pipefail",
        f"cd {shlex.quote(project_root)}",
        "# An older ascend-compat may lack doctor, verify or bench: skip a step whose command is missing.",
        "optional() {",
        '  if ascend-compat "$1" --help >/dev/null 2>&1; then ascend-compat "$@";',
        "  else echo \"skipped: this ascend-compat has no '$1' command\"; fi",
        "}",
        "",
        'echo "== 1/6 environment"',
        "optional doctor",
        "",
        'echo "== 2/6 import test"',
        "python -c \"import torch, torch_npu; print(torch.__version__, torch_npu.__version__, "
        "torch.npu.is_available())\"",
        "",
        'echo "== 3/6 static check"',
        "ascend-compat check . --fail-on error",
        "",
        'echo "== 4/6 project tests"',
        tests or 'echo "no tests found: add a smoke test"',
        "",
        'if [ -n "${MODEL:-}" ]; then',
        '  echo "== 5/6 precision"',
        '  optional verify model "$MODEL"',
        '  echo "== 6/6 benchmark"',
        '  optional bench model --factory "$MODEL"',
        "else",
        '  echo "set MODEL=... to run the precision comparison and the benchmark"',
        "fi",
    ]
    doc.code("bash", "\n".join(script))


def _guide(doc: _Doc, result: ScanResult, entry: str) -> None:
    doc.h(2, SECTION_TITLES[6])
    doc.h(3, "Prerequisites")
    doc.ul([
        "Ascend driver and firmware installed; `npu-smi info` lists the cards.",
        "The CANN toolkit (and its kernels package) for that driver; "
        "`source /usr/local/Ascend/ascend-toolkit/set_env.sh` in every shell and job script.",
        f"torch_npu {result.torch_npu} with the exact torch version its release names (the CPU build of torch; "
        "torch_npu adds the NPU).",
        "ascend-compat installed in the same environment.",
    ])
    doc.h(3, "Steps")
    doc.ol([
        "Record a baseline on the GPU (loss curve, metrics, a few outputs) to compare against later.",
        f"Run unchanged code through the shim: `ascend-compat run {entry}` (add `--report` to list the CUDA "
        "calls it redirected).",
        "Rewrite what is mechanical: `ascend-compat port --mode native PATH` shows the diff; review it, then "
        "`ascend-compat port --mode native --write PATH`.",
        "Swap the dependencies of section 3 and work through the bottlenecks of section 4 from the top.",
        "Re-run `ascend-compat check PATH` until no errors remain, then the verification script of section 6.",
    ])
    doc.h(3, "Troubleshooting")
    doc.ul([
        "`ascend-compat error CODE` explains a CANN error code (such as `EZ9999`) and what usually causes it.",
        "`ascend-compat explain LOG` reads the log of a failed run and points at the likely cause.",
        "Ops that fall back to the CPU or reject a dtype (float64 is the usual one) show up as torch API "
        "findings; see Appendix B.",
        "The first iterations are slow while operators compile: warm up before timing.",
        "Select cards with `ASCEND_RT_VISIBLE_DEVICES`; HCCL timeouts are set with `HCCL_CONNECT_TIMEOUT`.",
    ])


def _follow_up(doc: _Doc, result: ScanResult, blocks: list[Bottleneck]) -> None:
    doc.h(2, SECTION_TITLES[7])
    findings = result.findings
    fixable = sum(f.is_fixable for f in findings)
    shim = sum(f.rule.shim_handles for f in findings)
    cats = {f.category for f in findings}

    def ids(difficulties: tuple[str, ...]) -> list[Bottleneck]:
        return [b for b in blocks if b.rule.difficulty in difficulties]

    def refs(bs: list[Bottleneck]) -> str:
        shown = ", ".join(b.id for b in bs[:8])
        return shown + (f" and {len(bs) - 8} more" if len(bs) > 8 else "")

    short = []
    if shim:
        short.append(f"Get a first NPU run under the shim ({shim} finding(s) handled at runtime).")
    if fixable:
        short.append(f"Apply `port` ({fixable} rewrite(s)) and review the diff.")
    easy = ids(("trivial", "easy"))
    if easy:
        short.append(f"Clear the easy manual items ({refs(easy)}; "
                     f"~{format_days(sum(b.effort_days for b in easy))} person-days).")
    short.append("Run the verification script (section 6) and fix what fails.")

    mid = []
    medium = ids(("medium",))
    if medium:
        mid.append(f"Port the medium items ({refs(medium)}; "
                   f"~{format_days(sum(b.effort_days for b in medium))} person-days).")
    if "distributed" in cats:
        mid.append("Validate multi-card and multi-node runs over HCCL.")
    if "compile" in cats:
        mid.append("Evaluate graph mode (torchair) where the code relies on `torch.compile`.")
    if shim:
        mid.append("Replace the remaining runtime redirection with native NPU code, so the shim becomes optional.")
    mid.append("Tune precision and performance against the GPU baseline (`verify`, `bench`, the torch_npu "
               "profiler).")

    long = []
    hard = ids(("hard",))
    if any(b.rule.category == "custom_kernel" for b in hard):
        long.append("Rewrite the custom CUDA kernels in Ascend C (or triton-ascend) and build them with "
                    f"NpuExtension ({refs([b for b in hard if b.rule.category == 'custom_kernel'])}).")
    if any(b.rule.category == "dependency" for b in hard):
        long.append("Replace the CUDA-only dependencies "
                    f"({refs([b for b in hard if b.rule.category == 'dependency'])}) or upstream NPU support.")
    other_hard = [b for b in hard if b.rule.category not in ("custom_kernel", "dependency")]
    if other_hard:
        long.append(f"Redesign the remaining hard items ({refs(other_hard)}).")
    long.append("Add an NPU job to CI: `ascend-compat check --fail-on error` on every change and the test suite "
                "on an NPU runner.")

    doc.h(3, "Short term (days)")
    doc.ul(short)
    doc.h(3, "Mid term (weeks)")
    doc.ul(mid)
    doc.h(3, "Long term")
    doc.ul(long)


def _appendices(doc: _Doc, result: ScanResult, paths: _Paths) -> None:
    doc.h(2, SECTION_TITLES[8])
    rows = [[md_code(paths.rel(f.path)), "failed", f.error] for f in sorted(result.failed, key=lambda f: f.path)]
    rows += [[md_code(paths.rel(f.path)), "skipped", f.reason] for f in sorted(result.skipped, key=lambda f: f.path)]
    if rows:
        doc.table(["File", "Status", "Reason"], rows)
    else:
        doc.p(f"None: all {len(result.files)} file(s) were scanned.")

    doc.h(2, SECTION_TITLES[9])
    inv = inventory_counts(result)
    doc.p(f"torch APIs the code uses, classified against torch_npu {result.torch_npu}: "
          + ", ".join(f"{b['apis']} {st} ({b['uses']} uses)" for st, b in inv.items()) + ".")
    order = {"unsupported": 0, "unknown": 1}
    listed = sorted(
        ((api, e) for api, e in result.api_inventory.items() if e.get("status") in order),
        key=lambda kv: (order[kv[1].get("status")], -int(kv[1].get("count", 0)), kv[0]),
    )
    if listed:
        doc.table(["API", "Status", "Uses"],
                  [[md_code(api), str(e.get("status")), str(e.get("count", 0))] for api, e in listed[:MAX_APIS]])
        if len(listed) > MAX_APIS:
            doc.p(f"... and {len(listed) - MAX_APIS} more; `ascend-compat check --format json` lists them all.")


# ------------------------------------------------------------------------------------------------ entry points


def report_filename(date: datetime.date, fmt: str = "markdown") -> str:
    """``CodeReview_Results_YYYY-MM-DD.md`` (``.html`` for the HTML format)."""
    return f"CodeReview_Results_{date.isoformat()}.{'html' if fmt == 'html' else 'md'}"


def build_report(
    result: ScanResult,
    changes: Optional[list[Change]],
    project_root: str,
    date: Optional[datetime.date] = None,
    fmt: str = "markdown",
) -> str:
    """The review report as Markdown (default) or self-contained HTML.

    ``changes`` is what ``port`` changes (see :func:`ascend_compat.migrate.port.planned_changes`); None says
    port was not run. ``project_root`` anchors relative paths and is where the project's tests are looked for.
    """
    if fmt not in REPORT_FORMATS:
        raise ValueError(f"unknown report format {fmt!r} (expected one of {', '.join(REPORT_FORMATS)})")
    date = date or datetime.date.today()
    paths = _Paths(project_root)
    name = os.path.basename(paths.root) or paths.root
    blocks = bottlenecks(result)
    entry = _entry_script(result, paths)
    title = f"GPU→NPU migration review: {name}"
    doc = _Doc(title)
    doc.h(1, title)
    doc.p(f"{date.isoformat()} · ascend-compat {__version__} · target torch_npu {result.torch_npu} · "
          f"root {md_code(project_root)}")
    _executive_summary(doc, result, blocks)
    _code_structure(doc, result, paths)
    _dependencies(doc, result, paths)
    _bottlenecks(doc, blocks, paths)
    _adaptations(doc, changes, paths)
    _verification(doc, project_root, date)
    _guide(doc, result, entry)
    _follow_up(doc, result, blocks)
    _appendices(doc, result, paths)
    return doc.to_html() if fmt == "html" else doc.to_markdown()


__all__ = [
    "SECTION_TITLES",
    "Bottleneck",
    "bottlenecks",
    "build_report",
    "overall_status",
    "report_filename",
]
