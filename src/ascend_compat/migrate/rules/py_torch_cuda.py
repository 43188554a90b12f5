"""The ``torch.cuda`` namespace (AC108, AC109, AC112, AC114, AC115, AC504): names torch.npu has under the same
name (renamed by ``port``), names it lacks, legacy CUDA tensor types, memory and stream APIs and CUDA graphs.

Every ``torch.cuda`` name no other family claims (AMP, NVTX, capability probes) ends here, judged by the shim's
classification of every ``torch.cuda`` name (``cuda_shim/cuda_api.json``).
"""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from importlib import resources
from typing import Any, Optional

from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef
from ascend_compat.migrate.rules.pycontext import CudaRef

_LEGACY_SUFFIXES = ("Tensor", "Storage")
_STREAM_NAMES = frozenset({
    "Stream", "Event", "current_stream", "default_stream", "synchronize", "stream", "set_stream",
    "StreamContext", "ExternalStream", "streams",
})
_GRAPH_NAMES = frozenset({
    "CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle", "graphs", "is_current_stream_capturing",
})
# Names of torch.cuda that torch.npu provides beyond those the shim table calls "direct".
_NPU_ALSO = frozenset({"is_available", "is_bf16_supported", "get_device_properties", "utilization"})
# The legacy tensor types torch_npu defines as torch.npu.<Dtype>Tensor.
_NPU_TENSOR_TYPES = frozenset(
    f"{d}Tensor" for d in ("Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
)


@lru_cache(maxsize=1)
def cuda_table() -> dict[str, dict[str, Any]]:
    """torch.cuda names and submodules as the runtime shim classifies them (``cuda_shim/cuda_api.json``)."""
    data = json.loads(resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_text("utf-8"))
    table = dict(data["names"])
    for sub, names in data["submodules"].items():
        if not isinstance(names, dict):
            continue  # "top-level": the submodule re-exports names classified above
        for name, entry in names.items():
            table[f"{sub}.{name}"] = entry
    return table


def npu_has(name: str) -> bool:
    """Whether ``torch.npu.<name>`` exists with the meaning of ``torch.cuda.<name>``."""
    entry = cuda_table().get(name)
    return name in _NPU_ALSO or (entry is not None and entry.get("kind") == "direct")


class TorchCudaRules(PyRuleFamily):
    TITLE = "the torch.cuda namespace"
    RULES = (
        RuleDef(
            code="AC108", name="torch-cuda-api", category="device", level="warning",
            message="torch.cuda API",
            alternative="the same API under torch.npu (torch_npu)",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source=(
                "cuda_shim/cuda_api.json (every torch.cuda name classified against torch.npu; torch_npu.npu API docs)"
            ),
        ),
        RuleDef(
            code="AC109", name="torch-cuda-unsupported", category="device", level="error",
            message="torch.cuda API with no NPU counterpart",
            alternative="see the alternative; needs a code change",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5,
            source=(
                "cuda_shim/cuda_api.json (every torch.cuda name classified against torch.npu; torch_npu.npu API docs)"
            ),
        ),
        RuleDef(
            code="AC112", name="legacy-cuda-tensor-type", category="device", level="warning",
            message="legacy CUDA tensor/storage type",
            alternative=(
                "torch.npu.<Dtype>Tensor (torch_npu) / torch.empty(..., dtype=..., device=\"npu\") / "
                "torch.UntypedStorage"
            ),
            shim_handles=True, fixable=True, difficulty="easy", effort_days=0.1,
            source=(
                "Ascend/pytorch torch_npu: torch.npu.<Dtype>Tensor legacy tensor types; PyTorch docs: "
                "torch.set_default_tensor_type"
            ),
        ),
        RuleDef(
            code="AC114", name="memory-api", category="memory", level="warning",
            message="CUDA memory API",
            alternative="the same API under torch.npu (torch_npu)",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source=(
                "cuda_shim/cuda_api.json (every torch.cuda name classified against torch.npu; torch_npu.npu API docs)"
            ),
        ),
        RuleDef(
            code="AC115", name="stream-event-api", category="streams", level="warning",
            message="CUDA stream/event API",
            alternative="torch.npu.Stream / torch.npu.Event / torch.npu.synchronize",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.05,
            source=(
                "cuda_shim/cuda_api.json (every torch.cuda name classified against torch.npu; torch_npu.npu API docs)"
            ),
        ),
        RuleDef(
            code="AC504", name="cuda-graphs", category="streams", level="warning",
            message="CUDA graph capture",
            alternative="torch.npu.NPUGraph / torch.npu.graph (recent torch_npu) or torchair graph mode",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=1.0,
            source="torch_npu API docs: torch.npu.NPUGraph, torch.npu.graph; Ascend/torchair graph mode",
        ),
    )

    def visit_string(self, node: ast.Constant, value: str, marked: Optional[str]) -> bool:
        """A legacy type by name: ``set_default_tensor_type("torch.cuda.FloatTensor")``, ``x.type("torch.cuda.…")``."""
        if not (value.startswith("torch.cuda.") and value[len("torch.cuda."):] in _NPU_TENSOR_TYPES):
            return False
        self.add("AC112", node, f"{value!r}: legacy CUDA tensor type", value,
                 self.ctx.literal_edit(node, "torch.cuda.", "torch.npu."), coupled=True)
        return True

    def on_torch_cuda(self, ref: CudaRef, node: ast.AST, call: Optional[ast.Call]) -> bool:
        q, name = ref.q, ref.name
        if name in _GRAPH_NAMES:
            self.add("AC504", node, f"`{q}`: CUDA graphs", q)
        elif name.endswith(_LEGACY_SUFFIXES) and name[:1].isupper():
            self.legacy_type(ref, node)
        else:
            self.api(ref, node)
        return True

    def legacy_type(self, ref: CudaRef, node: ast.AST) -> None:
        # torch_npu has the legacy tensor types (torch.npu.HalfTensor, ...) but no typed storages. They also serve
        # as the default tensor type (torch_npu's API support list marks torch.set_default_tensor_type supported
        # on Atlas A2/A3, and its test_tensor_creation_ops sets torch.npu.FloatTensor as the default), which keeps
        # torch.Tensor(sizes) on the device; set_default_dtype + set_default_device would not.
        name = ref.name
        fixable = name in _NPU_TENSOR_TYPES and ref.rest == name and ref.cuda_attr is not None
        edits = self.ctx.attr_edit(ref.cuda_attr, "npu") if fixable and ref.cuda_attr is not None else ()
        kind = "storage" if name.endswith("Storage") else "tensor"
        self.add("AC112", node, f"`{ref.q}`: legacy CUDA {kind} type", ref.q, edits, coupled=True)

    def api(self, ref: CudaRef, node: ast.AST) -> None:
        q, name = ref.q, ref.name
        entry = cuda_table().get(name) if name else None
        if name and (entry is None or entry.get("kind") in ("unsupported", "submodule")) and not npu_has(name):
            alt = (entry or {}).get("alternative") or (entry or {}).get("note")
            self.add("AC109", node, f"`{q}` has no NPU counterpart", q, alternative=alt)
            return
        code = "AC114" if "memory" in name or name in ("empty_cache", "mem_get_info") else (
            "AC115" if name in _STREAM_NAMES else "AC108")
        fixable = ref.cuda_attr is not None and not ref.via_submodule and (not name or npu_has(name))
        edits = self.ctx.attr_edit(ref.cuda_attr, "npu") if fixable and ref.cuda_attr is not None else ()
        self.add(code, node, f"`{q}`", q, edits, coupled=True)
