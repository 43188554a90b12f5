"""Device strings (AC102, AC103, AC106, AC107): ``"cuda"``/``"cuda:N"`` literals, device formats and f-strings, and
``"cuda"`` compared with a device type.

A literal is rewritten to ``npu`` only where it is a device: keys of dicts and subscripts (tables keyed by device
type), ``__all__`` entries, attribute names given to ``getattr`` and the arguments of other libraries' calls
(``jax.devices("cuda")``) are reported without an edit (``PyContext.nofix``).
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ascend_compat.migrate.model import Edit
from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef

DEVICE_RE = re.compile(r"cuda(?::\d+)?")
DEVICE_FORMAT_RE = re.compile(r"cuda:(?:%d|%s|%i|\{[^{}]*\})")


class DeviceStringRules(PyRuleFamily):
    TITLE = "device strings that name CUDA"
    RULES = (
        RuleDef(
            code="AC102", name="cuda-device-literal", category="device", level="warning",
            message="device string names CUDA",
            alternative="\"npu\" / \"npu:N\"",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source=(
                "Ascend/pytorch torch_npu/csrc/core/npu/DeviceUtils.h (torch_npu registers the NPU as device type "
                "\"npu\")"
            ),
        ),
        RuleDef(
            code="AC103", name="cuda-device-format", category="device", level="warning",
            message="device string built for CUDA (f-string or format)",
            alternative="f\"npu:{index}\"",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source=(
                "Ascend/pytorch torch_npu/csrc/core/npu/DeviceUtils.h (torch_npu registers the NPU as device type "
                "\"npu\")"
            ),
        ),
        RuleDef(
            code="AC106", name="cuda-device-type-compare", category="device", level="warning",
            message="device type compared with \"cuda\"",
            alternative="compare with \"npu\"",
            shim_handles=False, fixable=True, difficulty="easy", effort_days=0.05,
            source=(
                "Ascend/pytorch torch_npu/csrc/core/npu/DeviceUtils.h (torch_npu registers the NPU as device type "
                "\"npu\")"
            ),
        ),
        RuleDef(
            code="AC107", name="cuda-substring-check", category="device", level="warning",
            message="\"cuda\" looked for inside a device string",
            alternative="look for \"npu\"",
            shim_handles=False, fixable=True, difficulty="easy", effort_days=0.05,
            source=(
                "Ascend/pytorch torch_npu/csrc/core/npu/DeviceUtils.h (torch_npu registers the NPU as device type "
                "\"npu\")"
            ),
        ),
    )

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        ctx = self.ctx
        if fname in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) > 1:
            ctx.nofix.add(id(node.args[1]))  # an attribute name, not a device
        if q is not None:
            if not q.startswith("torch"):
                # Device strings of other libraries (jax.devices("cuda"), tvm.device("cuda")): report, keep.
                for a in (*node.args, *(k.value for k in node.keywords)):
                    if isinstance(a, ast.Constant):
                        ctx.nofix.add(id(a))
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "startswith" and node.args:
            self.mark_compare_literals(node.args[0], "AC106")

    def mark_compare_literals(self, node: ast.AST, code: str) -> None:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for elt in node.elts:
                self.mark_compare_literals(elt, code)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.ctx.marked[id(node)] = code

    def visit_dict(self, node: ast.Dict) -> None:
        for key in node.keys:
            if isinstance(key, ast.Constant):
                self.ctx.nofix.add(id(key))

    def visit_subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.slice, ast.Constant):
            self.ctx.nofix.add(id(node.slice))  # a lookup in a table keyed by device type, like the table's keys

    def visit_assign(self, node: ast.Assign) -> None:
        if isinstance(node.value, (ast.List, ast.Tuple)) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            for n in node.value.elts:
                self.ctx.nofix.add(id(n))  # exported names, not devices

    def visit_compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            left, right = operands[i], operands[i + 1]
            if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                self.mark_compare_literals(left, "AC106")
                self.mark_compare_literals(right, "AC106")
            elif isinstance(op, (ast.In, ast.NotIn)):
                self.mark_compare_literals(left, "AC107")
                if isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                    self.mark_compare_literals(right, "AC106")

    def visit_string(self, node: ast.Constant, value: str, marked: Optional[str]) -> bool:
        if DEVICE_RE.fullmatch(value):
            code = marked if marked in ("AC106", "AC107") else "AC102"
            edits, coupled = self.ctx.device_string_fix(node, value)
            self.add(code, node, f"device {value!r}", value, edits, coupled=coupled)
        elif marked in ("AC106", "AC107") and value.startswith("cuda") and len(value) <= 8:
            self.add(marked, node, f"{value!r} compared with a device", value,
                     self.ctx.literal_edit(node, value, "npu" + value[4:]), coupled=True)
        elif DEVICE_FORMAT_RE.fullmatch(value):
            self.add("AC103", node, f"device format {value!r}", value,
                     self.ctx.literal_edit(node, "cuda", "npu"), coupled=True)
        else:
            return False
        return True

    def visit_joinedstr(self, node: ast.JoinedStr) -> bool:
        values = node.values
        first = values[0] if values else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value == "cuda:"
                and len(values) == 2 and isinstance(values[1], ast.FormattedValue)):
            return False
        src = self.ctx.src
        seg = src.segment(node)
        i = seg.find("cuda:")
        edits: tuple[Edit, ...] = ()
        if 0 < i <= 3 and seg.count("cuda") == 1:
            start, _ = src.span(node)
            edits = (Edit(start + i, start + i + 4, "npu"),)
        self.add("AC103", node, "device f-string for CUDA", "f\"cuda:{...}\"", edits, coupled=True)
        return True
