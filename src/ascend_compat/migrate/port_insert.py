"""Where ``port`` inserts lines (``import torch_npu``, the shim's activation): after the module docstring, the
``__future__`` imports and the runtime imports, never under ``if TYPE_CHECKING:``, with the file's own line endings."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Optional

from ascend_compat.migrate.pyscan import split_lines


def _newline(text: str, at: int = 0) -> str:
    """The line ending to use for lines inserted at ``at``: the one of the line before it (of the first line at
    the top), so an LF file never gets a CRLF line from a stray ``\\r\\n`` elsewhere, nor a CRLF file an LF."""
    before = text[:at]
    if not before.endswith(("\n", "\r")):
        first = re.search(r"\r\n|\n|\r", text)
        return first.group() if first else "\n"
    return "\r\n" if before.endswith("\r\n") else before[-1]


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
    while i < len(body) and getattr(body[i], "module", None) == "__future__" and isinstance(body[i], ast.ImportFrom):
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


def has_activation(tree: ast.Module, imports: list[str]) -> bool:
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


def _type_checking(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:``: its body never runs."""
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.Module) -> list[ast.stmt]:
    """Import statements at any depth that run (not under ``if TYPE_CHECKING:``), in source order."""
    found: list[ast.stmt] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        for f in ("body", "orelse", "finalbody", "handlers", "cases"):
            if f == "body" and isinstance(node, ast.stmt) and _type_checking(node):
                continue
            stack.extend(getattr(node, f, None) or [])
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _after_top_imports(text: str, tree: ast.Module) -> Optional[int]:
    """Offset after the module's leading top-level imports (an ``if TYPE_CHECKING:`` block among them counts)."""
    last = None
    for i, node in enumerate(tree.body):
        doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            last = node
        elif not (doc or _type_checking(node)):
            break
    if last is None:
        return insertion_offset(text, tree)
    lines = split_lines(text)
    if _rest_of_line(lines, last):
        return None
    return sum(len(x) for x in lines[: last.end_lineno or last.lineno])


def _after_torch_import(text: str, tree: ast.Module) -> Optional[tuple[int, str]]:
    """Offset of the line after the first ``import torch``/``from torch ...`` statement that runs (inside ``try:``
    or a function the new import stays guarded/lazy like torch's; never under ``if TYPE_CHECKING:``), and that
    statement's indentation. A file that imports torch only for type checking gets it after its top imports."""
    lines = split_lines(text)
    for node in _runtime_imports(tree):
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
    at = _after_top_imports(text, tree)
    return None if at is None else (at, "")


def insertion(text: str, tree: ast.Module, lines: Iterable[str], after_torch: bool = False
               ) -> Optional[tuple[int, str]]:
    """Where to insert ``lines`` and the block to insert there (None: no safe place)."""
    found = _after_torch_import(text, tree) if after_torch else None
    at, indent = found if found is not None else (insertion_offset(text, tree), "")
    if at is None:
        return None
    nl = _newline(text, at)
    block = "".join(f"{indent}{ln}{nl}" for ln in lines)
    if at > 0 and not text[:at].endswith(("\n", "\r")):
        block = nl + block
    return at, block


def insert(text: str, tree: ast.Module, lines: Iterable[str], after_torch: bool = False
            ) -> Optional[tuple[str, int, str]]:
    place = insertion(text, tree, lines, after_torch)
    if place is None:
        return None
    at, block = place
    return text[:at] + block + text[at:], text.count("\n", 0, at) + 1, block
