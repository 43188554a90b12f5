"""Which top-level ``.py`` files of a flat repository ``report --verify`` may import (nanoGPT: ``model.py``, not
``train.py``).

Importing a script runs it, so a top-level file is imported only when reading its code shows that nothing runs at
import time beyond imports and definitions: its top level holds imports, ``def`` and ``class`` (decorators and
defaults without calls other than a plain decorator factory such as ``@torch.no_grad()``), assignments without
calls, docstrings, ``try``/``if`` blocks of those, and ``if __name__ == "__main__":`` (never run by an import,
unless the file rebinds ``__name__``). The repository's own code is never called at import time: no decorator,
decorator factory or metaclass of its own, no subclass of its classes that define ``__init_subclass__``, no import
of a name from a file with a module ``__getattr__``. A file that imports a neighbouring file that fails the test
(``setup.py`` and test files included), or a module of a folder that ``report --verify`` does not import itself,
fails it too. Everything else is left out, named.
"""

from __future__ import annotations

import ast
import builtins
import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Optional, Union

from ascend_compat.migrate.scan import Unreadable, read_bytes

#: Top-level files that are not the project's modules: the build script and pytest's files (never imported by
#: ``report --verify``, but a file that imports one runs it).
_NOT_MODULES = ("setup.py", "conftest.py")
_CODE = "code at its top level"


def _has_call(node: Optional[ast.AST]) -> bool:
    return node is not None and any(isinstance(n, ast.Call) for n in ast.walk(node))


def _root(node: ast.expr) -> Optional[str]:
    """The name an expression starts from: ``a`` for ``a.b(c)[d]``."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _plain_decorator(node: ast.expr) -> bool:
    """``@name``, ``@a.b`` or a factory called with call-free arguments (``@torch.no_grad()``)."""
    if isinstance(node, ast.Call):
        return not _has_call(node.func) and not any(_has_call(a) for a in [*node.args, *node.keywords])
    return not _has_call(node)


def _main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = {ast.dump(test.left), ast.dump(test.comparators[0])}
    return sides == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))}


def _binds_dunder_name(tree: ast.Module) -> bool:
    """Whether anything in the file can rebind the module's ``__name__`` (so its main guard may run)."""
    for n in ast.walk(tree):
        names: list[Optional[str]] = []
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names = [n.id]
        elif isinstance(n, ast.alias):
            names = [n.asname or n.name]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [n.name]
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names = list(n.names)
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            names = [n.name]
        if "__name__" in names:
            return True
    return False


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run at import time, through ``if`` and ``try`` blocks (not function or class bodies)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top_statements([*stmt.body, *stmt.orelse])
        elif isinstance(stmt, ast.Try):
            yield from _top_statements([*stmt.body, *stmt.orelse, *stmt.finalbody,
                                        *(s for h in stmt.handlers for s in h.body)])


@dataclass
class _File:
    """What reading one top-level file shows."""

    problem: Optional[str] = None
    #: Dotted names of the modules its import imports, with each ``from`` name as a possible submodule.
    imports: list[str] = field(default_factory=list)
    #: Top-level files it imports names from (``from x import y``), and whether it subclasses an imported class.
    from_files: set[str] = field(default_factory=set)
    subclasses_import: bool = False
    init_subclass: bool = False
    module_getattr: bool = False


class _Checker:
    """Decides whether executing a file's statements only binds names; ``local`` names are the repository's."""

    def __init__(self, local: set[str], local_star: bool, hooked: bool, trust_guard: bool) -> None:
        self.local, self.local_star, self.hooked, self.trust_guard = local, local_star, hooked, trust_guard

    def _ours(self, node: ast.expr) -> bool:
        """Whether calling ``node`` runs the repository's code (a name a local star import may have bound too)."""
        name = _root(node)
        return name in self.local or (self.local_star and name is not None and not hasattr(builtins, name))

    def _decorators_ok(self, decorators: list[ast.expr]) -> bool:
        return all(_plain_decorator(d) and not self._ours(d) for d in decorators)

    def ok(self, stmt: ast.stmt) -> bool:
        """True when executing ``stmt`` at import time only binds names (see the module's docstring)."""
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            return True
        if isinstance(stmt, ast.Expr):
            return isinstance(stmt.value, ast.Constant)  # a docstring
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = stmt.args
            evaluated = [*a.defaults, *(d for d in a.kw_defaults if d is not None), stmt.returns,
                         *(x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x)]
            return self._decorators_ok(stmt.decorator_list) and not any(_has_call(e) for e in evaluated)
        if isinstance(stmt, ast.ClassDef):
            # A metaclass of ours runs its code; so does __init_subclass__ of one of our classes.
            return (self._decorators_ok(stmt.decorator_list)
                    and not any(_has_call(b) for b in [*stmt.bases, *stmt.keywords])
                    and not any(k.arg == "metaclass" and self._ours(k.value) for k in stmt.keywords)
                    and not (self.hooked and any(self._ours(b) for b in stmt.bases))
                    and all(self.ok(s) for s in stmt.body))
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            return not _has_call(stmt.value) and not _has_call(getattr(stmt, "annotation", None))
        if isinstance(stmt, ast.If):
            if self.trust_guard and _main_guard(stmt.test):
                return all(self.ok(s) for s in stmt.orelse)
            return not _has_call(stmt.test) and all(self.ok(s) for s in [*stmt.body, *stmt.orelse])
        if isinstance(stmt, ast.Try):
            return (all(self.ok(s) for s in [*stmt.body, *stmt.orelse, *stmt.finalbody])
                    and all(not _has_call(h.type) and all(self.ok(s) for s in h.body) for h in stmt.handlers))
        return False


def _is_local(root: str, dotted: str) -> bool:
    """Whether ``dotted``'s top-level name is a file or folder of the repository (``root`` or ``root/src``)."""
    top = dotted.split(".")[0]
    return any(os.path.isfile(os.path.join(b, top + ".py")) or os.path.isdir(os.path.join(b, top))
               for b in (root, os.path.join(root, "src")))


def _read(root: str, tree: ast.Module) -> _File:
    info = _File()
    local: set[str] = set()
    local_star = False
    for stmt in ast.walk(tree):  # imports anywhere but in function bodies run at import; a superset is safe
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                info.imports.append(a.name)
                if _is_local(root, a.name):
                    local.add(a.asname or a.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            info.imports += [stmt.module, *(f"{stmt.module}.{a.name}" for a in stmt.names if a.name != "*")]
            if _is_local(root, stmt.module):
                info.from_files.add(stmt.module)
                local.update(a.asname or a.name for a in stmt.names)
                local_star = local_star or any(a.name == "*" for a in stmt.names)
    for stmt in _top_statements(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(stmt.name)
            info.module_getattr = info.module_getattr or stmt.name == "__getattr__"
        if isinstance(stmt, ast.ClassDef):
            info.init_subclass = info.init_subclass or any(
                isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init_subclass__"
                for s in stmt.body)
            info.subclasses_import = info.subclasses_import or any(
                _root(b) in local and _root(b) not in {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
                for b in stmt.bases)
    checker = _Checker(local, local_star, info.init_subclass,
                       trust_guard=not local_star and not _binds_dunder_name(tree))
    if not all(checker.ok(s) for s in tree.body):
        info.problem = _CODE
    return info


def _parse(path: str) -> Union[ast.Module, str]:
    data = read_bytes(path)  # a FIFO named x.py is not opened, a huge file not read
    if isinstance(data, Unreadable):
        return f"not read: {data.reason}"
    try:
        return ast.parse(data, filename=os.path.basename(path))
    except (SyntaxError, ValueError) as exc:
        return f"not read: {exc}"


def _folder_module(root: str, dotted: str) -> bool:
    """Whether ``dotted`` is a module (file or folder) inside a folder of the repository."""
    rel = dotted.replace(".", os.sep)
    return "." in dotted and any(os.path.isfile(os.path.join(b, rel + ".py")) or os.path.isdir(os.path.join(b, rel))
                                 for b in (root, os.path.join(root, "src")))


def _import_problem(root: str, name: str, info: _File, files: dict[str, _File], bad: dict[str, str],
                    imported: Collection[str]) -> Optional[str]:
    """Why importing ``name`` (read as ``info``) would run code of another file of the repository, or None."""
    for dotted in info.imports:
        top = dotted.split(".")[0]
        if top in bad and top != name:
            return f"imports {top}.py, a script"
        if top in files or not _is_local(root, dotted):
            continue
        # A folder's module: run by this import, so only one report --verify imports anyway will do.
        for i in range(1, dotted.count(".") + 2):
            prefix = ".".join(dotted.split(".")[:i])
            if (i == 1 or _folder_module(root, prefix)) and prefix not in imported:
                return f"imports {prefix}, which report --verify does not import"
    for other in sorted(info.from_files & files.keys()):
        if files[other].module_getattr:
            return f"imports names from {other}.py, whose module __getattr__ runs code"
        if files[other].init_subclass and info.subclasses_import:
            return f"subclasses a class of {other}.py, whose __init_subclass__ runs code"
    return None


def top_level_modules(root: str, imported: Collection[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The top-level ``.py`` files of ``root`` safe to import (module names), and the others with the reason.

    ``imported``: the modules ``report --verify`` imports anyway (its packages'), which a top-level file may import.
    """
    try:
        names = sorted(f[:-3] for f in os.listdir(root) if f.endswith(".py") and f[:-3].isidentifier())
    except OSError:
        return [], {}
    files: dict[str, _File] = {}
    bad: dict[str, str] = {}
    for name in names:
        tree = _parse(os.path.join(root, name + ".py"))
        if isinstance(tree, str):
            bad[name] = tree
            continue
        files[name] = _read(root, tree)
        if files[name].problem:
            bad[name] = files[name].problem or _CODE
    changed = True
    while changed:  # a definitions-only file that imports a script would run that script
        changed = False
        for name in [n for n in files if n not in bad]:
            why = _import_problem(root, name, files[name], files, bad, set(imported))
            if why is not None:
                bad[name] = why
                changed = True
    candidates = [n for n in names if f"{n}.py" not in _NOT_MODULES and not n.startswith("test_")
                  and not n.endswith("_test")]
    return ([n for n in candidates if n not in bad],
            {n: bad[n] for n in candidates if n in bad})


__all__ = ["top_level_modules"]
