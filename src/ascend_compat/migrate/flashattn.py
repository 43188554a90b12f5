"""flash_attn imports against ascend-compat's flash-attn drop-in: what it covers and how ``port`` rewrites them.

The drop-in (``ascend_compat.ecosystem.flash_attn``) has the names of flash-attn 2's public API only: the attention
functions, ``flash_attn_interface``, ``bert_padding`` and ``layers.rotary``. Its names are read from its sources
(``__all__``, public definitions, submodules) rather than imported: it needs torch, the scanner must not.

An import the drop-in covers is reported as AC703 (with the shim active nothing changes: ``import flash_attn`` gives
the drop-in) and carries the edit ``port --mode native`` applies; an import of anything else (``flash_attn.modules``,
``flash_attn.ops.triton``, private helpers) is AC702 and never rewritten.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from importlib import resources
from typing import Any, Optional

from ascend_compat.migrate.model import Edit, Finding

PACKAGE = "flash_attn"
DROP_IN = "ascend_compat.ecosystem.flash_attn"
# Submodules the drop-in's package __init__ imports itself: ``import flash_attn.X`` needs no extra import for them
# (all of them, so that the rewrite binds ``flash_attn`` alone).
_LOADED_BY_INIT = frozenset({"", "flash_attn_interface", "bert_padding", "layers", "layers.rotary"})
UNCOVERED_ALTERNATIVE = (
    "the drop-in's public API (flash_attn_func, flash_attn_varlen_func, the kvpacked/qkvpacked variants, "
    "flash_attn_with_kvcache, bert_padding, layers.rotary) or torch_npu.npu_fusion_attention"
)


def is_flash_attn(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _public_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id == "__all__" and isinstance(node.value, (ast.List, ast.Tuple)):
                    names.update(e.value for e in node.value.elts
                                 if isinstance(e, ast.Constant) and isinstance(e.value, str))
                elif target.id == "__version__" or not target.id.startswith("_"):
                    names.add(target.id)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(DROP_IN):
            # Re-exports (the package's functions); a private alias only loads a submodule.
            names.update(n for n in (a.asname or a.name for a in node.names) if not n.startswith("_"))
    return names


@lru_cache(maxsize=1)
def drop_in_modules() -> dict[str, frozenset[str]]:
    """flash_attn module name (``flash_attn``, ``flash_attn.layers.rotary``...) -> the names the drop-in's module
    has (public definitions, ``__all__``, ``__version__`` and its public submodules)."""
    root = resources.files("ascend_compat.ecosystem") / "flash_attn"
    modules: dict[str, set[str]] = {}
    stack: list[tuple[Any, str]] = [(root, PACKAGE)]
    while stack:
        folder, dotted = stack.pop()
        modules.setdefault(dotted, set())
        for entry in folder.iterdir():
            name = entry.name
            if entry.is_dir() and (entry / "__init__.py").is_file():
                modules[dotted].add(name)
                stack.append((entry, f"{dotted}.{name}"))
            elif name.endswith(".py") and (name == "__init__.py" or not name.startswith("_")):
                # private helper modules (``_ops``, ``_kvcache``...) are not flash_attn modules a script imports
                target = dotted if name == "__init__.py" else f"{dotted}.{name[:-3]}"
                if target != dotted:
                    modules[dotted].add(name[:-3])
                tree = ast.parse(entry.read_text("utf-8"))
                modules.setdefault(target, set()).update(_public_names(tree))
    return {k: frozenset(v) for k, v in modules.items()}


def _target(module: str) -> str:
    return DROP_IN + module[len(PACKAGE):]


def _import_text(node: ast.Import) -> Optional[str]:
    """The rewritten ``import`` statement, or None when one of its flash_attn names is not covered."""
    modules = drop_in_modules()
    parts: list[str] = []
    bind_package = False
    for alias in node.names:
        name = alias.name
        if not is_flash_attn(name):
            parts.append(f"{name} as {alias.asname}" if alias.asname else name)
            continue
        if name not in modules:
            return None
        if alias.asname:
            parts.append(f"{_target(name)} as {alias.asname}")
            continue
        # ``import flash_attn.X`` binds ``flash_attn`` with X loaded: load X (unless __init__ does), bind the package.
        sub = name[len(PACKAGE):].lstrip(".")
        if sub not in _LOADED_BY_INIT:
            parts.append(_target(name))
        bind_package = True
    if bind_package:
        parts.append(f"{DROP_IN} as {PACKAGE}")
    seen: set[str] = set()
    unique = [p for p in parts if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]
    return "import " + ", ".join(unique)


def _uncovered_from(node: ast.ImportFrom) -> list[str]:
    """Names of a ``from flash_attn... import`` the drop-in does not have (``*`` counts as unknown)."""
    assert node.module is not None
    names = drop_in_modules().get(node.module)
    if names is None:
        return [node.module]
    return [f"{node.module}.{a.name}" for a in node.names if a.name not in names]


def _module_token(segment: str, module: str) -> Optional[int]:
    """Offset of ``module`` in a ``from <module> import`` statement's source, when spelled plainly."""
    if not segment.startswith("from"):
        return None
    i = 4
    while i < len(segment) and segment[i] in " \t":
        i += 1
    if i == 4 or segment[i: i + len(module)] != module:
        return None
    after = segment[i + len(module): i + len(module) + 1]
    return i if after in (" ", "\t") else None


def import_findings(path: str, nodes: list[ast.stmt], src: Any, alternative: str) -> list[Finding]:
    """AC703 for the flash_attn imports the drop-in covers (one finding per file carrying every rewrite, plus one
    without a fix per covered import port cannot rewrite) and AC702 for the first one it does not cover. ``src`` is
    the scanner's source (``span``, ``segment``, ``col``)."""
    covered: list[tuple[ast.stmt, Optional[Edit]]] = []
    uncovered: list[tuple[ast.stmt, str]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            flash = [a.name for a in node.names if is_flash_attn(a.name)]
            if not flash:
                continue
            missing = [m for m in flash if m not in drop_in_modules()]
            if missing:
                uncovered.append((node, missing[0]))
                continue
            segment = src.segment(node)
            text = _import_text(node)
            edit = None
            if text is not None and "\\" not in segment and text != segment:
                start, end = src.span(node)
                edit = Edit(start, end, text)
            covered.append((node, edit))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and is_flash_attn(node.module):
            missing = _uncovered_from(node)
            if missing:
                uncovered.append((node, missing[0]))
                continue
            segment = src.segment(node)
            i = _module_token(segment, node.module)
            edit = None
            if i is not None:
                start = src.span(node)[0] + i
                edit = Edit(start, start + len(node.module), _target(node.module))
            covered.append((node, edit))
    out: list[Finding] = []
    rewritten = [(node, e) for node, e in covered if e is not None]
    if rewritten:
        first = rewritten[0][0]
        out.append(Finding(
            "AC703", path, first.lineno, src.col(first.lineno, first.col_offset) + 1,
            f"`{_spelled(first)}` (flash-attn): covered by ascend-compat's drop-in", api="flash-attn",
            alternative=alternative or None, edits=tuple(e for _, e in rewritten),
        ))
    for node, e in covered:
        if e is None:  # spelled across lines or with spaces around dots: said, never half-rewritten
            out.append(Finding(
                "AC703", path, node.lineno, src.col(node.lineno, node.col_offset) + 1,
                f"`{_spelled(node)}` (flash-attn): covered by ascend-compat's drop-in, but spelled in a way port "
                f"does not rewrite: import it from `{DROP_IN}` by hand (or run under the shim)", api="flash-attn",
                alternative=alternative or None, fixable=False,
            ))
    if uncovered:
        node, first_missing = uncovered[0]
        why = ("a star import is not rewritten (the names it binds are not evident)" if first_missing.endswith(".*")
               else f"ascend-compat's drop-in has no `{first_missing}`")
        out.append(Finding(
            "AC702", path, node.lineno, src.col(node.lineno, node.col_offset) + 1,
            f"`{_spelled(node)}` (flash-attn): {why}", api="flash-attn",
            alternative=UNCOVERED_ALTERNATIVE, fixable=False,
        ))
    return out


def _spelled(node: ast.stmt) -> str:
    if isinstance(node, ast.Import):
        return "import " + ", ".join(a.name for a in node.names)
    assert isinstance(node, ast.ImportFrom)
    return f"from {node.module} import " + ", ".join(a.name for a in node.names)
