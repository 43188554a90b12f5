"""NVIDIA tools (AC505, AC506): NVTX ranges, NVML queries and ``nvidia-smi``."""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.pycontext import CudaRef

_SHELL_CALLS = frozenset({
    "os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "subprocess.getoutput",
})


class NvidiaToolRules(PyRuleFamily):
    TITLE = "NVIDIA profiling and management tools"
    RULES = (
        RuleDef(
            code="AC505", name="nvtx", category="profiling", level="note",
            message="NVTX range (no-op on NPU)",
            alternative="torch_npu.npu.mstx or torch.profiler.record_function",
            shim_handles=True, fixable=False, difficulty="easy", effort_days=0.05,
            source="msTX API reference (mstx); torch_npu API docs: torch_npu.npu.mstx",
        ),
        RuleDef(
            code="AC506", name="nvidia-tools", category="profiling", level="warning",
            message="NVIDIA management tool (nvidia-smi / NVML)",
            alternative="npu-smi info / torch.npu memory APIs",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.25,
            source="Ascend docs: npu-smi command reference",
        ),
    )

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        if q not in _SHELL_CALLS:
            return
        for arg in node.args[:1]:
            values = arg.elts[:1] if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            for v in values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.split(" ")[0] == "nvidia-smi":
                    self.ctx.marked[id(v)] = "AC506"

    def visit_string(self, node: ast.Constant, value: str, marked: Optional[str]) -> bool:
        if marked == "AC506" or value == "nvidia-smi":
            self.add("AC506", node, "nvidia-smi does not see NPUs", "nvidia-smi", alternative="npu-smi info")
            return True
        return False

    def on_torch_cuda(self, ref: CudaRef, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if ref.name != "nvtx":
            return False
        self.add("AC505", node, f"`{ref.q}`: NVTX ranges do nothing on the NPU", ref.q)
        return True

    def on_module(self, q: str, head: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if head in ("pynvml", "nvidia_smi") and q != head:
            self.add("AC506", node, f"NVML query `{q}`", q)
        elif head == "nvtx" and q != head:
            self.add("AC505", node, f"NVTX `{q}`", q)
        else:
            return False
        return True
