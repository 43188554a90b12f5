"""``port``: apply the scanner's fixes (``native``) or insert the runtime shim's activation (``shim``).

Edits are character spans computed from the parser's positions, so formatting and comments outside them stay
byte-identical. Every rewrite is parsed again before it is offered; one that would not parse is reported and the
file is left alone. Porting the output again changes nothing.
"""

from __future__ import annotations

import ast
import bisect
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Optional, Union

from ascend_compat.migrate import apidb
from ascend_compat.migrate.atomic import write_atomic
from ascend_compat.migrate.discover import discover
from ascend_compat.migrate.linediff import unified_diff
from ascend_compat.migrate.model import Change, Edit, FileFailed, FileScanned, FileSkipped, Finding, ScanResult
from ascend_compat.migrate.port_insert import has_activation, insert, insertion
from ascend_compat.migrate.pyscan import split_lines
from ascend_compat.migrate.scan import read_source

__all__ = ["PortFailure", "PortResult", "PortSkip", "PortSuccess", "apply_edits", "planned_changes", "port_paths",
           "port_source", "texts_with_fixes", "write_atomic"]

MODES = ("native", "shim")
SHIM_LINES = ("import ascend_compat", "ascend_compat.activate()")
NATIVE_IMPORT = "import torch_npu  # noqa: F401  (registers the npu device; added by ascend-compat port)"


@dataclass
class PortSuccess:
    """A file ``port`` changed: the new text and the change list."""

    path: str
    original: str
    text: str
    changes: list[Change] = field(default_factory=list)
    unfixed: list[Finding] = field(default_factory=list)

    def diff(self, label: Optional[str] = None) -> str:
        name = label or self.path
        # Linear in the file's length (difflib's is quadratic: 14 minutes for a 2 MB generated file).
        return "".join(unified_diff(
            split_lines(self.original), split_lines(self.text),
            fromfile=f"a/{name}", tofile=f"b/{name}",
        ))


@dataclass
class PortSkip:
    """A file with nothing ``port`` can change (it may still have findings that need a person)."""

    path: str
    reason: str
    unfixed: list[Finding] = field(default_factory=list)
    #: Not read at all (a FIFO or device, over a size, memory or time budget), as opposed to read and unchanged.
    unread: bool = False


@dataclass
class PortFailure:
    """A file ``port`` could not handle; it is never written."""

    path: str
    error: str


PortResult = Union[PortSuccess, PortSkip, PortFailure]


def _chosen(findings: list[Finding]) -> list[tuple[Edit, str]]:
    """The edits applied: non-overlapping, first come first served (by position)."""
    chosen: list[tuple[Edit, str]] = []
    last_end = -1
    for edit, code in sorted(((e, f.code) for f in findings for e in f.edits), key=lambda x: (x[0].start, x[0].end)):
        if edit.start < last_end:
            continue  # an overlapping edit from another rule: the first one wins
        chosen.append((edit, code))
        last_end = max(last_end, edit.end)
    return chosen


def apply_edits(text: str, findings: list[Finding], path: str) -> tuple[str, list[Change]]:
    """Apply every finding's edits (non-overlapping, first come first served) and list the changes per line."""
    return _apply(text, _chosen(findings), path)


def _apply(text: str, chosen: list[tuple[Edit, str]], path: str) -> tuple[str, list[Change]]:
    if not chosen:
        return text, []
    # Change list: one entry per original line touched (line starts computed once: files can be long).
    lines = split_lines(text)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    by_line: dict[int, list[tuple[Edit, str]]] = {}
    for edit, code in chosen:
        by_line.setdefault(bisect.bisect_right(starts, edit.start), []).append((edit, code))
    changes = []
    for lineno, items in sorted(by_line.items()):
        s, e = starts[lineno - 1], starts[lineno - 1] + len(lines[lineno - 1].rstrip("\r\n"))
        before = text[s:e]
        after = before
        for edit, _code in sorted(items, key=lambda x: -x[0].start):
            if edit.end <= e:
                after = after[: edit.start - s] + edit.replacement + after[edit.end - s:]
        codes = sorted({c for _, c in items})
        changes.append(Change(path, lineno, before, after, ",".join(codes)))
    out = []
    pos = 0
    for edit, _ in chosen:
        out.append(text[pos: edit.start])
        out.append(edit.replacement)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out), changes


def port_source(path: str, text: str, mode: str = "native", line: str = apidb.DEFAULT_LINE) -> PortResult:
    """Port one Python source text; the result says what changed or why nothing did."""
    from ascend_compat.migrate.pyscan import scan_python_tree

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    scanned, tree = scan_python_tree(path, text, line)  # one parse serves the scan and the insertion point
    if isinstance(scanned, FileFailed) or tree is None:
        return PortFailure(path, getattr(scanned, "error", "does not parse"))
    assert isinstance(scanned, FileScanned)
    code_findings = [f for f in scanned.findings if f.rule.language == "python"]
    # Dependency findings port cannot settle need a person too: a package with no NPU build (warning/error), and
    # in native mode a drop-in import left unrewritten (the shim serves it; without the shim it fails).
    deps_open = [f for f in scanned.findings if f.rule.language != "python" and not f.edits
                 and (f.effective_level != "note" or (mode == "native" and f.code == "AC703"))]
    if mode == "shim":
        unfixed = code_findings + deps_open
        if not any(f.code < "AC600" for f in code_findings):
            return PortSkip(path, "no CUDA-specific code", unfixed)
        if has_activation(tree, scanned.imports):
            return PortSkip(path, "already activates ascend_compat", unfixed)
        inserted = insert(text, tree, SHIM_LINES)
        if inserted is None:
            return PortSkip(path, "no line to put the activation on (the docstring shares its line with code)", unfixed)
        new, lineno, _ = inserted
        changes = [Change(path, lineno, "", "; ".join(SHIM_LINES), "SHIM")]
    else:
        unfixed = [f for f in code_findings if not f.edits] + deps_open
        native = _native(path, text, tree, scanned, code_findings)
        if native is None:
            return PortSkip(path, "nothing port can rewrite" if unfixed else "no CUDA-specific code", unfixed)
        new, changes = native
    del tree  # the original's tree goes before the output's is built: one tree in memory at a time
    try:
        ast.parse(new)
    except SyntaxError as exc:
        return PortFailure(path, f"rewrite would not parse (line {exc.lineno}: {exc.msg}); left untouched")
    return PortSuccess(path, text, new, changes, unfixed)


def _native(path: str, text: str, tree: ast.Module, scanned: FileScanned, code_findings: list[Finding]
            ) -> Optional[tuple[str, list[Change]]]:
    """The native rewrite of ``text`` and its change list, or None when there is nothing to rewrite."""
    # Import rewrites onto ascend-compat's drop-ins are dependency findings (AC703) that carry edits.
    rewrites = [f for f in scanned.findings if f.rule.language != "python" and f.edits]
    chosen = _chosen(code_findings + rewrites)
    new, changes = _apply(text, chosen, path)
    if not changes:
        return None
    # Everything but the visible-devices variable needs torch_npu imported (npu device, hccl, torch.npu).
    # It goes right after the file's own ``import torch``; a file that does not import torch gets none (the
    # program imports torch_npu where it imports torch). The drop-ins import torch_npu themselves.
    needs_npu = any(code not in ("AC111", "AC703") for c in changes for code in c.code.split(","))
    imports = scanned.imports
    if not (needs_npu and "torch" in imports and "torch_npu" not in imports and not has_activation(tree, imports)):
        return new, changes
    place = insertion(text, tree, [NATIVE_IMPORT], after_torch=True)
    if place is None:
        return new, changes
    at, block = place
    edits = [e for e, _ in chosen]
    if any(e.start < at < e.end for e in edits):
        return new, changes  # an edit spans the line break: no clean place for the import
    # The place was found on the original (no second parse): shift it by the edits before it.
    at += sum(len(e.replacement) - (e.end - e.start) for e in edits if e.end <= at)
    new = new[:at] + block + new[at:]
    changes.insert(0, Change(path, new.count("\n", 0, at) + 1, "", NATIVE_IMPORT, "IMPORT"))
    return new, changes


def _outside(path: str, root: str) -> Optional[str]:
    """The real file when ``path`` resolves (through symlinks) outside ``root``'s tree, else None."""
    real = os.path.realpath(path)
    base = os.path.realpath(root if os.path.isdir(root) else os.path.dirname(os.path.abspath(root)))
    return None if real == base or real.startswith(base.rstrip(os.sep) + os.sep) else real


def port_paths(paths: Iterable[str], mode: str = "native", line: str = apidb.DEFAULT_LINE,
               use_git: bool = True, max_bytes: Optional[int] = None, seconds: Optional[float] = None,
               memory: Optional[int] = None) -> list[PortResult]:
    """Port every Python file under ``paths`` (nothing is written: see :func:`write_atomic`).

    A file reached through a symlink that leaves the tree it was found in is never ported; one file reached
    twice (a symlink and its target) is ported once. Each file is read and ported within the per-file budgets
    of :func:`~ascend_compat.migrate.scan.scan_file` (``ASCEND_COMPAT_SCAN_FILE_*`` unless given); past one it
    is a :class:`PortSkip` with the reason. A bad budget variable raises
    :class:`~ascend_compat.settings.SettingError` before any file is read.
    """
    from ascend_compat.migrate.scan import analysis_budget, memory_budget, time_limit

    budgets = (analysis_budget("python", max_bytes), time_limit(seconds), memory_budget(memory))
    results: list[PortResult] = []
    seen: dict[str, str] = {}

    def failed(path: str, why: str) -> None:  # a folder not listed, a FIFO named explicitly: exit 3
        results.append(PortFailure(path, why))

    for top in paths:
        for path, lang in discover([top], use_git=use_git, on_error=failed):
            if lang != "python":
                continue
            real = os.path.realpath(path)
            if seen.get(real) == path:
                continue  # named twice
            if real in seen:
                results.append(PortSkip(path, f"the same file as {seen[real]}: ported there"))
                continue
            seen[real] = path
            outside = _outside(path, top)
            if outside is not None:
                results.append(PortSkip(path, f"symlink to {outside}, outside {top}: not rewritten"))
                continue
            results.append(_port_file(path, mode, line, *budgets))
    return results


def _port_file(path: str, mode: str, line: str, max_bytes: int, seconds: float, memory: int) -> PortResult:
    from ascend_compat.migrate.pyscan import decode_python
    from ascend_compat.migrate.scan import BudgetExceededError, over_memory_budget, size_skip_reason, time_budget

    data, early = read_source(path, max_bytes)
    if early is not None:
        if isinstance(early, FileFailed):
            return PortFailure(path, early.error)
        return PortSkip(path, size_skip_reason(early.reason if isinstance(early, FileSkipped) else "", "python"),
                        unread=True)
    assert data is not None
    too_big = over_memory_budget(data, memory)
    if too_big is not None:
        return PortSkip(path, too_big, unread=True)
    try:
        text = decode_python(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return PortFailure(path, f"cannot decode: {exc}")
    # Only plain UTF-8 files are rewritten: writing back another declared encoding or a BOM is not worth
    # the risk of changing bytes outside the edits.
    if data.startswith(b"\xef\xbb\xbf") or data.decode("utf-8", "replace") != text:
        return PortSkip(path, "not plain UTF-8 (BOM or declared encoding): left alone")
    del data
    try:
        with time_budget(seconds):
            return port_source(path, text, mode, line)
    except BudgetExceededError as exc:
        return PortSkip(path, str(exc), unread=True)


def texts_with_fixes(result: ScanResult) -> dict[str, str]:
    """The text of every scanned Python file that has a fix, by path (unreadable ones are left out)."""
    return dict(_texts_with_fixes(result))


def _texts_with_fixes(result: ScanResult) -> Iterator[tuple[str, str]]:
    """``(path, text)`` of each scanned Python file that has a fix, read one at a time."""
    from ascend_compat.migrate.pyscan import decode_python

    for f in result.files:
        if not isinstance(f, FileScanned) or f.language != "python" or not any(x.edits for x in f.findings):
            continue
        data, early = read_source(f.path)
        if data is None or early is not None:
            continue
        try:
            text = decode_python(data)
        except (UnicodeDecodeError, SyntaxError, LookupError):
            continue
        yield f.path, text


def planned_changes(result: ScanResult) -> list[Change]:
    """What ``port --mode native`` would change, from a scan's findings (only files with fixes are re-read)."""
    by_path = {f.path: f for f in result.files}
    changes: list[Change] = []
    for path, text in _texts_with_fixes(result):  # one file's text in memory at a time
        findings = [x for x in by_path[path].findings  # type: ignore[union-attr]
                    if x.rule.language == "python" or x.edits]
        changes.extend(apply_edits(text, findings, path)[1])
    return changes
