"""``port``: apply the scanner's fixes (``native``) or insert the runtime shim's activation (``shim``).

Edits are character spans computed from the parser's positions, so formatting and comments outside them stay
byte-identical. Every rewrite is parsed again before it is offered; one that would not parse is reported and the
file is left alone. Porting the output again changes nothing.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional, Union

from ascend_compat.migrate import apidb
from ascend_compat.migrate.discover import discover
from ascend_compat.migrate.model import Change, Edit, FileFailed, FileScanned, Finding, ScanResult
from ascend_compat.migrate.pyscan import split_lines
from ascend_compat.migrate.scan import read_source

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
        return "".join(difflib.unified_diff(
            split_lines(self.original), split_lines(self.text),
            fromfile=f"a/{name}", tofile=f"b/{name}",
        ))


@dataclass
class PortSkip:
    """A file with nothing ``port`` can change (it may still have findings that need a person)."""

    path: str
    reason: str
    unfixed: list[Finding] = field(default_factory=list)


@dataclass
class PortFailure:
    """A file ``port`` could not handle; it is never written."""

    path: str
    error: str


PortResult = Union[PortSuccess, PortSkip, PortFailure]


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _first_line(node: ast.stmt) -> int:
    """A statement's first line, its decorators included."""
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def _rest_of_line(lines: list[str], node: ast.stmt) -> str:
    """What follows ``node`` on its last line (code after ``;`` matters, a comment does not)."""
    end_line = node.end_lineno or node.lineno
    rest = lines[end_line - 1].encode("utf-8")[node.end_col_offset or 0:].decode("utf-8", "replace").strip()
    return "" if rest.startswith("#") else rest


def insertion_offset(text: str, tree: ast.Module) -> Optional[int]:
    """Where new module-level imports go: after the docstring and ``from __future__`` imports, at a line start.

    None when there is no such place (the docstring shares its line with other code).
    """
    body = tree.body
    i = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
        body[0].value.value, str
    ):
        i = 1
    while i < len(body) and isinstance(body[i], ast.ImportFrom) and body[i].module == "__future__":
        i += 1
    lines = split_lines(text)
    if i == 0:
        if not body:
            return len(text)
        # Before the first statement's line: comments, shebang and coding cookie above it stay above.
        return sum(len(x) for x in lines[: _first_line(body[0]) - 1])
    if _rest_of_line(lines, body[i - 1]):
        return None
    end_line = body[i - 1].end_lineno or body[i - 1].lineno
    return sum(len(x) for x in lines[:end_line])


def _has_activation(tree: ast.Module, imports: list[str]) -> bool:
    """Whether the file imports ascend_compat (``imports``: its top-level imports, as the scan lists them) and
    calls its activate()/activated()."""
    if "ascend_compat" not in imports:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in ("activate", "activated"):
                return True
    return False


def _after_torch_import(text: str, tree: ast.Module) -> Optional[tuple[int, str]]:
    """Offset of the line after the first ``import torch``/``from torch ...`` statement (at any depth: inside
    ``try:`` or a function the new import stays guarded/lazy like torch's), and that statement's indentation."""
    from ascend_compat.migrate.pyscan import _statements

    lines = split_lines(text)
    for node in _statements(tree)[0]:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(n == "torch" or n.startswith("torch.") for n in names):
            if _rest_of_line(lines, node):
                return None  # ``import torch; more`` on one line
            first = lines[node.lineno - 1]
            indent = first[: len(first) - len(first.lstrip(" \t"))]
            if first.strip().startswith(("import", "from")) and indent == first[: node.col_offset]:
                return sum(len(x) for x in lines[: node.end_lineno or node.lineno]), indent
            return None
    return None


def _insert(text: str, tree: ast.Module, lines: Iterable[str], after_torch: bool = False
            ) -> Optional[tuple[str, int, str]]:
    nl = _newline(text)
    found = _after_torch_import(text, tree) if after_torch else None
    at, indent = found if found is not None else (insertion_offset(text, tree), "")
    if at is None:
        return None
    block = "".join(f"{indent}{ln}{nl}" for ln in lines)
    if at > 0 and not text[:at].endswith(("\n", "\r")):
        block = nl + block
    line_no = text.count("\n", 0, at) + 1
    return text[:at] + block + text[at:], line_no, block


def apply_edits(text: str, findings: list[Finding], path: str) -> tuple[str, list[Change]]:
    """Apply every finding's edits (non-overlapping, first come first served) and list the changes per line."""
    chosen: list[tuple[Edit, str]] = []
    last_end = -1
    for edit, code in sorted(((e, f.code) for f in findings for e in f.edits), key=lambda x: (x[0].start, x[0].end)):
        if edit.start < last_end:
            continue  # an overlapping edit from another rule: the first one wins
        chosen.append((edit, code))
        last_end = max(last_end, edit.end)
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
    from ascend_compat.migrate.pyscan import scan_python

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    scanned = scan_python(path, text, line)
    if isinstance(scanned, FileFailed):
        return PortFailure(path, scanned.error)
    assert isinstance(scanned, FileScanned)
    code_findings = [f for f in scanned.findings if f.rule.language == "python"]
    # Dependency findings port cannot settle need a person too: a package with no NPU build (warning/error), and
    # in native mode a drop-in import left unrewritten (the shim serves it; without the shim it fails).
    deps_open = [f for f in scanned.findings if f.rule.language != "python" and not f.edits
                 and (f.effective_level != "note" or (mode == "native" and f.code == "AC703"))]
    tree = ast.parse(text)
    if mode == "shim":
        unfixed = code_findings + deps_open
        if not any(f.code < "AC600" for f in code_findings):
            return PortSkip(path, "no CUDA-specific code", unfixed)
        if _has_activation(tree, scanned.imports):
            return PortSkip(path, "already activates ascend_compat", unfixed)
        inserted = _insert(text, tree, SHIM_LINES)
        if inserted is None:
            return PortSkip(path, "no line to put the activation on (the docstring shares its line with code)", unfixed)
        new, lineno, _ = inserted
        changes = [Change(path, lineno, "", "; ".join(SHIM_LINES), "SHIM")]
    else:
        # Import rewrites onto ascend-compat's drop-ins are dependency findings (AC703) that carry edits.
        rewrites = [f for f in scanned.findings if f.rule.language != "python" and f.edits]
        new, changes = apply_edits(text, code_findings + rewrites, path)
        unfixed = [f for f in code_findings if not f.edits] + deps_open
        if not changes:
            return PortSkip(path, "nothing port can rewrite" if unfixed else "no CUDA-specific code", unfixed)
        # Everything but the visible-devices variable needs torch_npu imported (npu device, hccl, torch.npu).
        # It goes right after the file's own ``import torch``; a file that does not import torch gets none (the
        # program imports torch_npu where it imports torch).
        # The drop-ins import torch_npu themselves.
        needs_npu = any(code not in ("AC111", "AC703") for c in changes for code in c.code.split(","))
        imports = scanned.imports
        if needs_npu and "torch" in imports and "torch_npu" not in imports and not _has_activation(tree, imports):
            try:
                new_tree = ast.parse(new)
            except SyntaxError as exc:
                return PortFailure(path, f"rewrite would not parse (line {exc.lineno}: {exc.msg}); left untouched")
            inserted = _insert(new, new_tree, [NATIVE_IMPORT], after_torch=True)
            if inserted is not None:
                new, lineno, _ = inserted
                changes.insert(0, Change(path, lineno, "", NATIVE_IMPORT, "IMPORT"))
    try:
        ast.parse(new)
    except SyntaxError as exc:
        return PortFailure(path, f"rewrite would not parse (line {exc.lineno}: {exc.msg}); left untouched")
    return PortSuccess(path, text, new, changes, unfixed)


def write_atomic(path: str, text: str, like: Optional[str] = None) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (a crash leaves the old file whole)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ascend-compat-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        src = like if like is not None and os.path.exists(like) else (path if os.path.exists(path) else None)
        if src is not None:
            os.chmod(tmp, os.stat(src).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def port_paths(paths: Iterable[str], mode: str = "native", line: str = apidb.DEFAULT_LINE,
               use_git: bool = True) -> list[PortResult]:
    """Port every Python file under ``paths`` (nothing is written: see :func:`write_atomic`)."""
    from ascend_compat.migrate.pyscan import decode_python

    results: list[PortResult] = []
    for path, lang in discover(paths, use_git=use_git):
        if lang != "python":
            continue
        data, early = read_source(path)
        if early is not None:
            reason = getattr(early, "error", None) or getattr(early, "reason", "")
            results.append(PortFailure(path, reason) if isinstance(early, FileFailed) else PortSkip(path, reason))
            continue
        assert data is not None
        try:
            text = decode_python(data)
        except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
            results.append(PortFailure(path, f"cannot decode: {exc}"))
            continue
        # Only plain UTF-8 files are rewritten: writing back another declared encoding or a BOM is not worth
        # the risk of changing bytes outside the edits.
        if data.startswith(b"\xef\xbb\xbf") or data.decode("utf-8", "replace") != text:
            results.append(PortSkip(path, "not plain UTF-8 (BOM or declared encoding): left alone"))
            continue
        results.append(port_source(path, text, mode, line))
    return results


def texts_with_fixes(result: ScanResult) -> dict[str, str]:
    """The text of every scanned Python file that has a fix, by path (unreadable ones are left out)."""
    from ascend_compat.migrate.pyscan import decode_python

    texts: dict[str, str] = {}
    for f in result.files:
        if not isinstance(f, FileScanned) or f.language != "python" or not any(x.edits for x in f.findings):
            continue
        data, early = read_source(f.path)
        if data is None or early is not None:
            continue
        try:
            texts[f.path] = decode_python(data)
        except (UnicodeDecodeError, SyntaxError, LookupError):
            continue
    return texts


def planned_changes(result: ScanResult) -> list[Change]:
    """What ``port --mode native`` would change, from a scan's findings (only files with fixes are re-read)."""
    by_path = {f.path: f for f in result.files}
    changes: list[Change] = []
    for path, text in texts_with_fixes(result).items():
        findings = [x for x in by_path[path].findings  # type: ignore[union-attr]
                    if x.rule.language == "python" or x.edits]
        changes.extend(apply_edits(text, findings, path)[1])
    return changes
