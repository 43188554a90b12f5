"""Distributed (AC301, AC302): the NCCL backend and NCCL environment variables.

``"nccl"`` is rewritten to ``"hccl"`` only where it selects the collective backend (``init_process_group``,
``backend=`` keywords, names with "backend" in them, comparisons, argparse defaults); since the value travels
(a default, a choices list, a comparison), one literal that cannot change keeps every one in the file unchanged.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ascend_compat.migrate.model import Edit
from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.pycontext import PyContext

NCCL_ENV_RE = re.compile(r"NCCL_[A-Z0-9_]+")
_NCCL_BACKEND = ("torch.distributed.Backend.NCCL", "torch.distributed.distributed_c10d.Backend.NCCL")


class DistributedRules(PyRuleFamily):
    TITLE = "the NCCL collective backend"
    RULES = (
        RuleDef(
            code="AC301", name="nccl-backend", category="distributed", level="error",
            message="NCCL collective backend",
            alternative="\"hccl\" (the Ascend collective library)",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.05,
            source="Ascend/pytorch torch_npu registers the \"hccl\" process-group backend; HCCL API reference",
        ),
        RuleDef(
            code="AC302", name="nccl-env", category="distributed", level="note",
            message="NCCL environment variable has no effect on HCCL",
            alternative="HCCL_* settings (e.g. HCCL_CONNECT_TIMEOUT, HCCL_SOCKET_IFNAME, HCCL_BUFFSIZE)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.1,
            source="HCCL environment variable reference (HCCL_CONNECT_TIMEOUT, HCCL_SOCKET_IFNAME, HCCL_BUFFSIZE)",
        ),
    )

    def __init__(self, ctx: PyContext) -> None:
        super().__init__(ctx)
        self.backend_ctx: set[int] = set()  # "nccl" literals that select the collective backend

    def backend_literal(self, node: Optional[ast.AST]) -> None:
        if isinstance(node, ast.Constant):
            self.backend_ctx.add(id(node))
        elif isinstance(node, ast.IfExp):
            self.backend_literal(node.body)
            self.backend_literal(node.orelse)

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        for kw in node.keywords:
            if kw.arg in ("backend", "dist_backend", "ddp_backend"):
                self.backend_literal(kw.value)
        if fname in ("init_process_group", "new_group") and node.args:
            self.backend_literal(node.args[0])
        if fname == "add_argument" and any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and "backend" in a.value.lower()
            for a in node.args
        ):
            # argparse's --dist-backend default (pytorch/examples' imagenet): the value reaches init_process_group.
            for kw in node.keywords:
                if kw.arg == "default":
                    self.backend_literal(kw.value)

    def visit_assign(self, node: ast.Assign) -> None:
        if not isinstance(node.value, (ast.Constant, ast.IfExp)):
            return
        names = [
            t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else "" for t in node.targets
        ]
        if any("backend" in n.lower() for n in names):
            self.backend_literal(node.value)

    def visit_compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                self.backend_literal(operands[i])
                self.backend_literal(operands[i + 1])

    def visit_string(self, node: ast.Constant, value: str, marked: Optional[str]) -> bool:
        if value == "nccl":
            # Rewritten only where it selects the backend (not in lists of choices or lookup tables).
            selects = id(node) in self.backend_ctx and id(node) not in self.ctx.nofix
            edits = self.ctx.literal_edit(node, "nccl", "hccl") if selects else ()
            self.add("AC301", node, "NCCL collective backend \"nccl\"", "nccl", edits)
        elif NCCL_ENV_RE.fullmatch(value):
            self.add("AC302", node, f"{value} has no effect on HCCL", value)
        else:
            return False
        return True

    def on_torch(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if q in _NCCL_BACKEND:
            assert isinstance(node, ast.Attribute)
            start, end = self.ctx.src.span(node)
            self.add("AC301", node, "NCCL collective backend", q, (Edit(start, end, '"hccl"'),))
        elif q == "torch.distributed.is_nccl_available":
            self.add("AC301", node, f"`{q}` asks about NCCL", q, alternative="torch.distributed.is_hccl_available()")
        else:
            return False
        return True

    def finish(self) -> None:
        findings = self.ctx.findings
        nccl = [i for i, f in enumerate(findings) if f.code == "AC301" and f.api == "nccl"]
        if any(not findings[i].edits for i in nccl):
            for i in nccl:
                if findings[i].edits:
                    self.ctx.drop_fix(i)
