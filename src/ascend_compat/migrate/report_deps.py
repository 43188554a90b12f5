"""Every dependency a repository declares or imports, for the report's dependency table.

``deps`` judges the packages it knows; this module lists all of them (requirements files, ``pyproject.toml``,
``setup.cfg``, ``setup.py`` and third-party imports), so the table has a row for every dependency, with its
version constraint and where it is named.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ascend_compat.migrate import deps
from ascend_compat.migrate.firstparty import Project
from ascend_compat.migrate.model import FileScanned, ScanResult

#: What each status of data/dependencies.json means on the NPU, as the table says it.
STATUS_WORDS = {
    "works": "✅ works as is",
    "native_npu": "✅ supports the NPU (version/build permitting)",
    "alternative": "⚠️ replace",
    "shim": "✅ covered by ascend-compat's drop-in",
    "unsupported": "❌ CUDA-only",
}


@dataclass
class Dependency:
    name: str  # normalized distribution name, or the module name of an import nobody declares
    specs: set[str] = field(default_factory=set)
    where: list[str] = field(default_factory=list)  # file:line

    def to_dict(self) -> dict:
        return {"name": self.name, "version": sorted(self.specs), "where": self.where}


def _requirement_lines(text: str) -> Iterator[tuple[int, str]]:
    for i, raw in enumerate(text.splitlines(), 1):
        line = re.split(r"(^|\s)#", raw, maxsplit=1)[0].strip()
        if line and not line.startswith("-"):
            yield i, line


def _pyproject(text: str) -> list[str]:
    try:
        import tomllib as toml  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        return []
    try:
        data = toml.loads(text)
    except ValueError:
        return []
    project: dict = data["project"] if isinstance(data.get("project"), dict) else {}
    out = [s for s in project.get("dependencies", []) if isinstance(s, str)]
    for group in (project.get("optional-dependencies") or {}).values():
        out += [s for s in group if isinstance(s, str)]
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    for name, value in (poetry.get("dependencies") or {}).items():
        if name.lower() != "python":
            out.append(f"{name}{value if isinstance(value, str) and value[:1] in '<>=!~' else ''}")
    return out


def _setup_py(text: str) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    assigned: dict[str, ast.AST] = {t.id: s.value for s in tree.body if isinstance(s, ast.Assign) for t in s.targets
                if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            for kw in node.keywords:
                if kw.arg in ("install_requires", "extras_require"):
                    out += [(c.lineno, str(c.value)) for c in deps.string_nodes(kw.value, assigned, frozenset())]
    return out


def _declared(path: str, text: str) -> list[tuple[int, str]]:
    name = os.path.basename(path).lower()
    if name == "pyproject.toml":
        specs = _pyproject(text)
        return [(next((i for i, line in enumerate(text.splitlines(), 1) if s.split(";")[0].strip() in line), 1), s)
                for s in specs]
    if name == "setup.py":
        return _setup_py(text)
    if name.endswith((".txt", ".in")):
        return list(_requirement_lines(text))
    return []


def _local_modules(result: ScanResult, root: str) -> set[str]:
    """Names a script in the repository can import from the repository itself (its files and directories)."""
    out: set[str] = set()
    for r in result.files:
        rel = os.path.relpath(os.path.abspath(r.path), root).replace(os.sep, "/")
        parts = rel.split("/")
        out.update(p for p in parts[:-1] if p.isidentifier())
        stem = os.path.splitext(parts[-1])[0]
        if stem.isidentifier():
            out.add(stem)
    return out


def collect(result: ScanResult, project: Project, rel: Callable[[str], str]) -> list[Dependency]:
    """Every declared or imported third-party dependency of the project, by name."""
    from ascend_compat.migrate.scan import read_source

    local = _local_modules(result, project.root)

    found: dict[str, Dependency] = {}

    def add(name: str, spec: str, where: str) -> None:
        if project.owns_distribution(name) or project.owns_module(name):
            return
        dep = found.setdefault(deps.normalize(name), Dependency(deps.normalize(name)))
        if spec:
            dep.specs.add(spec)
        if where not in dep.where:
            dep.where.append(where)

    for r in result.files:
        if not isinstance(r, FileScanned) or not (r.language == "deps" or os.path.basename(r.path) == "setup.py"):
            continue
        data, _ = read_source(r.path)
        for line, spec in _declared(r.path, (data or b"").decode("utf-8", "replace")):
            req = deps.parse_requirement(spec)
            if req is not None:
                add(req.name, req.specifier, f"{rel(r.path)}:{line}")
    stdlib = frozenset(getattr(sys, "stdlib_module_names", ()))
    for r in result.files:
        if not isinstance(r, FileScanned) or r.language != "python":
            continue
        for mod in r.imports:
            if mod in stdlib or mod.startswith("_") or project.owns_module(mod) or mod in local:
                continue
            info = deps.lookup_import(mod)
            key = info.name if info is not None else mod
            if deps.normalize(key) not in found:
                add(key, "", f"{rel(r.path)} (import {mod})")
    return sorted(found.values(), key=lambda d: d.name)


def judge(dep: Dependency) -> tuple[str, str]:
    """(compatibility, NPU alternative) of one dependency from data/dependencies.json."""
    info = deps.lookup(dep.name) or deps.lookup_import(dep.name.replace("-", "_"))
    if info is None:
        return "not in the compatibility table (pure-Python packages work on the NPU)", "none needed if pure Python"
    if info.cuda_runtime:
        return "❌ CUDA runtime package", info.alternative or "remove it: CANN is the NPU runtime"
    return STATUS_WORDS.get(info.status, info.status), info.alternative or "install as is"


__all__ = ["STATUS_WORDS", "Dependency", "collect", "judge"]
