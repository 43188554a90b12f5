"""Values every part of the migration analyzer shares: rules, findings, edits and per-file results.

Results are values (LibCST's TransformSuccess/Failure/Skip): a file that cannot be read or parsed becomes a
``FileFailed`` in the results and the scan goes on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, TypedDict, Union

#: Finding categories, in the order reports list them.
CATEGORIES = (
    "device",
    "memory",
    "streams",
    "amp",
    "distributed",
    "attention",
    "custom_kernel",
    "blas_dnn",
    "profiling",
    "compile",
    "api_support",
    "dependency",
)

#: Levels, weakest first. ``--fail-on LEVEL`` fails when a finding of that level or a stronger one exists.
LEVELS = ("note", "warning", "error")

#: Difficulty of the migration work a finding asks for, easiest first.
DIFFICULTIES = ("trivial", "easy", "medium", "hard")


def level_rank(level: str) -> int:
    return LEVELS.index(level)


@dataclass(frozen=True)
class Rule:
    """One scanner rule: a stable code and everything a report says about what it finds.

    ``effort_days`` is the person-days one occurrence costs to migrate by hand (0 when ``port`` fixes it or
    the shim handles it and nothing needs review).
    """

    code: str
    name: str
    category: str
    level: str
    message: str
    alternative: str
    shim_handles: bool
    fixable: bool
    difficulty: str
    effort_days: float
    language: str = "python"  # python | cxx | deps

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"rule {self.code}: unknown category {self.category!r}")
        if self.level not in LEVELS:
            raise ValueError(f"rule {self.code}: unknown level {self.level!r}")
        if self.difficulty not in DIFFICULTIES:
            raise ValueError(f"rule {self.code}: unknown difficulty {self.difficulty!r}")


#: Every rule of every language, by code. Rule modules add theirs with :func:`register_rules`.
RULES: dict[str, Rule] = {}


def register_rules(*rules: Rule) -> None:
    for rule in rules:
        old = RULES.get(rule.code)
        if old is not None and old != rule:
            raise ValueError(f"rule code {rule.code} registered twice with different content")
        RULES[rule.code] = rule


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` (character offsets into the file's text) with ``replacement``."""

    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Finding:
    """One occurrence of a rule in a file. Lines and columns are 1-based (as SARIF and editors count)."""

    code: str
    path: str
    line: int
    col: int
    message: str
    api: str = ""
    end_line: int = 0
    end_col: int = 0
    #: Overrides of the rule's defaults for this occurrence (e.g. an API without an NPU equivalent).
    alternative: Optional[str] = None
    level: Optional[str] = None
    fixable: Optional[bool] = None
    #: The edits that fix it (empty when ``port`` cannot fix this occurrence).
    edits: tuple[Edit, ...] = ()

    @property
    def rule(self) -> Rule:
        return RULES[self.code]

    @property
    def category(self) -> str:
        return self.rule.category

    @property
    def effective_level(self) -> str:
        return self.level or self.rule.level

    @property
    def effective_alternative(self) -> str:
        return self.alternative if self.alternative is not None else self.rule.alternative

    @property
    def is_fixable(self) -> bool:
        return bool(self.edits) if self.fixable is None else self.fixable

    @property
    def effort_days(self) -> float:
        """Person-days this occurrence costs by hand: none when ``port`` fixes it."""
        return 0.0 if self.is_fixable else self.rule.effort_days

    def to_dict(self) -> FindingDict:
        rule = self.rule
        return {
            "code": self.code,
            "rule": rule.name,
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line or self.line,
            "end_col": self.end_col or self.col,
            "level": self.effective_level,
            "category": rule.category,
            "message": self.message,
            "api": self.api,
            "alternative": self.effective_alternative,
            "shim_handles": rule.shim_handles,
            "fixable": self.is_fixable,
            "difficulty": rule.difficulty,
            "effort_days": self.effort_days,
        }


class FindingDict(TypedDict):
    """:meth:`Finding.to_dict`, one finding of ``check --json``."""

    code: str
    rule: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    level: str
    category: str
    message: str
    api: str
    alternative: str
    shim_handles: bool
    fixable: bool
    difficulty: str
    effort_days: float


@dataclass
class FileScanned:
    """A file that was read and analysed."""

    path: str
    language: str  # python | cxx | deps
    lines: int
    findings: list[Finding] = field(default_factory=list)
    #: Qualified ``torch.*`` names the file uses, with their count (python only).
    apis: dict[str, int] = field(default_factory=dict)
    #: Top-level modules the file imports (python only).
    imports: list[str] = field(default_factory=list)
    status: str = "scanned"


@dataclass
class FileFailed:
    """A file that could not be read or parsed: reported, never rewritten."""

    path: str
    language: str
    error: str
    lines: int = 0
    status: str = "failed"


@dataclass
class FileSkipped:
    """A file deliberately not analysed (binary, too large, no parser installed...)."""

    path: str
    language: str
    reason: str
    status: str = "skipped"


FileResult = Union[FileScanned, FileFailed, FileSkipped]


def result_to_dict(result: FileResult) -> dict:
    # Built by hand: dataclasses.asdict deep-copies recursively and dominated JSON output on large repositories.
    data = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    if isinstance(result, FileScanned):
        data["findings"] = [f.to_dict() for f in result.findings]
        data["apis"] = dict(result.apis)
        data["imports"] = list(result.imports)
    return data


@dataclass
class ScanResult:
    """Everything one ``check`` run found, over all files."""

    roots: list[str]
    files: list[FileResult]
    torch_npu: str  # the torch_npu line APIs were classified against, e.g. "2.8"
    elapsed_s: float = 0.0
    #: Per qualified torch API: {"count": n, "status": supported|unsupported|unknown}.
    api_inventory: dict[str, dict] = field(default_factory=dict)
    #: The project's own distributions and packages (see ``migrate.firstparty``); detected from ``roots`` when
    #: the result is built unless given. Pass ``{}`` to skip detection.
    first_party: Optional[dict] = None
    #: Dependency findings removed because they name the project's own package.
    first_party_dropped: list[Finding] = field(default_factory=list)
    #: Folders of ascend-compat's own output that discovery left out (``discover.own_output_skipped``).
    own_output_skipped: list[str] = field(default_factory=list)
    #: Lazily computed project analysis (extension inventory, effort model): ``migrate.project.analyze``.
    analysis_cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.first_party is None:
            from ascend_compat.migrate.project import apply_first_party

            apply_first_party(self)

    @property
    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        for f in self.files:
            if isinstance(f, FileScanned):
                out.extend(f.findings)
        return out

    @property
    def failed(self) -> list[FileFailed]:
        return [f for f in self.files if isinstance(f, FileFailed)]

    @property
    def skipped(self) -> list[FileSkipped]:
        return [f for f in self.files if isinstance(f, FileSkipped)]

    def worst_level(self) -> Optional[str]:
        levels = [f.effective_level for f in self.findings]
        return max(levels, key=level_rank) if levels else None

    def analysis(self) -> dict:
        """First-party packages, the extension inventory and the effort model, as plain data."""
        from ascend_compat.migrate.project import analyze

        return analyze(self).to_dict()

    def to_dict(self) -> dict:
        findings = self.findings
        extra = self.analysis()
        effort = extra["effort"]
        return {
            "schema_version": 1,
            "tool": "ascend-compat check",
            "roots": self.roots,
            "torch_npu": self.torch_npu,
            "elapsed_s": round(self.elapsed_s, 3),
            "summary": {
                "files": len(self.files),
                "scanned": sum(isinstance(f, FileScanned) for f in self.files),
                "failed": len(self.failed),
                "skipped": len(self.skipped),
                "lines": sum(f.lines for f in self.files if not isinstance(f, FileSkipped)),
                "findings": len(findings),
                "fixable": sum(f.is_fixable for f in findings),
                "shim_handles": sum(f.rule.shim_handles for f in findings),
                # Per unit of work (see migrate.effort): the midpoint, with the range beside it.
                "effort_days": round((effort["low"] + effort["high"]) / 2, 2),
                "effort_range": [effort["low"], effort["high"]],
                "by_level": {lv: sum(f.effective_level == lv for f in findings) for lv in LEVELS},
                "by_category": {c: sum(f.category == c for f in findings) for c in CATEGORIES},
            },
            "files": [result_to_dict(f) for f in self.files],
            "api_inventory": self.api_inventory,
            "first_party": {**extra["first_party"], "dropped_findings": [
                f"{f.path}:{f.line} {f.code} {f.api}" for f in self.first_party_dropped]},
            "extensions": extra["extensions"],
            "effort": effort,
            "own_output_skipped": self.own_output_skipped,
        }


@dataclass(frozen=True)
class Change:
    """One line of ``port``'s change list."""

    path: str
    line: int
    before: str
    after: str
    code: str  # the rule whose fix made the change, or "SHIM" for the inserted activation

    def to_dict(self) -> ChangeDict:
        return {"path": self.path, "line": self.line, "before": self.before, "after": self.after, "code": self.code}


class ChangeDict(TypedDict):
    """:meth:`Change.to_dict`."""

    path: str
    line: int
    before: str
    after: str
    code: str
