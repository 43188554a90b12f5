"""The extension boundary inventory: every compiled extension a repository builds, connected to its sources,
the functions it exports to Python (pybind11 ``m.def``, ``TORCH_LIBRARY``), the CUDA kernels behind it and
every Python line that uses it.

This is the unit a port is planned in: an extension module is rebuilt for the NPU, each of its kernels is
rewritten (or replaced by a torch_npu operator), and each call site is re-tested.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from ascend_compat.migrate.extbuild import Declared, from_cmake, from_python
from ascend_compat.migrate.firstparty import call_name
from ascend_compat.migrate.model import FileScanned, ScanResult

_KERNEL_NAME = re.compile(r"__global__ kernel (\S+)")
_PYBIND_DEF = re.compile(r"""\.\s*def\s*\(\s*"([A-Za-z_]\w*)""")
_LIBRARY_BLOCK = re.compile(r"\b(PYBIND11_MODULE|TORCH_LIBRARY(?:_FRAGMENT)?)\s*\(")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
#: Device code that makes a kernel hard to port: tensor cores, inline PTX, warp-level and CUB/Thrust primitives.
_COMPLEX_CODES = frozenset({"AC611", "AC607", "AC608"})
_COMPLEX_APIS = re.compile(r"mma|wmma|ldmatrix|cp\.async|__shfl|cub::|Block(Scan|Reduce|Load|Store)")


@dataclass
class Site:
    path: str
    line: int
    name: str = ""  # the exported function used, or the kernel / export name

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "name": self.name}


@dataclass
class Kernel:
    name: str
    path: str
    line: int
    complex: bool = False
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "line": self.line, "complex": self.complex,
                "reasons": self.reasons}


@dataclass
class Extension:
    """One compiled extension module and everything on both sides of its boundary."""

    decl: Declared
    sources: list[str] = field(default_factory=list)  # present, project-relative
    missing: list[str] = field(default_factory=list)
    exports: list[Site] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    call_sites: list[Site] = field(default_factory=list)
    #: The sources and every project header they include (what the port of this extension touches).
    files: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.decl.name

    @property
    def cuda(self) -> bool:
        return self.decl.kind == "CUDAExtension" or bool(self.kernels) or any(
            s.endswith((".cu", ".cuh")) for s in self.sources)

    def to_dict(self) -> dict:
        d = self.decl
        return {
            "name": d.name, "qualified": d.qualified, "kind": d.kind, "declared_at": f"{d.path}:{d.line}",
            "cuda": self.cuda, "sources": self.sources, "missing_sources": self.missing,
            "exports": [s.to_dict() for s in self.exports], "kernels": [k.to_dict() for k in self.kernels],
            "call_sites": [s.to_dict() for s in self.call_sites], "files": self.files,
        }


@dataclass
class Inventory:
    root: str
    extensions: list[Extension] = field(default_factory=list)
    #: __global__ kernels in files no declared extension compiles (a CMake build we could not read, dead code).
    orphan_kernels: list[Kernel] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"root": self.root, "extensions": [e.to_dict() for e in self.extensions],
                "orphan_kernels": [k.to_dict() for k in self.orphan_kernels]}

    def module_names(self) -> set[str]:
        return {e.name for e in self.extensions}


class _Files:
    """Project-relative views of the scan's files, and a bounded reader."""

    def __init__(self, result: ScanResult, root: str) -> None:
        self.root = root
        self.by_rel: dict[str, FileScanned] = {}
        for f in result.files:
            if isinstance(f, FileScanned):
                self.by_rel[self.rel(f.path)] = f
        self.texts: dict[str, str] = {}

    def rel(self, path: str) -> str:
        return os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")

    def text(self, rel: str) -> Optional[str]:
        if rel not in self.texts:
            from ascend_compat.migrate.scan import read_source

            data, _ = read_source(os.path.join(self.root, rel))
            self.texts[rel] = data.decode("utf-8", "replace") if data is not None else ""
        return self.texts[rel] or None


def _declared(files: _Files, result: ScanResult) -> list[Declared]:
    out: list[Declared] = []
    for rel, f in sorted(files.by_rel.items()):
        if f.language != "python":
            continue
        uses_load = any(a.startswith("torch.utils.cpp_extension.load") for a in f.apis)
        if os.path.basename(rel) == "setup.py" or uses_load or "cpp_extension" in f.imports:
            text = files.text(rel)
            if text and ("Extension" in text or "load" in text):
                out.extend(from_python(os.path.join(files.root, rel), text, files.root))
    if any(f.language == "cxx" for f in files.by_rel.values()):
        for rel in _cmake_files(files.root):
            text = files.text(rel)
            if text:
                out.extend(from_cmake(os.path.join(files.root, rel), text, files.root))
    # One entry per module name: the same extension is often declared for two build paths.
    unique: dict[str, Declared] = {}
    for d in out:
        unique.setdefault(d.name, d)
    return sorted(unique.values(), key=lambda d: (d.path, d.line))


def _cmake_files(root: str) -> list[str]:
    from ascend_compat.migrate.discover import VENDORED

    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in VENDORED and not d.startswith("."))
        if "CMakeLists.txt" in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, "CMakeLists.txt"), root).replace(os.sep, "/"))
    return out


def _closure(files: _Files, sources: list[str], include_dirs: list[str]) -> list[str]:
    """The sources plus the project headers they include, transitively."""
    seen: list[str] = []
    todo = list(sources)
    while todo:
        rel = todo.pop(0)
        if rel in seen or rel not in files.by_rel:
            continue
        seen.append(rel)
        text = files.text(rel) or ""
        for inc in _INCLUDE.findall(text):
            for base in (os.path.dirname(rel), *include_dirs):
                cand = os.path.normpath(os.path.join(base, inc)).replace(os.sep, "/")
                if cand in files.by_rel:
                    todo.append(cand)
                    break
            else:
                matches = [r for r in files.by_rel if r.endswith("/" + inc)]
                if len(matches) == 1:
                    todo.append(matches[0])
    return seen


def _kernels(files: _Files, rels: list[str]) -> list[Kernel]:
    """One entry per kernel name (a template kernel is one kernel however often it is instantiated)."""
    out: list[Kernel] = []
    names: set[str] = set()
    for rel in rels:
        f = files.by_rel[rel]
        complex_reasons = sorted({x.code for x in f.findings if x.code in _COMPLEX_CODES}
                                 | {m.group(0) for x in f.findings if x.code == "AC612"
                                    for m in [_COMPLEX_APIS.search(x.api or x.message)] if m})
        for x in f.findings:
            if x.code != "AC609":
                continue
            m = _KERNEL_NAME.search(x.message)
            name = m.group(1) if m else "?"
            if name in names:
                continue
            names.add(name)
            out.append(Kernel(name, rel, x.line, bool(complex_reasons), complex_reasons))
    return out


def _exports(files: _Files, rels: list[str]) -> list[Site]:
    out = []
    for rel in rels:
        if not rel.endswith((".cpp", ".cc", ".cxx", ".cu", ".c")):
            continue
        text = files.text(rel) or ""
        if not _LIBRARY_BLOCK.search(text):
            continue
        clean = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        start = _LIBRARY_BLOCK.search(clean)
        for m in _PYBIND_DEF.finditer(clean, start.start() if start else 0):
            out.append(Site(rel, clean.count("\n", 0, m.start()) + 1, m.group(1)))
    return out


def _call_sites(files: _Files, names: set[str]) -> dict[str, list[Site]]:
    """Every Python line that imports or uses one of the extension modules ``names``."""
    out: dict[str, list[Site]] = {n: [] for n in names}
    if not names:
        return out
    for rel, f in sorted(files.by_rel.items()):
        if f.language != "python":
            continue
        text = files.text(rel) or ""
        if not any(n in text for n in names):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        _CallVisitor(rel, names, out).visit(tree)
    return out


class _CallVisitor(ast.NodeVisitor):
    def __init__(self, rel: str, names: set[str], out: dict[str, list[Site]]) -> None:
        self.rel, self.names, self.out = rel, names, out
        self.aliases: dict[str, str] = {}  # local name -> extension module
        self.functions: dict[str, tuple[str, str]] = {}  # local name -> (module, function)

    def _ext(self, dotted: str) -> Optional[str]:
        last = dotted.rsplit(".", 1)[-1]
        return last if last in self.names else None

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            ext = self._ext(a.name)
            if ext:
                if a.asname or "." not in a.name:  # `import pkg.ext` binds pkg, not the extension
                    self.aliases[a.asname or a.name] = ext
                self.out[ext].append(Site(self.rel, node.lineno, "import"))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        ext = self._ext(mod) if mod else None
        for a in node.names:
            if ext:
                self.functions[a.asname or a.name] = (ext, a.name)
                self.out[ext].append(Site(self.rel, node.lineno, f"import {a.name}"))
            elif a.name in self.names:
                self.aliases[a.asname or a.name] = a.name
                self.out[a.name].append(Site(self.rel, node.lineno, "import"))

    def visit_Assign(self, node: ast.Assign) -> None:
        # ext = load(name="jit_ext", sources=[...]): the module object load() returns
        v = node.value
        if isinstance(v, ast.Call) and call_name(v) in ("load", "load_inline"):
            name = next((k.value for k in v.keywords if k.arg == "name"), v.args[0] if v.args else None)
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in self.names:
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.aliases[t.id] = name.value
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        # importlib.import_module("amp_C") / __import__("amp_C")
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            ext = self._ext(node.args[0].value) if fname in ("import_module", "__import__") else None
            if ext:
                self.out[ext].append(Site(self.rel, node.lineno, "import"))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            self.out[self.aliases[node.value.id]].append(Site(self.rel, node.lineno, node.attr))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.functions:
            ext, func = self.functions[node.id]
            self.out[ext].append(Site(self.rel, node.lineno, func))


def build_inventory(result: ScanResult, root: str) -> Inventory:
    """The inventory of the project at ``root`` from a finished scan (its files and C++ findings)."""
    files = _Files(result, os.path.abspath(root))
    inv = Inventory(files.root)
    owned: set[str] = set()
    for decl in _declared(files, result):
        present = [s for s in decl.sources if s in files.by_rel or os.path.isfile(os.path.join(files.root, s))]
        missing = [s for s in decl.sources if s not in present and "(inline" not in s]
        closure = _closure(files, present, decl.include_dirs)
        owned.update(closure)
        ext = Extension(decl, present, missing, _exports(files, closure), _kernels(files, closure), files=closure)
        if decl.functions and not ext.exports:
            ext.exports = [Site(decl.path, decl.line, fn) for fn in decl.functions]
        inv.extensions.append(ext)
    sites = _call_sites(files, inv.module_names())
    for ext in inv.extensions:
        ext.call_sites = sorted(sites.get(ext.name, []), key=lambda s: (s.path, s.line, s.name))
    orphans = [r for r, f in files.by_rel.items() if f.language == "cxx" and r not in owned]
    inv.orphan_kernels = _kernels(files, sorted(orphans))
    return inv


__all__ = ["Extension", "Inventory", "Kernel", "Site", "build_inventory"]
