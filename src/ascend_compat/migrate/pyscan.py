"""The Python scanner: one ``ast`` walk per file with qualified-name resolution through imports.

Names are resolved through the file's imports (``import torch as th``, ``from torch.cuda import amp``,
``import torch.backends.cudnn as cudnn``), so ``th.cuda.synchronize`` is found and a variable or an unrelated
module named ``cuda`` (``import cuda.bindings.driver as cuda``) is not. Strings count only where they are code:
docstrings and comments never produce findings. Each finding carries the character-offset edits ``port`` applies.

The rules are the families of ``migrate/rules`` (``py_*.py``); this module walks the tree once and calls each
family's hooks (TorchFix's batched visitors). The import-level findings (dependencies, flash_attn) are
``deps.py``'s and ``flashattn.py``'s.
"""

from __future__ import annotations

import ast
import warnings
from ast import AST
from typing import Any, Callable, Optional

from ascend_compat.migrate import apidb, deps, flashattn
from ascend_compat.migrate.model import FileFailed, FileResult, FileScanned
from ascend_compat.migrate.rules import PY_FAMILIES, PY_HOOKS
from ascend_compat.migrate.rules.py_torch_cuda import cuda_table, npu_has
from ascend_compat.migrate.rules.pycontext import CudaRef, PyContext, split_lines

__all__ = ["TRIGGERS", "cuda_table", "decode_python", "npu_has", "scan_python", "scan_python_tree", "split_lines"]

# The tree walk looks for code no file can contain without one of these substrings (``.cuda()``, "nccl",
# ``torch.*`` names, ``.to(rank)``...). A file with none of them is still parsed (syntax errors are reported) and
# its imports checked, but not walked: a third of a typical package, skipped at the cost of one substring search.
TRIGGERS = (
    "cuda", "CUDA", "nccl", "NCCL", "nvidia", "nvml", "nvtx", "triton", "torch", "numba", "device_map", ".to(",
    "flash_attn", "xformers", "load_in_", "quantization", "Config(",
)

# Fields that never hold child expressions/statements worth walking (``ctx`` singletons, names, flags).
_SCALAR_FIELDS = frozenset({
    "ctx", "id", "attr", "arg", "name", "module", "level", "type_comment", "kind", "is_async", "conversion",
    "simple", "asname", "type_ignores", "tag",
})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        skip = _SCALAR_FIELDS | ({"names"} if cls in (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal) else set())
        # Reversed: children are pushed on a stack, so a statement's header (test, items) is visited before its body.
        fields = _CHILD_FIELDS[cls] = tuple(reversed([f for f in cls._fields if f not in skip]))  # type: ignore[attr-defined]
    return fields


_STMT_CLASSES = frozenset(c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.stmt))
_REEXPORTING_SUBMODULES = frozenset({"random", "memory", "graphs", "streams"})
_PLAIN_ATTRS = frozenset().union(*(f.PLAIN_ATTRS for f in PY_FAMILIES))
#: hook -> indexes into PY_FAMILIES of the families that take part in it, in claim order.
_HOOK_INDEX = {hook: tuple(i for i, f in enumerate(PY_FAMILIES) if hook in f.hooks()) for hook in PY_HOOKS}


def _each(calls: tuple[Callable[[Any], None], ...]) -> Callable[[Any], bool]:
    """A handler that calls every family's hook of a node type and then walks the node's children."""
    if len(calls) == 1:
        (only,) = calls

        def handle_one(node: Any) -> bool:
            only(node)
            return False

        return handle_one

    def handle(node: Any) -> bool:
        for call in calls:
            call(node)
        return False

    return handle


def _imported_modules(node: ast.stmt) -> list[str]:
    """The absolute modules an import statement names (relative imports name the file's own package)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module]
    return []


class _Scanner(PyContext):
    """One file's walk: the shared state (``PyContext``), the rule families, and the dispatch to their hooks."""

    def __init__(self, path: str, text: str, tree: ast.Module, line: str) -> None:
        super().__init__(path, text, tree, line)
        self.apis: dict[str, int] = {}
        self.imports: dict[str, tuple[int, int]] = {}
        self.import_sites: list[tuple[str, int, int]] = []
        self.hooks: dict[str, tuple[Callable[..., Any], ...]] = {}
        self.visit_call: tuple[Callable[..., Any], ...] = ()
        self.visit_string: tuple[Callable[..., Any], ...] = ()
        self.handlers: dict[type, Callable[[Any], bool]] = {}

    def bind(self) -> None:
        """Make the families for this file and the walk's handlers that call their hooks."""
        families = [cls(self) for cls in PY_FAMILIES]
        hooks = self.hooks = {hook: tuple(getattr(families[i], hook) for i in idx) for hook, idx in _HOOK_INDEX.items()}
        self.visit_call, self.visit_string = hooks["visit_call"], hooks["visit_string"]
        self.handlers = {
            ast.Attribute: self.on_attribute, ast.Name: self.on_name, ast.Call: self.on_call,
            ast.Constant: self.on_constant, ast.JoinedStr: self.on_joinedstr,
            ast.FunctionDef: _each(hooks["visit_def"]), ast.AsyncFunctionDef: _each(hooks["visit_def"]),
            ast.Compare: _each(hooks["visit_compare"]), ast.Dict: _each(hooks["visit_dict"]),
            ast.Assign: _each(hooks["visit_assign"]), ast.Subscript: _each(hooks["visit_subscript"]),
        }

    def unbind(self) -> None:
        """Drop the families and handlers: they refer back to the scanner, and the cycle would keep the file's
        whole tree alive until the cyclic garbage collector runs (it made a 4,000-file scan about 12% slower)."""
        self.hooks, self.handlers = {}, {}
        self.visit_call = self.visit_string = ()

    # -- names -------------------------------------------------------------------------------------------
    def collect_imports(self) -> None:
        for node in self.import_nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.split(".")[0]
                    self.imports.setdefault(top, (node.lineno, node.col_offset))
                    self.import_sites.append((a.name, node.lineno, node.col_offset))
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top = node.module.split(".")[0]
                self.imports.setdefault(top, (node.lineno, node.col_offset))
                self.import_sites.append((node.module, node.lineno, node.col_offset))
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    def import_findings(self) -> None:
        """The dependency findings of the file's imports (``deps.py``), flash_attn's with the drop-in's rewrite."""
        reported: set[str] = set()
        flash = [n for n in self.import_nodes if any(flashattn.is_flash_attn(m) for m in _imported_modules(n))]
        if flash:
            info = deps.lookup("flash-attn")
            alternative = info.alternative if info else ""
            self.findings.extend(flashattn.import_findings(self.path, flash, self.src, alternative))
        for mod, lineno, col in self.import_sites:
            if flashattn.is_flash_attn(mod):
                continue  # reported above, with the rewrite onto the drop-in
            f = deps.import_finding(self.path, mod, lineno, self.src.col(lineno, col) + 1)
            if f is not None and f.api not in reported:  # one finding per package per file
                reported.add(f.api)
                self.findings.append(f)

    # -- walk --------------------------------------------------------------------------------------------
    def run(self) -> None:
        self.collect_imports()
        self.import_findings()
        text = self.src.text
        if not any(t in text for t in TRIGGERS):
            return
        self.bind()
        for begin in self.hooks["begin"]:
            begin()
        self._walk([self.tree])
        self.uncouple()
        for finish in self.hooks["finish"]:
            finish()

    def uncouple(self) -> None:
        """Coupled device idioms of one statement are rewritten together or not at all (never half-rewritten)."""
        for indexes in self.coupled.values():
            group = [self.findings[i] for i in indexes]
            if any(not f.edits for f in group) and any(f.edits for f in group):
                for i in indexes:
                    if self.findings[i].edits:
                        self.drop_fix(i)

    def _walk(self, stack: list[ast.AST]) -> None:
        """The one tree walk: the file from the top, and the arguments of calls and f-strings whose handler
        consumed the node (so every part of the tree sees the same handlers)."""
        get = self.handlers.get
        pop, push = stack.pop, stack.append
        stmt_classes = _STMT_CLASSES
        fields_of = _CHILD_FIELDS
        aliases = self.aliases
        plain_attrs = _PLAIN_ATTRS
        name_cls, const_cls, attr_cls = ast.Name, ast.Constant, ast.Attribute
        # The hot loop: Name, non-string Constant and ``self.x``-like Attribute children (most of a tree) are
        # settled inline, never pushed; their handlers would find nothing else in them.
        while stack:
            node = pop()
            cls = type(node)
            if cls in stmt_classes:
                self.stmt = node  # type: ignore[assignment]
            h = get(cls)
            if h is not None and h(node):
                continue  # the handler consumed the subtree
            for name in fields_of.get(cls) or _child_fields(cls):
                value = getattr(node, name, None)
                if value is None:
                    continue
                for v in reversed(value) if type(value) is list else (value,):
                    t = type(v)
                    if t is name_cls:
                        if v.id in aliases:
                            self.on_name(v)
                    elif t is const_cls:
                        if type(v.value) is str:
                            self.on_constant(v)
                    elif t is attr_cls and type(v.value) is name_cls and v.value.id not in aliases:
                        if v.attr in plain_attrs:
                            self.on_attribute(v)
                    elif isinstance(v, AST):  # lists may hold None ({**d} keys) or str (global names)
                        push(v)

    # -- handlers: return True to skip the node's children --------------------------------------------------
    def on_name(self, node: ast.Name) -> bool:
        q = self.aliases.get(node.id)
        if q is not None and q != node.id:
            self.on_qualified(q, node, None)
        return True

    def on_attribute(self, node: ast.Attribute) -> bool:
        q = self.qual(node)
        if q is not None:
            self.on_qualified(q, node, None)
            return True
        for visit in self.hooks["visit_attribute"]:
            visit(node)
        return False

    def on_call(self, node: ast.Call) -> bool:
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        q = self.qual(func)
        for visit in self.visit_call:
            visit(node, q, fname)
        if q is None:
            return False
        self.on_qualified(q, func, node)
        # Resolved calls consume their subtree: walk the arguments (not the resolved function expression) here.
        stack: list[ast.AST] = [*node.args, *(kw.value for kw in node.keywords)]
        while isinstance(func, ast.Attribute):
            func = func.value
        if not isinstance(func, ast.Name):
            stack.append(func)  # e.g. ``foo().bar`` whose root is a call
        self._walk(stack)
        return True

    def on_constant(self, node: ast.Constant) -> bool:
        value = node.value
        if not isinstance(value, str) or id(node) in self.skip or len(value) > 200:
            return True
        marked = self.marked.get(id(node))
        for visit in self.visit_string:
            if visit(node, value, marked):
                break
        return True

    def on_joinedstr(self, node: ast.JoinedStr) -> bool:
        for visit in self.hooks["visit_joinedstr"]:
            if visit(node):
                break
        # Constant parts of an f-string carry no precise position before Python 3.12: visit only the
        # interpolated expressions.
        self.in_fstring += 1
        try:
            self._walk([v.value for v in node.values if isinstance(v, ast.FormattedValue)])
        finally:
            self.in_fstring -= 1
        return True

    def on_qualified(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> None:
        """A reference that resolves to a module-qualified name (``call`` is set when it is called): asked of
        the families in order until one claims it."""
        if q.startswith("torch"):
            if not q.startswith("torch."):
                return  # the torch module itself, or torchvision and friends
            self.apis[q] = self.apis.get(q, 0) + 1
            if q.startswith("torch.cuda"):
                ref = self.cuda_ref(q, node)
                for claim in self.hooks["on_torch_cuda"]:
                    if claim(ref, node, call):
                        return
                return
            for claim in self.hooks["on_torch"]:
                if claim(q, node, call):
                    return
            return
        head = q.split(".", 1)[0]
        for claim in self.hooks["on_module"]:
            if claim(q, head, node, call):
                return

    def cuda_ref(self, q: str, node: ast.AST) -> CudaRef:
        rest = q[len("torch.cuda"):].lstrip(".")
        name = rest.split(".", 1)[0]
        via_submodule = False
        if name in _REEXPORTING_SUBMODULES and "." in rest:
            # torch.cuda.random.get_rng_state is torch.cuda.get_rng_state under another name.
            rest, name, via_submodule = rest.split(".", 1)[1], rest.split(".")[1], True
        root = self.torch_root(node)
        # The ``cuda`` token of ``<torch>.cuda....`` when the chain is spelled from the torch module.
        cuda_attr: Optional[ast.Attribute] = None
        if root is not None:
            n = node
            while isinstance(n, ast.Attribute):
                if isinstance(n.value, ast.Name) and n.attr == "cuda":
                    cuda_attr = n
                n = n.value
        return CudaRef(q, rest, name, rest.rsplit(".", 1)[-1], root, cuda_attr, via_submodule)


def decode_python(data: bytes) -> str:
    """Decode as Python does (PEP 263 coding cookie, UTF-8 by default); raises on undecodable bytes."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def scan_python(path: str, text: str, line: str = apidb.DEFAULT_LINE) -> FileResult:
    """Scan one Python source text. A file that does not parse becomes a ``FileFailed``."""
    return scan_python_tree(path, text, line)[0]


def scan_python_tree(path: str, text: str, line: str = apidb.DEFAULT_LINE
                     ) -> tuple[FileResult, Optional[ast.Module]]:
    """:func:`scan_python` and the parsed tree (None when it did not parse), so callers parse only once."""
    nlines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are the file's business, not ours
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        return FileFailed(path, "python", f"syntax error at line {exc.lineno}: {exc.msg}", nlines), None
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileFailed(path, "python", f"cannot parse: {exc}", nlines), None
    scanner = _Scanner(path, text, tree, apidb.normalize_line(line))
    try:
        scanner.run()
    finally:
        scanner.unbind()
    findings = sorted(scanner.findings, key=lambda f: (f.line, f.col, f.code))
    return FileScanned(path, "python", nlines, findings, scanner.apis, sorted(scanner.imports)), tree

