"""Triton kernels against triton-ascend's restrictions (AC420-AC424), for the Python scanner.

Only code inside ``@triton.jit`` functions and launches of such kernels (``kernel[grid](...)``) is checked, and only
what the source states: a dtype, a precision, a permutation or a grid size that is a literal (or a name bound once to
one) is judged, anything computed at run time is left alone. The limits are data (``data/triton_ascend.json``).
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Optional

TL = "triton.language"
_JIT = frozenset({"triton.jit"})
_WRAPPERS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
# Constant folding stops at values no launch grid needs (and no adversarial ``10 ** 10 ** 10`` gets computed).
_MAX_VALUE = 1 << 62


@dataclass(frozen=True)
class Limits:
    max_programs: int
    dot_operand_dtypes: frozenset[str]
    dot_out_dtypes: frozenset[str]
    dot_input_precisions: frozenset[str]
    tl_dtypes: frozenset[str]
    math_core: frozenset[str]
    cuda_libdevice_modules: tuple[str, ...]
    sources: dict[str, str]


@lru_cache(maxsize=1)
def limits() -> Limits:
    """triton-ascend's limits as ``data/triton_ascend.json`` records them."""
    data = json.loads((resources.files("ascend_compat.migrate") / "data" / "triton_ascend.json").read_text("utf-8"))
    return Limits(
        max_programs=int(data["max_programs"]),
        dot_operand_dtypes=frozenset(data["dot_operand_dtypes"]),
        dot_out_dtypes=frozenset(data["dot_out_dtypes"]),
        dot_input_precisions=frozenset(data["dot_input_precisions"]),
        tl_dtypes=frozenset(data["tl_dtypes"]),
        math_core=frozenset(data["math_core"]),
        cuda_libdevice_modules=tuple(data["cuda_libdevice_modules"]),
        sources={code: rule["source"] for code, rule in data["rules"].items()},
    )


def imports_triton(aliases: dict[str, str]) -> bool:
    return any(v == "triton" or v.startswith("triton.") for v in aliases.values())


# -- scopes and constants ----------------------------------------------------------------------------------------------

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """Every node of a scope's body, nested function/class/lambda bodies excluded (their headers included)."""
    body: list[ast.AST]
    if isinstance(scope, ast.Lambda):
        body = [scope.body]
    else:
        body = list(getattr(scope, "body", []))
    out: list[ast.AST] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _SCOPES):
            # Decorators and defaults are evaluated in this scope; the body is not.
            header: list[Any] = list(getattr(node, "decorator_list", []))
            args = getattr(node, "args", None)
            if isinstance(args, ast.arguments):
                header.extend(d for d in (*args.defaults, *args.kw_defaults) if d is not None)
            stack.extend(reversed(header))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


class _Scope:
    """Names bound exactly once in a scope by a plain ``name = value`` (any other binding, parameters included, makes
    the name unknown there and hides the enclosing scopes' binding)."""

    parent: Optional[_Scope]
    is_class: bool

    def __init__(self, node: ast.AST, parent: Optional[_Scope]) -> None:
        # A class body's names are not visible in the functions defined in it.
        while parent is not None and parent.is_class and not isinstance(node, ast.ClassDef):
            parent = parent.parent
        self.parent = parent
        self.is_class = isinstance(node, ast.ClassDef)
        self.values: dict[str, ast.expr] = {}
        counts: dict[str, int] = {}
        args = getattr(node, "args", None)
        if isinstance(args, ast.arguments):
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if a is not None:
                    counts[a.arg] = 2
        for n in _own_nodes(node):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                self.values[n.targets[0].id] = n.value
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
                self.values[n.target.id] = n.value
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                counts[n.name] = 2
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for alias in n.names:
                    counts[(alias.asname or alias.name).split(".")[0]] = 2
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                for name in n.names:
                    counts[name] = 2
        self.bound = set(counts)
        self.values = {k: v for k, v in self.values.items() if counts.get(k) == 1}

    def lookup(self, name: str) -> tuple[Optional[ast.expr], Optional[_Scope]]:
        """The value a name is bound to and the scope binding it, or (None, None) when it is not evident."""
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.bound:
                value = scope.values.get(name)
                return (value, scope) if value is not None else (None, None)
            scope = scope.parent
        return None, None


def _rebound(scope: _Scope, name: str) -> bool:
    """Whether a function or class scope around a use binds ``name`` itself (so it is not the module's kernel)."""
    s: Optional[_Scope] = scope
    while s is not None and s.parent is not None:
        if name in s.bound:
            return True
        s = s.parent
    return False


class _Folder:
    """Integer constant folding over literals, arithmetic, ``triton.cdiv`` and names bound once."""

    def __init__(self, qual: Any, meta: Optional[dict[str, ast.expr]] = None, meta_name: str = "",
                 meta_scope: Optional[_Scope] = None) -> None:
        self.qual = qual
        self.meta = meta or {}
        self.meta_name = meta_name
        self.meta_scope = meta_scope  # the launch's scope: where its keyword arguments are evaluated
        self.depth = 0
        # Each (expression, scope) is folded once: names bound to sums of names would otherwise be re-folded
        # exponentially often (x1 = x0 + x0; x2 = x1 + x1; ...).
        self.memo: dict[tuple[int, int], Optional[int]] = {}

    def value(self, node: ast.AST, scope: Optional[_Scope]) -> Optional[int]:
        key = (id(node), id(scope))
        if key in self.memo:
            return self.memo[key]
        self.depth += 1
        try:
            if self.depth > 50:
                return None
            v = self._value(node, scope)
            v = v if v is None or abs(v) <= _MAX_VALUE else None
        finally:
            self.depth -= 1
        self.memo[key] = v
        return v

    def _value(self, node: ast.AST, scope: Optional[_Scope]) -> Optional[int]:
        if isinstance(node, ast.Constant):
            return node.value if type(node.value) is int else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.value(node.operand, scope)
            return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
        if isinstance(node, ast.BinOp):
            a, b = self.value(node.left, scope), self.value(node.right, scope)
            if a is None or b is None:
                return None
            op = node.op
            if isinstance(op, ast.Add):
                return a + b
            if isinstance(op, ast.Sub):
                return a - b
            if isinstance(op, ast.Mult):
                return a * b
            if isinstance(op, ast.FloorDiv) and b:
                return a // b
            if isinstance(op, ast.Mod) and b:
                return a % b
            if isinstance(op, ast.LShift) and 0 <= b < 63:
                return a << b
            if isinstance(op, ast.Pow) and 0 <= b < 63 and abs(a) < 1 << 16:
                return a ** b
            return None
        if isinstance(node, ast.Call) and len(node.args) == 2 and not node.keywords:
            if self.qual(node.func) in ("triton.cdiv", "triton.language.cdiv"):
                a, b = self.value(node.args[0], scope), self.value(node.args[1], scope)
                return -(-a // b) if a is not None and b else None
            return None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == self.meta_name:
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in self.meta:
                return self.value(self.meta[key.value], self.meta_scope)
            return None
        if isinstance(node, ast.Name) and scope is not None:
            bound, where = scope.lookup(node.id)
            return None if bound is None else self.value(bound, where)
        return None


# -- the checks --------------------------------------------------------------------------------------------------------

def _function_defs(tree: ast.Module) -> list[ast.AST]:
    """Every ``def`` of a file, found through statement bodies only (no expression is visited)."""
    out: list[ast.AST] = []
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(node)
        for f in ("body", "orelse", "finalbody", "handlers", "cases"):
            value = getattr(node, f, None)
            if isinstance(value, list):
                stack.extend(value)
    return out


def _is_kernel(scanner: Any, node: ast.AST) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any(scanner.qual(d.func if isinstance(d, ast.Call) else d) in _JIT for d in decorators)


def _dims(args: list[ast.expr]) -> Optional[list[int]]:
    """A permutation spelled as literals: one tuple/list argument or several int arguments."""
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = list(args[0].elts)
    if not args or not all(isinstance(a, ast.Constant) and type(a.value) is int for a in args):
        return None
    return [a.value for a in args]  # type: ignore[attr-defined]


def non_adjacent(perm: list[int]) -> bool:
    """Whether a permutation is more than one swap of two adjacent axes (identity and invalid ones are not)."""
    if sorted(perm) != list(range(len(perm))):
        return False
    moved = [i for i, p in enumerate(perm) if p != i]
    return not (not moved or (len(moved) == 2 and moved[1] - moved[0] == 1))


class TritonChecks:
    """Runs the triton-ascend checks over one file for ``rules.py_triton`` (``qual``, ``add``, ``tree``, ``src``)."""

    def __init__(self, scanner: Any) -> None:
        self.s = scanner
        self.limits = limits()

    def run(self) -> None:
        tree = self.s.tree
        if "jit" not in self.s.src.text:
            return
        kernels = [n for n in _function_defs(tree) if _is_kernel(self.s, n)]
        if not kernels:
            return  # most files that import triton define no kernel: no scope analysis for them
        # Every definition is checked: a file may define one kernel name twice (per Triton version, say).
        kernel_ids, names = {id(n) for n in kernels}, {getattr(n, "name", "") for n in kernels}
        for fn in kernels:
            self.kernel(fn)
        scopes: list[tuple[ast.AST, _Scope]] = [(tree, _Scope(tree, None))]
        i = 0
        while i < len(scopes):
            node, scope = scopes[i]
            i += 1
            for n in _own_nodes(node):
                if isinstance(n, _SCOPES) and id(n) not in kernel_ids:
                    scopes.append((n, _Scope(n, scope)))
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
                    target = n.func.value
                    if isinstance(target, ast.Name) and target.id in names and not _rebound(scope, target.id):
                        self.launch(n, target.id, n.func.slice, scope)

    # -- inside a kernel --
    def kernel(self, fn: ast.AST) -> None:
        name = getattr(fn, "name", "?")
        locals_ = _Scope(fn, None)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            q = self.s.qual(node.func)
            if q is None:
                if isinstance(node.func, ast.Attribute) and node.func.attr in ("permute", "trans"):
                    self.permute(node, f"{node.func.attr}", node.args, name)
                continue
            if q == f"{TL}.inline_asm_elementwise":
                self.s.add("AC420", node, f"inline assembly in Triton kernel `{name}` (PTX/GCN cannot run on the NPU)",
                           q)
            elif any(q.startswith(m + ".") for m in self.limits.cuda_libdevice_modules):
                what = "CUDA libdevice" if "libdevice" in q else "CUDA-only"
                self.s.add("AC421", node, f"{what} `{q.rsplit('.', 1)[-1]}` in Triton kernel `{name}`", q)
            elif q.startswith(f"{TL}.math.") and q.count(".") == 3 and q.rsplit(".", 1)[1] not in self.limits.math_core:
                self.s.add("AC421", node, f"`tl.math.{q.rsplit('.', 1)[1]}` in Triton kernel `{name}` is a libdevice "
                           "function (Triton 2.x); tl.math keeps only the core functions", q)
            elif q == f"{TL}.dot":
                self.dot(node, name, locals_)
            elif q == f"{TL}.dot_scaled":
                self.s.add("AC422", node, f"`tl.dot_scaled` in Triton kernel `{name}` (microscaling formats)", q,
                           alternative="dequantize the operands to bf16/fp16 and use tl.dot")
            elif q in (f"{TL}.permute", f"{TL}.trans"):
                self.permute(node, q.rsplit(".", 1)[1], node.args[1:], name)

    def _dtype(self, node: ast.AST) -> Optional[str]:
        q = self.s.qual(node)
        if q is not None and q.startswith(TL + ".") and q.count(".") == 2:
            d = q.rsplit(".", 1)[1]
            return d if d in self.limits.tl_dtypes else None
        return None

    def _operand_dtype(self, node: ast.AST, scope: _Scope, depth: int = 0) -> Optional[str]:
        """The dtype an operand is evidently cast to (``x.to(tl.float8e5)``, or a name bound once to one)."""
        if depth > 5:
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dtype"), None)
            return self._dtype(arg) if arg is not None else None
        if isinstance(node, ast.Name):
            bound, where = scope.lookup(node.id)
            return None if bound is None or where is None else self._operand_dtype(bound, where, depth + 1)
        return None

    def dot(self, node: ast.Call, kernel: str, scope: _Scope) -> None:
        lim = self.limits
        for kw in node.keywords:
            v = kw.value
            if kw.arg == "input_precision" and isinstance(v, ast.Constant) and isinstance(v.value, str):
                if v.value not in lim.dot_input_precisions:
                    self.s.add("AC422", v, f"`tl.dot(..., input_precision={v.value!r})` in Triton kernel `{kernel}`: "
                               "triton-ascend accepts \"ieee\" and \"hf32\"", f"{TL}.dot",
                               alternative="input_precision=\"hf32\" (HF32, Ascend's reduced-precision fp32 "
                               "matmul) or \"ieee\"")
            elif kw.arg == "allow_tf32" and isinstance(v, ast.Constant) and v.value is True:
                self.s.add("AC422", v, f"`tl.dot(..., allow_tf32=True)` in Triton kernel `{kernel}`: TF32 is not an "
                           "Ascend input precision", f"{TL}.dot", alternative="input_precision=\"hf32\" (or drop it)")
            elif kw.arg == "out_dtype":
                d = self._dtype(v)
                if d is not None and d not in lim.dot_out_dtypes:
                    self.s.add("AC422", v, f"`tl.dot(..., out_dtype=tl.{d})` in Triton kernel `{kernel}`", f"{TL}.dot")
        for arg in node.args[:2]:
            d = self._operand_dtype(arg, scope)
            if d is not None and d not in lim.dot_operand_dtypes:
                self.s.add("AC422", arg, f"`tl.dot` operand cast to tl.{d} in Triton kernel `{kernel}`: A2/A3 cube "
                           "units take int8, fp16, bf16 and fp32", f"{TL}.dot")

    def permute(self, node: ast.Call, op: str, args: list[ast.expr], kernel: str) -> None:
        dims_kw = next((k.value for k in node.keywords if k.arg == "dims"), None)
        perm = _dims([dims_kw] if dims_kw is not None else list(args))
        if perm is not None and non_adjacent(perm):
            self.s.add("AC424", node, f"`{op}` by {tuple(perm)} in Triton kernel `{kernel}` moves non-adjacent axes",
                       f"{TL}.{op}")

    # -- launches --
    def launch(self, call: ast.Call, kernel: str, grid: ast.expr, scope: _Scope) -> None:
        meta = {k.arg: k.value for k in call.keywords if k.arg}
        expr: Optional[ast.AST] = grid
        folder = _Folder(self.s.qual)
        where: Optional[_Scope] = scope
        if isinstance(expr, ast.Name):
            expr, where = scope.lookup(expr.id)
        if isinstance(expr, ast.Lambda):
            params = [a.arg for a in expr.args.args]
            folder = _Folder(self.s.qual, meta, params[0] if len(params) == 1 else "", scope)
            where = _Scope(expr, where)
            expr = expr.body
        if expr is None:
            return
        elts = list(expr.elts) if isinstance(expr, (ast.Tuple, ast.List)) else [expr]
        sizes = [folder.value(e, where) for e in elts]
        if not sizes or any(v is None for v in sizes):
            return
        total = math.prod(v for v in sizes if v is not None)
        if total > self.limits.max_programs:
            shape = f" ({' x '.join(str(v) for v in sizes)})" if len(sizes) > 1 else ""
            self.s.add("AC423", call.func, f"launch of Triton kernel `{kernel}` with {total} programs{shape}; "
                       f"triton-ascend allows {self.limits.max_programs}", kernel)
