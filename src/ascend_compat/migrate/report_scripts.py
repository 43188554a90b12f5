"""Which top-level ``.py`` files of a flat repository ``report --verify`` may import (nanoGPT: ``model.py``, not
``train.py``).

Importing a script runs it, so a top-level file is imported only when reading its code shows that nothing runs at
import time beyond imports and definitions: its top level holds imports, ``def`` and ``class`` (decorators and
defaults without calls other than a plain decorator factory such as ``@torch.no_grad()``), assignments without
calls, docstrings, ``try``/``if`` blocks of those, and ``if __name__ == "__main__":`` (never run by an import).
A file that imports a neighbouring script that fails the test fails it too. Everything else is left out, named.
"""

from __future__ import annotations

import ast
import os
from typing import Optional

from ascend_compat.migrate.scan import Unreadable, read_bytes

#: Top-level files that are not the project's modules: the build script and pytest's files.
_NOT_MODULES = ("setup.py", "conftest.py")


def _has_call(node: Optional[ast.AST]) -> bool:
    return node is not None and any(isinstance(n, ast.Call) for n in ast.walk(node))


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


def _definition_only(stmt: ast.stmt) -> bool:
    """True when executing ``stmt`` at import time only binds names (see the module's docstring)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)  # a docstring
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = stmt.args
        evaluated = [*a.defaults, *(d for d in a.kw_defaults if d is not None), stmt.returns,
                     *(x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x)]
        return all(_plain_decorator(d) for d in stmt.decorator_list) and not any(_has_call(e) for e in evaluated)
    if isinstance(stmt, ast.ClassDef):
        return (all(_plain_decorator(d) for d in stmt.decorator_list)
                and not any(_has_call(b) for b in [*stmt.bases, *stmt.keywords])
                and all(_definition_only(s) for s in stmt.body))
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return not _has_call(stmt.value) and not _has_call(getattr(stmt, "annotation", None))
    if isinstance(stmt, ast.If):
        if _main_guard(stmt.test):
            return not stmt.orelse or all(_definition_only(s) for s in stmt.orelse)
        return not _has_call(stmt.test) and all(_definition_only(s) for s in [*stmt.body, *stmt.orelse])
    if isinstance(stmt, ast.Try):
        return (all(_definition_only(s) for s in [*stmt.body, *stmt.orelse, *stmt.finalbody])
                and all(not _has_call(h.type) and all(_definition_only(s) for s in h.body) for h in stmt.handlers))
    return False


def _imported_tops(tree: ast.Module) -> set[str]:
    """Top-level names of the absolute imports at import time (function bodies left out)."""
    names: set[str] = set()
    for stmt in tree.body:
        for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else ():
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
    return names


def top_level_modules(root: str) -> tuple[list[str], dict[str, str]]:
    """The top-level ``.py`` files of ``root`` safe to import (module names), and the others with the reason."""
    try:
        files = sorted(f for f in os.listdir(root) if f.endswith(".py") and f[:-3].isidentifier()
                       and f not in _NOT_MODULES and not f.startswith("test_") and not f.endswith("_test.py"))
    except OSError:
        return [], {}
    safe: dict[str, set[str]] = {}
    left_out: dict[str, str] = {}
    for f in files:
        name = f[:-3]
        data = read_bytes(os.path.join(root, f))  # a FIFO named x.py is not opened, a huge file not read
        if isinstance(data, Unreadable):
            left_out[name] = f"not read: {data.reason}"
            continue
        try:
            tree = ast.parse(data, filename=f)
        except (SyntaxError, ValueError) as exc:
            left_out[name] = f"not read: {exc}"
            continue
        if all(_definition_only(s) for s in tree.body):
            safe[name] = _imported_tops(tree)
        else:
            left_out[name] = "code at its top level"
    changed = True
    while changed:  # a definitions-only file that imports a script would run that script
        changed = False
        for name, tops in list(safe.items()):
            bad = sorted(t for t in tops if t in left_out)
            if bad:
                left_out[name] = f"imports {bad[0]}.py, a script"
                del safe[name]
                changed = True
    return sorted(safe), dict(sorted(left_out.items()))


__all__ = ["top_level_modules"]
