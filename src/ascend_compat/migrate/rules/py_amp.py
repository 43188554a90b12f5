"""Automatic mixed precision (AC201, AC202): ``torch.cuda.amp`` and autocast/GradScaler for device type "cuda"."""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate.model import Edit
from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.py_device_strings import DEVICE_RE
from ascend_compat.migrate.rules.pycontext import CudaRef

_AMP_FIXABLE = {"autocast": "torch.amp.autocast", "GradScaler": "torch.amp.GradScaler"}


class AmpRules(PyRuleFamily):
    TITLE = "CUDA automatic mixed precision"
    RULES = (
        RuleDef(
            code="AC201", name="cuda-amp", category="amp", level="warning",
            message="torch.cuda.amp is CUDA-only",
            alternative="torch.amp.autocast(\"npu\", ...) / torch.amp.GradScaler(\"npu\")",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.05,
            source=(
                "PyTorch docs: torch.amp (torch.cuda.amp.autocast/GradScaler deprecated for torch.amp with a device "
                "type)"
            ),
        ),
        RuleDef(
            code="AC202", name="autocast-cuda-device-type", category="amp", level="warning",
            message="autocast for device_type \"cuda\" is disabled (with a warning) off CUDA",
            alternative="device_type=\"npu\"",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source="PyTorch docs: torch.autocast (device_type); torch_npu API docs: autocast on \"npu\"",
        ),
    )

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        if q is not None and q.startswith("torch.") and q.endswith(("autocast", "GradScaler")):
            for arg in [*node.args[:1], *(kw.value for kw in node.keywords if kw.arg in ("device_type", "device"))]:
                if isinstance(arg, ast.Constant):
                    self.ctx.marked[id(arg)] = "AC202"

    def visit_string(self, node: ast.Constant, value: str, marked: Optional[str]) -> bool:
        if marked != "AC202" or not DEVICE_RE.fullmatch(value):
            return False
        edits, coupled = self.ctx.device_string_fix(node, value)
        self.add("AC202", node, f"device {value!r}", value, edits, coupled=coupled)
        return True

    def on_torch_cuda(self, ref: CudaRef, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if ref.name != "amp":
            return False
        q, last, src = ref.q, ref.last, self.ctx.src
        # Positional arguments mean something else in torch.amp (enabled vs dtype): keywords only.
        kw_only = call is not None and not call.args and all(k.arg for k in call.keywords)
        if not (last in _AMP_FIXABLE and kw_only and ref.cuda_attr is not None and ref.rest.count(".") == 1):
            self.add("AC201", node, f"`{q}` is CUDA-only AMP", q,
                     alternative=f"torch.amp.{last}(\"npu\", ...)" if last != "amp" else None)
            return True
        assert call is not None and ref.root is not None
        start, end = src.span(node)
        edits = [Edit(start, end, f"{ref.root.id}.amp.{last}")]
        first = call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)
        if first is not None:
            if call.keywords and first is call.keywords[0].value:
                kw_start = self.ctx.keyword_start(call.keywords[0])
                edits.append(Edit(kw_start, kw_start, '"npu", '))
            else:
                s, _ = src.span(first)
                edits.append(Edit(s, s, '"npu", '))
        else:
            _, e = src.span(call)
            edits.append(Edit(e - 1, e - 1, '"npu"'))
        self.add("AC201", node, f"`{q}` is CUDA-only AMP", q, tuple(edits))
        return True
