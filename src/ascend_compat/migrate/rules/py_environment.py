"""Visible devices (AC111): ``CUDA_VISIBLE_DEVICES`` does not select NPUs (``ASCEND_RT_VISIBLE_DEVICES`` does).

The name is renamed only as the exact key of an environment: ``os.environ[...]``, ``os.getenv(...)``, ``env=`` of
a subprocess, a copy of ``os.environ`` (decided once the whole file is seen); never inside other strings.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.pycontext import PyContext

ENV_KEY = "CUDA_VISIBLE_DEVICES"
ENV_KEY_RE = re.compile(r"(?<![A-Za-z0-9_])CUDA_VISIBLE_DEVICES(?![A-Za-z0-9_])")
# Calls whose first argument is an environment variable name.
_ENV_METHODS = frozenset({"get", "setdefault", "pop", "__getitem__", "__setitem__", "__delitem__"})
_ENV_CALLS = frozenset({"os.getenv", "os.putenv", "os.unsetenv", "os.environ.get", "os.environ.setdefault",
                        "os.environ.pop", "os.environ.__getitem__", "os.environ.__setitem__", "os.environ.__delitem__"})


class VisibleDevicesRules(PyRuleFamily):
    TITLE = "CUDA_VISIBLE_DEVICES"
    RULES = (
        RuleDef(
            code="AC111", name="cuda-visible-devices", category="device", level="warning",
            message="CUDA_VISIBLE_DEVICES does not select NPUs",
            alternative="ASCEND_RT_VISIBLE_DEVICES",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source="CANN environment variable reference: ASCEND_RT_VISIBLE_DEVICES",
        ),
    )

    def __init__(self, ctx: PyContext) -> None:
        super().__init__(ctx)
        # id(str constant) -> "" (os.environ and the like) or the name of the mapping it indexes (an env dict,
        # decided once the whole file is seen).
        self.env_keys: dict[int, str] = {}
        self.env_names: set[str] = set()  # names bound to an environment mapping (``env = os.environ.copy()``)
        self.env_pending: list[tuple[int, str]] = []  # (finding index, mapping name) to settle after the walk

    def env_copy(self, node: ast.AST) -> bool:
        """``os.environ.copy()``, ``dict(os.environ)``, ``copy.copy(os.environ)`` or ``{**os.environ, ...}``."""
        ctx = self.ctx
        if isinstance(node, ast.Dict):
            return any(k is None and ctx.is_environ(v) for k, v in zip(node.keys, node.values))
        if not isinstance(node, ast.Call):
            return False
        q = ctx.qual(node.func) or (node.func.id if isinstance(node.func, ast.Name) else "")
        if q == "os.environ.copy":
            return True
        return q in ("dict", "copy.copy", "copy.deepcopy") and bool(node.args) and ctx.is_environ(node.args[0])

    def mark_env_dict(self, node: ast.AST) -> None:
        """The string keys of a dict literal that is an environment (``env={...}``, ``{**os.environ, ...}``)."""
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value == ENV_KEY:
                    self.env_keys[id(key)] = ""

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        """Mark the environment keys a call names: ``os.getenv(KEY)``, ``env.get(KEY)``, ``env={KEY: ...}``."""
        func = node.func
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and first.value == ENV_KEY:
            if q in _ENV_CALLS:
                self.env_keys[id(first)] = ""
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in _ENV_METHODS:
                self.env_keys.setdefault(id(first), func.value.id)
        if q == "os.environ.update" and first is not None:
            self.mark_env_dict(first)
        for kw in node.keywords:
            if kw.arg == "env":
                if isinstance(kw.value, ast.Name):
                    self.env_names.add(kw.value.id)
                else:
                    self.mark_env_dict(kw.value)

    def visit_dict(self, node: ast.Dict) -> None:
        if self.env_copy(node):
            self.mark_env_dict(node)

    def visit_subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        if isinstance(key, ast.Constant) and key.value == ENV_KEY:
            if self.ctx.is_environ(node.value):
                self.env_keys[id(key)] = ""
            elif isinstance(node.value, ast.Name):
                self.env_keys[id(key)] = node.value.id  # an env dict when the file uses it as one

    def visit_assign(self, node: ast.Assign) -> None:
        if self.env_copy(node.value):
            self.env_names.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def visit_compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            left, right = operands[i], operands[i + 1]
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(left, ast.Constant) and left.value == ENV_KEY \
                    and self.ctx.is_environ(right):
                self.env_keys[id(left)] = ""

    def visit_string(self, node: ast.Constant, value: str, marked: Optional[str]) -> bool:
        if not ENV_KEY_RE.search(value):
            return False
        # Renamed only as the exact key in an environment context: never inside other strings or messages.
        where = self.env_keys.get(id(node)) if value == ENV_KEY else None
        edits = self.ctx.literal_edit(node, ENV_KEY, "ASCEND_RT_VISIBLE_DEVICES") if where is not None else ()
        self.add("AC111", node, "CUDA_VISIBLE_DEVICES does not select NPUs", ENV_KEY, edits)
        if where and edits:
            self.env_pending.append((len(self.ctx.findings) - 1, where))
        return True

    def visit_joinedstr(self, node: ast.JoinedStr) -> bool:
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str) and ENV_KEY_RE.search(v.value):
                # Part of a longer string (a shell line, a message): reported, never rewritten.
                self.add("AC111", node, "CUDA_VISIBLE_DEVICES does not select NPUs", ENV_KEY)
                return True
        return False

    def finish(self) -> None:
        """Keep a rename of ``name["CUDA_VISIBLE_DEVICES"]`` only where ``name`` is an environment mapping."""
        for i, name in self.env_pending:
            if name not in self.env_names:
                self.ctx.drop_fix(i)
