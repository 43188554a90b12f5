"""The project's own packages: what a repository defines is never one of its third-party dependencies.

A repository names its own distributions in ``pyproject.toml`` (``[project] name``, Poetry's ``name``),
``setup.cfg`` (``[metadata] name``) and ``setup(name=...)`` of every ``setup.py`` it contains, and its own import
packages as the directories with an ``__init__.py`` at its top level (or under ``src/``) and its top-level
modules. ``import awq`` in the llm-awq repository is its own package, not the ``autoawq`` distribution.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from ascend_compat.migrate.discover import VENDORED

#: Top-level files that are scripts of the build, never importable packages of the project.
_NOT_MODULES = frozenset({"setup", "conftest", "noxfile", "fabfile", "manage"})
_IMPORT_MESSAGE = re.compile(r"^`(?:import|from) ([A-Za-z_][\w.]*)")
#: How far above a scanned directory the project's root (its setup.py / pyproject.toml) is looked for.
_MAX_UP = 3


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Project:
    """What a repository defines: its root, distribution names and top-level import names."""

    root: str
    distributions: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    #: Where each name was found (``name -> "pyproject.toml"``), for the report.
    evidence: dict[str, str] = field(default_factory=dict)

    def owns_module(self, module: str) -> bool:
        top = module.split(".", 1)[0]
        return top in self.packages or normalize(top) in self.distributions

    def owns_distribution(self, name: str) -> bool:
        return normalize(name) in self.distributions

    def to_dict(self) -> dict:
        return {"root": self.root, "distributions": sorted(self.distributions), "packages": sorted(self.packages),
                "evidence": dict(sorted(self.evidence.items()))}


def project_root(paths: list[str]) -> str:
    """The directory holding the project's build files: the first scanned directory, or an ancestor (up to
    three levels, never above a ``.git``) that has ``setup.py``/``pyproject.toml``/``setup.cfg``."""
    if not paths:
        return os.getcwd()
    first = os.path.abspath(paths[0])
    start = first if os.path.isdir(first) else os.path.dirname(first)
    d = start
    for _ in range(_MAX_UP + 1):
        if any(os.path.isfile(os.path.join(d, n)) for n in ("setup.py", "pyproject.toml", "setup.cfg")):
            return d
        if os.path.isdir(os.path.join(d, ".git")):
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return start


def _read(path: str, limit: int = 2 * 1024 * 1024) -> Optional[str]:
    from ascend_compat.migrate.scan import read_source

    data, _problem = read_source(path, limit)
    return data.decode("utf-8", "replace") if data is not None else None


def _pyproject_names(text: str) -> list[str]:
    try:
        import tomllib as toml  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        try:
            import tomli as toml  # type: ignore[import-not-found,no-redef]
        except ImportError:
            m = re.search(r'^\s*name\s*=\s*["\']([^"\']+)', text, re.M)
            return [m.group(1)] if m else []
    try:
        data = toml.loads(text)
    except ValueError:
        return []
    names = []
    for table in (data.get("project"), data.get("tool", {}).get("poetry")):
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            names.append(table["name"])
    return names


def setup_py_names(text: str) -> list[str]:
    """``setup(name=...)`` values of a setup.py: literals, or module-level names bound to literals."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    consts = module_strings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and call_name(node) == "setup":
            for kw in node.keywords:
                if kw.arg == "name":
                    value = string_value(kw.value, consts)
                    if value:
                        out.append(value)
    return out


def call_name(node: ast.Call) -> str:
    """The called name's last part (``setuptools.setup`` -> ``setup``)."""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "literal"`` bindings."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = stmt.value.value
    return out


def string_value(node: ast.AST, consts: dict[str, str]) -> Optional[str]:
    """A string literal, or a name bound to one at module level; None for anything computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    return None


def _top_level_packages(root: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for base in (root, os.path.join(root, "src")):
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            full = os.path.join(base, name)
            if name in VENDORED or name.startswith(".") or not name.isidentifier():
                if name.endswith(".py") and name[:-3].isidentifier() and name[:-3] not in _NOT_MODULES:
                    out.setdefault(name[:-3], os.path.relpath(full, root))
                continue
            if os.path.isdir(full) and (os.path.isfile(os.path.join(full, "__init__.py")) or _has_python(full)):
                # A directory of Python code without __init__.py is a namespace package (PEP 420): llm-awq's awq/.
                out.setdefault(name, os.path.relpath(full, root) + "/")
    return out


def _has_python(d: str) -> bool:
    """Python files in ``d`` or one level below it."""
    try:
        for entry in os.scandir(d):
            if entry.name.endswith(".py") and entry.is_file():
                return True
            if entry.is_dir() and entry.name.isidentifier() and not entry.name.startswith("."):
                if any(n.endswith(".py") for n in os.listdir(entry.path)):
                    return True
    except OSError:
        return False
    return False


def detect(paths: list[str], setup_files: Optional[list[str]] = None) -> Project:
    """The project the scanned ``paths`` belong to. ``setup_files`` are the repository's setup.py files (the
    scan's file list); the root's own build files are always read."""
    root = project_root(paths)
    project = Project(root)

    def add_dist(name: str, where: str) -> None:
        project.distributions.add(normalize(name))
        project.evidence.setdefault(normalize(name), where)
        # A distribution usually installs the import package of the same name (mamba-ssm -> mamba_ssm).
        module = re.sub(r"[-.]", "_", name)
        if module.isidentifier():
            project.packages.add(module)

    text = _read(os.path.join(root, "pyproject.toml"))
    for name in _pyproject_names(text or ""):
        add_dist(name, "pyproject.toml")
    text = _read(os.path.join(root, "setup.cfg"))
    if text:
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read_string(text)
            if cfg.has_option("metadata", "name"):
                add_dist(cfg.get("metadata", "name"), "setup.cfg")
        except configparser.Error:
            pass
    setups = {os.path.join(root, "setup.py"), *(setup_files or [])}
    for path in sorted(setups):
        text = _read(path)
        for name in setup_py_names(text or ""):
            add_dist(name, os.path.relpath(path, root).replace(os.sep, "/"))
    for name, where in _top_level_packages(root).items():
        project.packages.add(name)
        project.evidence.setdefault(name, where)
    return project


def imported_module(message: str) -> Optional[str]:
    """The module an import finding's message names (``deps.import_finding`` starts it with it)."""
    m = _IMPORT_MESSAGE.match(message)
    return m.group(1) if m else None


__all__ = ["Project", "call_name", "detect", "imported_module", "module_strings", "normalize", "project_root",
           "setup_py_names", "string_value"]
