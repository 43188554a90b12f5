"""Device placement (AC101, AC104, AC105, AC113, AC116, AC117): ``.cuda()``, integer device ordinals, ``.is_cuda``,
``device_map="auto"``, ``torch.load`` without ``map_location`` and CUDA-only device properties."""

from __future__ import annotations

import ast
import re
from typing import Optional

from ascend_compat.migrate.model import Edit
from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef

# Names that hold an integer ordinal (``device_id``/``dev_id`` are left out: often already a device string).
RANK_NAME_RE = re.compile(r"(?:local_)?rank|(?:local_)?gpu(?:_id|_idx|_index)?|cuda_id|gpu_rank")
# CUDA fields of get_device_properties() that torch_npu's NPUDeviceProperties lack, and the field that stands in
# (None: no counterpart). torch_npu's properties have name, total_memory, cube_core_num, vector_core_num, L2_cache_size.
CUDA_ONLY_PROPERTIES: dict[str, Optional[str]] = {
    "multi_processor_count": "cube_core_num", "warp_size": None, "max_threads_per_multi_processor": None,
    "major": None, "minor": None, "gcnArchName": None, "regs_per_multiprocessor": None,
}  # fmt: skip


def is_ordinal(arg: ast.AST) -> bool:
    """An int literal, or a name that holds a rank or GPU index."""
    if isinstance(arg, ast.Constant):
        return type(arg.value) is int
    if isinstance(arg, ast.Name):
        return RANK_NAME_RE.fullmatch(arg.id) is not None
    if isinstance(arg, ast.Attribute):
        return RANK_NAME_RE.fullmatch(arg.attr) is not None
    return False


class DevicePlacementRules(PyRuleFamily):
    TITLE = "moving tensors and modules to a CUDA device"
    PLAIN_ATTRS = frozenset({"is_cuda"})
    RULES = (
        RuleDef(
            code="AC101", name="cuda-method", category="device", level="warning",
            message="`.cuda()` moves to a CUDA device",
            alternative="`.npu()` (torch_npu) or `.to(device)`",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source="torch_npu API docs (Ascend/pytorch): Tensor.npu(), Module.npu(); PyTorch docs: Tensor.to(device)",
        ),
        RuleDef(
            code="AC104", name="int-device-ordinal", category="device", level="warning",
            message="a bare integer device means a CUDA device in PyTorch",
            alternative="\"npu:N\" (or torch.device(\"npu\", N))",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source="PyTorch docs: torch.device (a device built from a bare integer ordinal)",
        ),
        RuleDef(
            code="AC105", name="is-cuda", category="device", level="warning",
            message="`.is_cuda` is False for NPU tensors",
            alternative="`.is_npu` (torch_npu) or `x.device.type == \"npu\"`",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source="torch_npu API docs (Ascend/pytorch): Tensor.is_npu; PyTorch docs: Tensor.is_cuda",
        ),
        RuleDef(
            code="AC113", name="device-map-auto", category="device", level="note",
            message="device_map=\"auto\" placement",
            alternative="accelerate places on npu when torch_npu is importable; check max_memory per NPU",
            shim_handles=True, fixable=False, difficulty="trivial", effort_days=0.0,
            source=(
                "Hugging Face accelerate docs: big model inference (device_map=\"auto\", max_memory); accelerate's "
                "is_npu_available"
            ),
        ),
        RuleDef(
            code="AC116", name="torch-load-map-location", category="device", level="warning",
            message="`torch.load` without map_location puts a CUDA checkpoint back on CUDA (fails without CUDA)",
            alternative="torch.load(..., map_location=\"npu\")",
            shim_handles=True, fixable=True, difficulty="trivial", effort_days=0.02,
            source="PyTorch docs: torch.load (map_location)",
        ),
        RuleDef(
            code="AC117", name="cuda-device-property", category="device", level="warning",
            message="a CUDA field of get_device_properties() that torch_npu's properties do not have",
            alternative=(
                "multi_processor_count -> cube_core_num (AI cores); warp_size, max_threads_per_multi_processor, "
                "major/minor have no NPU meaning: compute the value another way"
            ),
            shim_handles=True, fixable=True, difficulty="easy", effort_days=0.05,
            source=(
                "Ascend/pytorch torch_npu NPUDeviceProperties (name, total_memory, cube_core_num, vector_core_num, "
                "L2_cache_size)"
            ),
        ),
    )

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        ctx = self.ctx
        for kw in node.keywords:
            if kw.arg == "device_map" and isinstance(kw.value, ast.Constant) and kw.value.value == "auto":
                self.add("AC113", kw.value, "device_map=\"auto\"", "device_map")
                ctx.skip.add(id(kw.value))
        func = node.func
        if q is not None:
            if q == "torch.device" and node.args and is_ordinal(node.args[0]):
                self.ordinal(node.args[0], "torch.device")
        elif isinstance(func, ast.Attribute):
            if func.attr == "cuda":  # not ``some_module.cuda(...)``: that resolves to an import
                # A file that defines its own ``cuda()`` method may be calling it: report, do not rename.
                edits = () if "cuda" in ctx.defined else ctx.attr_edit(func, "npu")
                self.add("AC101", func, "`.cuda()` moves to a CUDA device", ".cuda()", edits, coupled=True)
            elif func.attr == "to" and node.args and is_ordinal(node.args[0]):
                self.ordinal(node.args[0], ".to()")

    def ordinal(self, arg: ast.AST, where: str) -> None:
        ctx = self.ctx
        start, end = ctx.src.span(arg)
        seg = ctx.src.text[start:end]
        ordinal = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, int) else None
        new = f'"npu:{ordinal}"' if ordinal is not None else f'f"npu:{{{seg}}}"'
        # Inside an f-string the new quotes could clash with the enclosing ones before Python 3.12: report only.
        ok = "\n" not in seg and '"' not in seg and not ctx.in_fstring
        edits = (Edit(start, end, new),) if ok else ()
        self.add("AC104", arg, f"integer device `{seg}` in {where} means a CUDA device", seg, edits, coupled=True)
        ctx.skip.add(id(arg))

    def visit_attribute(self, node: ast.Attribute) -> None:
        ctx = self.ctx
        if node.attr in CUDA_ONLY_PROPERTIES and isinstance(node.value, ast.Call) \
                and ctx.qual(node.value.func) == "torch.cuda.get_device_properties":
            # Renaming the call to torch.npu alone would read a field the NPU's properties do not have.
            new = CUDA_ONLY_PROPERTIES[node.attr]
            self.add("AC117", node, f"`.{node.attr}` of CUDA device properties", node.attr,
                     ctx.attr_edit(node, new) if new else (), coupled=True)
        elif node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
            # A tensor's ``is_cuda`` is read-only, so a written one is the file's own attribute (not reported).
            # Where the file defines or writes ``is_cuda``, no read is renamed (renaming reads but not writes
            # gave ``if self.is_npu ... elif self.is_npu``); nor does it hold back the rest of its statement.
            fixable = "is_cuda" not in ctx.defined
            self.add("AC105", node, "`.is_cuda` is False for NPU tensors", "Tensor.is_cuda",
                     ctx.attr_edit(node, "is_npu") if fixable else (), coupled=fixable)

    def on_torch(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if q == "torch.load" and call is not None:
            self.torch_load(node, call)
        return False  # torch.load is also an API whose NPU support is judged

    def torch_load(self, node: ast.AST, call: ast.Call) -> None:
        """``torch.load(f)`` without ``map_location`` puts a CUDA checkpoint's tensors back on CUDA (AC116)."""
        if len(call.args) > 1 or any(k.arg == "map_location" for k in call.keywords):
            return  # explicit, positional or keyword: left alone
        message = "`torch.load` without map_location restores tensors on their CUDA device"
        unknown = any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)
        if unknown or not (call.args or call.keywords):  # map_location may be in *args / **kwargs: report only
            self.add("AC116", node, message, "torch.load")
            return
        src = self.ctx.src
        last = max((*call.args, *(k.value for k in call.keywords)), key=lambda a: src.span(a)[1])
        _, end = src.span(last)
        self.add("AC116", node, message, "torch.load", (Edit(end, end, ', map_location="npu"'),))
