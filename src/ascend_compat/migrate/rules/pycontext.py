"""One Python file as the rule families see it: its text and positions, its imports, and the findings so far.

The walk (``pyscan``) owns the traversal; the families read names through :meth:`PyContext.qual` (resolved through
the file's imports) and report through their own ``add``. State several families share lives here: string constants
a parent marked for a rule (``marked``), literals that are reported but never rewritten (``nofix``) and nodes no rule
may report again (``skip``, which starts with the file's docstrings).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional

from ascend_compat.migrate.model import Edit, Finding

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where Python's tokenizer splits (not at form feeds or U+2028)."""
    return _LINE_RE.findall(text)


class Source:
    """Line/column bookkeeping: ast columns are UTF-8 byte offsets, edits are character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()  # most sources: byte columns are character columns, no line table needed
        self._starts: Optional[list[int]] = None
        self._lines: Optional[list[str]] = None

    def _index(self) -> None:
        text = self.text
        # str.splitlines (fast) also splits at form feeds and the like, which Python's tokenizer does not.
        exotic = not self.ascii or any(c in text for c in "\x0b\x0c\x1c\x1d\x1e")
        lines = split_lines(text) if exotic else text.splitlines(keepends=True)
        starts, pos = [], 0
        for line in lines:
            starts.append(pos)
            pos += len(line)
        starts.append(pos)
        self._starts, self._lines = starts, lines

    def col(self, lineno: int, byte_col: int) -> int:
        """0-based character column of a byte column on a 1-based line."""
        if self.ascii:
            return byte_col
        if self._lines is None:
            self._index()
        assert self._lines is not None
        line = self._lines[lineno - 1] if lineno - 1 < len(self._lines) else ""
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def offset(self, lineno: int, byte_col: int) -> int:
        if self._starts is None:
            self._index()
        assert self._starts is not None
        return self._starts[lineno - 1] + self.col(lineno, byte_col)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]


def _assigned_attributes(targets: list[ast.expr]) -> list[str]:
    """Attribute names written by assignment targets (``a.x = ...``, ``a.x, b.y = ...``)."""
    names: list[str] = []
    stack: list[ast.expr] = list(targets)
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Attribute):
            names.append(t.attr)
        elif isinstance(t, (ast.Tuple, ast.List)):
            stack.extend(t.elts)
        elif isinstance(t, ast.Starred):
            stack.append(t.value)
    return names


def statements(tree: ast.Module) -> tuple[list[ast.stmt], set[int], set[str]]:
    """Every import statement (at any depth), the ids of bare string statements (docstrings, attribute
    docstrings: prose, not code) and the names the file defines with ``def``, without walking expressions."""
    imports: list[ast.stmt] = []
    docstrings: set[int] = set()
    defined: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)  # type: ignore[arg-type]
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            # ``self.is_cuda = ...``: the file's own attribute; its reads must not be renamed without its writes.
            targets: list[ast.expr] = list(node.targets) if isinstance(node, ast.Assign) else [node.target]
            defined.update(_assigned_attributes(targets))
        for f in _BODY_FIELDS:
            value = getattr(node, f, None)
            if value:
                stack.extend(value)
    imports.sort(key=lambda n: (n.lineno, n.col_offset))
    return imports, docstrings, defined


@dataclass(frozen=True)
class CudaRef:
    """A reference into ``torch.cuda``: ``rest`` is the part after ``torch.cuda.``, ``name`` its first component
    (``torch.cuda.random.get_rng_state`` reads as ``get_rng_state``, ``via_submodule``), ``last`` its last one,
    and ``cuda_attr`` the ``cuda`` token when the chain is spelled from the torch module (what a rename edits)."""

    q: str
    rest: str
    name: str
    last: str
    root: Optional[ast.Name]
    cuda_attr: Optional[ast.Attribute]
    via_submodule: bool


class PyContext:
    """The state of one file's scan that the rule families read and extend."""

    def __init__(self, path: str, text: str, tree: ast.Module, line: str) -> None:
        self.path = path
        self.src = Source(text)
        self.tree = tree
        self.line = line  # the torch_npu line APIs are judged against
        self.aliases: dict[str, str] = {}
        self.findings: list[Finding] = []
        self.in_fstring = 0
        self.nofix: set[int] = set()  # literals reported without a fix (dict keys: a table of device types)
        self.marked: dict[int, str] = {}  # id(str constant) -> rule code decided by its parent
        self.import_nodes, self.skip, self.defined = statements(tree)
        self.stmt: Optional[ast.stmt] = None
        self.coupled: dict[int, list[int]] = {}  # id(statement) -> indexes of device-coupled findings

    def qual(self, node: ast.AST) -> Optional[str]:
        """The module-qualified name an attribute chain resolves to through the imports (None: not an import)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None:
            return None
        parts.append(base)
        return ".".join(reversed(parts))

    def torch_root(self, node: ast.AST) -> Optional[ast.Name]:
        """The ``Name`` at the root of an attribute chain when it is bound to the torch module itself."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if isinstance(node, ast.Name) and self.aliases.get(node.id) == "torch":
            return node
        return None

    def is_environ(self, node: Optional[ast.AST]) -> bool:
        """Whether ``node`` is ``os.environ`` (through any alias)."""
        return node is not None and self.qual(node) == "os.environ"

    # -- findings ----------------------------------------------------------------------------------------------
    def add(self, code: str, node: ast.AST, message: str, api: str = "", edits: tuple[Edit, ...] = (),
            alternative: Optional[str] = None, level: Optional[str] = None, coupled: bool = False) -> None:
        """Record a finding at ``node``; ``coupled`` findings of one statement are fixed together or not at all."""
        lineno, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        self.findings.append(Finding(
            code=code, path=self.path, line=lineno, col=self.src.col(lineno, col) + 1, message=message,
            api=api, end_line=end_line, end_col=self.src.col(end_line, end_col) + 1, alternative=alternative,
            level=level, edits=edits,
        ))
        if coupled and self.stmt is not None:
            self.coupled.setdefault(id(self.stmt), []).append(len(self.findings) - 1)

    def drop_fix(self, index: int) -> None:
        """Keep the finding at ``index`` but without its edits (reported, not rewritten)."""
        self.findings[index] = Finding(**{**self.findings[index].__dict__, "edits": (), "fixable": False})

    # -- edits -------------------------------------------------------------------------------------------------
    def literal_edit(self, node: ast.Constant, old: str, new: str) -> tuple[Edit, ...]:
        """Replace ``old`` inside a plain string literal, when its source spells the value verbatim."""
        start, end = self.src.span(node)
        seg = self.src.text[start:end]
        i = seg.find(old)
        # Only simple literals: one quoted piece (no implicit concatenation, escapes or byte prefixes).
        if i < 0 or seg.count(old) != 1 or seg[:1] not in "'\"rRuU" or seg.find(old, i + 1) >= 0:
            return ()
        body = seg.lstrip("rRuU")
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        if not body.endswith(quote) or body[len(quote):-len(quote)] != node.value:
            return ()
        return (Edit(start + i, start + i + len(old), new),)

    def attr_edit(self, node: ast.Attribute, new: str) -> tuple[Edit, ...]:
        """Rename the attribute token of ``node`` (it ends where the node ends)."""
        _, end = self.src.span(node)
        start = end - len(node.attr)
        if self.src.text[start:end] != node.attr:
            return ()
        return (Edit(start, end, new),)

    def device_string_fix(self, node: ast.Constant, value: str) -> tuple[tuple[Edit, ...], bool]:
        """The edit of a ``"cuda"``/``"cuda:N"`` literal to ``npu``, and whether it is coupled to its statement
        (a literal in a table, ``nofix``, is reported without an edit and holds nothing back)."""
        if id(node) in self.nofix:
            return (), False
        return self.literal_edit(node, value, "npu" + value[4:]), True

    def keyword_start(self, kw: ast.keyword) -> int:
        """Character offset where a keyword argument (``name=``) starts."""
        if hasattr(kw, "lineno"):
            return self.src.offset(kw.lineno, kw.col_offset)
        s, _ = self.src.span(kw.value)  # Python 3.8 keywords have no position
        return s
