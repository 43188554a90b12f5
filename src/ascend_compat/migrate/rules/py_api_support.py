"""torch API support on the NPU (AC801-AC803): ``torch.*`` names torch_npu lists as unsupported, and advice on
precision and faster NPU-affine replacements (``data/torch_npu_api_support.json``, per torch_npu line).

The last family asked about a ``torch.*`` name: it judges every name no rule of another family claimed.
"""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate import apidb
from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.pycontext import PyContext


class ApiSupportRules(PyRuleFamily):
    TITLE = "torch API support on the NPU"
    RULES = (
        RuleDef(
            code="AC801", name="npu-unsupported-api", category="api_support", level="warning",
            message="torch API listed as not supported on the NPU",
            alternative="rewrite with supported ops or keep it on the CPU",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5,
            source="data/torch_npu_api_support.json (torch_npu API support lists, Ascend/pytorch docs)",
        ),
        RuleDef(
            code="AC802", name="npu-precision-advice", category="api_support", level="note",
            message="torch API with a known NPU precision caveat",
            alternative="compare results with `ascend-compat verify`",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.1,
            source="data/torch_npu_api_support.json (torch_npu API support lists, Ascend/pytorch docs)",
        ),
        RuleDef(
            code="AC803", name="npu-performance-advice", category="api_support", level="note",
            message="faster NPU-affine replacement exists",
            alternative="see the replacement",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.1,
            source="data/torch_npu_api_support.json (torch_npu API support lists, Ascend/pytorch docs)",
        ),
    )

    def __init__(self, ctx: PyContext) -> None:
        super().__init__(ctx)
        self.advised: set[str] = set()

    def on_torch(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        line = self.ctx.line
        if apidb.status(q, line) == "unsupported":
            self.add("AC801", node, f"`{q}` is listed as not supported by torch_npu {line}", q)
            return True
        adv = apidb.advice(q)
        if adv is not None and q not in self.advised:  # advice once per API per file, not per use
            self.advised.add(q)
            code = "AC802" if adv.kind == "precision" else "AC803"
            # A precision caveat without a replacement: the rule's fix (compare with verify), not the message again.
            fallback = None if code == "AC802" else adv.text
            self.add(code, node, f"`{q}`: {adv.text}", q, alternative=adv.replacement or fallback)
        return True
