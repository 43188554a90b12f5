"""Where a repository declares its compiled extensions: ``setup.py`` (``CUDAExtension``/``CppExtension``/
``Extension``), ``torch.utils.cpp_extension.load``/``load_inline`` calls, and CMake (``pybind11_add_module``,
``add_library(... MODULE|SHARED ...)``, ``cuda_add_library``, ``Python_add_library``: read in ``extcmake``).

Only what can be read without running the build: literal names and source lists, module-level names bound to
literals, ``os.path.join``/``Path /`` of those, and ``glob`` patterns. A name that is computed is kept as written.
"""

from __future__ import annotations

import ast
import glob
import os
from dataclasses import dataclass, field
from typing import Optional

from ascend_compat.migrate.extcmake import SOURCE_SUFFIXES as _SOURCE_SUFFIXES
from ascend_compat.migrate.extcmake import from_cmake
from ascend_compat.migrate.firstparty import call_name, module_strings

#: Constructors of setuptools / torch.utils.cpp_extension extension modules.
EXTENSION_CALLS = frozenset({"CUDAExtension", "CppExtension", "Extension", "Pybind11Extension", "SYCLExtension"})
LOAD_CALLS = frozenset({"load", "load_inline"})


@dataclass
class Declared:
    """One extension module as its build declares it (paths relative to the project root, POSIX)."""

    name: str  # the module name as imported (last dotted part)
    qualified: str  # as written (``apex.amp_C``), or the expression's text when computed
    kind: str  # CUDAExtension | CppExtension | Extension | load | load_inline | cmake
    path: str
    line: int
    sources: list[str] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)
    #: load_inline(functions=[...]): the exported names it declares itself.
    functions: list[str] = field(default_factory=list)


class _Resolver:
    """Evaluates the small subset of Python a build script writes paths in."""

    def __init__(self, tree: ast.Module, base_dir: str, root: str) -> None:
        self.strings = module_strings(tree)
        self.lists: dict[str, ast.AST] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.List, ast.Tuple, ast.BinOp)):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        self.lists[t.id] = stmt.value
        self.base_dir, self.root = base_dir, root

    def text(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.strings.get(node.id, "")  # this_dir and the like: relative to the script
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name):
                    s = self.strings.get(v.value.id)
                    if s is None:
                        return None
                    parts.append(s)
                else:
                    return None
            return "".join(parts)
        if isinstance(node, ast.Call) and call_name(node) in ("join", "Path", "PurePath", "str", "abspath"):
            args = [self.text(a) for a in node.args]
            if any(p is None for p in args):
                return None
            return "/".join(p for p in args if p)
        if isinstance(node, ast.Call) and call_name(node) == "dirname":
            return ""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self.text(node.left), self.text(node.right)
            if left is None or right is None:
                return None
            return "/".join(p for p in (left, right) if p)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.text(node.left), self.text(node.right)
            return None if left is None or right is None else left + right
        return None

    def paths(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> list[str]:
        """Project-relative paths a sources/include_dirs expression names (globs expanded)."""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [p for e in node.elts for p in self.paths(e, seen)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and not _is_str(node):
            return self.paths(node.left, seen) + self.paths(node.right, seen)
        if isinstance(node, ast.Name) and node.id in self.lists and node.id not in seen:
            return self.paths(self.lists[node.id], seen | {node.id})
        if isinstance(node, ast.Call) and call_name(node) in ("glob", "iglob") and node.args:
            pattern = self.text(node.args[0])
            if not pattern:
                return []
            full = os.path.join(self.base_dir, pattern)
            return sorted(self._rel(p) for p in glob.glob(full, recursive=True))
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            return self.paths(node.generators[0].iter, seen)
        value = self.text(node)
        if not value:
            return []
        here = os.path.join(self.base_dir, value)
        if not os.path.exists(here) and os.path.exists(os.path.join(self.root, value)):
            here = os.path.join(self.root, value)  # load(sources=[...]) relative to where the project is run
        return [self._rel(here)]

    def _rel(self, path: str) -> str:
        return os.path.relpath(os.path.normpath(path), self.root).replace(os.sep, "/")


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _kw(node: ast.Call, name: str, pos: int) -> Optional[ast.AST]:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return node.args[pos] if len(node.args) > pos else None


def from_python(path: str, text: str, root: str) -> list[Declared]:
    """Extensions declared in one Python file (setup.py or any ``cpp_extension.load*`` caller)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    res = _Resolver(tree, os.path.dirname(os.path.abspath(path)), root)
    rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        kind = call_name(node)
        if kind in LOAD_CALLS and not _is_cpp_extension_load(node):
            continue
        if kind not in EXTENSION_CALLS and kind not in LOAD_CALLS:
            continue
        name_node = _kw(node, "name", 0)
        if name_node is None:
            continue
        qualified = res.text(name_node) or ast.get_source_segment(text, name_node) or "?"
        decl = Declared(qualified.rsplit(".", 1)[-1], qualified, kind, rel, node.lineno)
        if kind == "load_inline":
            for arg in ("cpp_sources", "cuda_sources"):
                if _kw(node, arg, 9) is not None:
                    decl.sources.append(f"{rel} (inline {arg})")
            funcs = _kw(node, "functions", 9)
            if isinstance(funcs, (ast.List, ast.Tuple)):
                decl.functions = [str(e.value) for e in funcs.elts if isinstance(e, ast.Constant)
                                  and isinstance(e.value, str)]
            elif isinstance(funcs, ast.Constant) and isinstance(funcs.value, str):
                decl.functions = [funcs.value]
        else:
            sources = _kw(node, "sources", 1)
            decl.sources = res.paths(sources) if sources is not None else []
        inc = _kw(node, "include_dirs", 99) or _kw(node, "extra_include_paths", 99)
        if inc is not None:
            decl.include_dirs = res.paths(inc)
        if kind == "Extension" and not any(s.endswith(_SOURCE_SUFFIXES) for s in decl.sources):
            continue  # a Cython/pure C extension named without C/C++ sources: not a device extension
        out.append(decl)
    return sorted(out, key=lambda d: d.line)


def _is_cpp_extension_load(node: ast.Call) -> bool:
    """``load(name=..., sources=...)`` of torch.utils.cpp_extension, not json.load or torch.load."""
    func = node.func
    if isinstance(func, ast.Attribute):
        owner = func.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
        if owner_name not in ("cpp_extension", "torch_cpp_ext", "cpp_ext"):
            return False
    kws = {kw.arg for kw in node.keywords}
    return "name" in kws and bool(kws & {"sources", "cpp_sources", "cuda_sources"})


__all__ = ["EXTENSION_CALLS", "Declared", "from_cmake", "from_python"]
