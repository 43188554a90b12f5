"""CUDA kernel code (AC609-AC611, AC615, AC619): ``__global__`` kernels, ``<<<...>>>`` launches, inline PTX,
``__device__`` functions and ``__constant__``/``__device__``/``__managed__`` variables."""

from __future__ import annotations

from typing import Any, ClassVar

from ascend_compat.migrate.rules.base import RuleDef
from ascend_compat.migrate.rules.cxx_api import compact
from ascend_compat.migrate.rules.cxx_rules import CxxRuleFamily


class CudaKernelRules(CxxRuleFamily):
    TITLE = "CUDA kernels, launches and device code"
    KINDS: ClassVar[dict[tuple[str, bool], str]] = {
        ("kernel_call_syntax", True): "on_launch", ("gnu_asm_expression", True): "on_asm",
        ("__global__", False): "on_global", ("__device__", False): "on_device",
        ("__constant__", False): "on_memory_space", ("__managed__", False): "on_memory_space",
    }
    RULES = (
        RuleDef(
            code="AC609", name="cuda-kernel", category="custom_kernel", level="error",
            message="__global__ CUDA kernel definition",
            alternative="rewrite as an Ascend C kernel (__global__ __aicore__)",
            shim_handles=False, fixable=False, difficulty="hard", effort_days=3.0, language="cxx",
            source="Ascend C programming guide: kernel function definition (__global__ __aicore__)",
        ),
        RuleDef(
            code="AC610", name="kernel-launch", category="custom_kernel", level="error",
            message="CUDA kernel launch (<<<...>>> or a launch API)",
            alternative="ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...) or aclrtLaunchKernel",
            shim_handles=False, fixable=False, difficulty="hard", effort_days=0.5, language="cxx",
            source=(
                "Ascend C programming guide: Kernel Launch (ACLRT_LAUNCH_KERNEL); CANN Runtime API: aclrtLaunchKernel"
            ),
        ),
        RuleDef(
            code="AC611", name="inline-ptx", category="custom_kernel", level="error",
            message="inline PTX assembly",
            alternative="no counterpart: rewrite with Ascend C APIs",
            shim_handles=False, fixable=False, difficulty="hard", effort_days=2.0, language="cxx",
            source="PTX is NVIDIA's virtual ISA; the Ascend C API reference is the NPU's lowest documented level",
        ),
        RuleDef(
            code="AC615", name="device-function", category="custom_kernel", level="warning",
            message="__device__ function",
            alternative="an __aicore__ inline function of the Ascend C kernel",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5, language="cxx",
            source="Ascend C programming guide: __aicore__ function qualifier",
        ),
        RuleDef(
            code="AC619", name="device-variable", category="custom_kernel", level="warning",
            message="__constant__/__device__/__managed__ variable",
            alternative="global memory passed to the kernel as an argument, or tiling data",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.25, language="cxx",
            source="Ascend C programming guide: kernel arguments live in global memory (GM_ADDR) or tiling data",
        ),
    )

    def on_launch(self, node: Any, cursor: Any) -> bool:
        call = node.parent
        if call is None or call.kind_id not in self.g.call:
            return True
        kernel = call.child_by_field_id(self.g.f_function)
        name = compact(kernel.text) if kernel is not None else "?"
        entry = self.t.kernel["<<<>>>"]
        self.add("AC610", call, "<<<>>>", f"<<<...>>> launch of kernel {name}: use {entry.alternative}",
                 entry.alternative)
        return True

    def on_asm(self, node: Any, cursor: Any) -> bool:
        # asm in host code of a .cpp file is x86/Arm assembly, not PTX.
        if self.scan.cuda_file or self._in_device_function(node):
            entry = self.t.kernel["asm"]
            self.add("AC611", node, "asm", entry.message("inline PTX (asm)"), entry.alternative)
        return False

    def on_global(self, node: Any, cursor: Any) -> bool:
        parent = node.parent
        if parent is not None and parent.kind_id in self.g.func_def:  # a prototype is not a second kernel
            entry = self.t.kernel["__global__"]
            name = self._function_name(parent)
            self.add("AC609", node, "__global__", f"__global__ kernel {name} has no Ascend counterpart: rewrite as "
                     f"{entry.ascend}", entry.alternative)
        return False

    def on_device(self, node: Any, cursor: Any) -> bool:
        g = self.g
        parent = node.parent
        if parent is None:
            return False
        if parent.kind_id in g.func_def:
            tokens = {c.kind_id for c in parent.children}
            if tokens & g.tok_global:
                return False
            entry = self.t.kernel["__device__"]
            name = self._function_name(parent)
            host = " (also __host__: the host build keeps working)" if tokens & g.tok_host else ""
            self.add("AC615", node, "__device__", f"__device__ function {name}{host}: use {entry.ascend}",
                     entry.alternative)
        elif parent.kind_id in g.declaration:
            self._device_variable(node, parent, "__device__ variable")
        return False

    def on_memory_space(self, node: Any, cursor: Any) -> bool:
        decl = node.parent
        if decl is not None and decl.kind_id in self.g.type_qualifier:
            decl = decl.parent
        if decl is not None and decl.kind_id in self.g.declaration:
            self._device_variable(node, decl, node.text.decode())
        return False

    # -- helpers ---------------------------------------------------------------------------------------------
    def _device_variable(self, token: Any, decl: Any, kind: str) -> None:
        declarator = decl.child_by_field_id(self.g.f_declarator)
        if declarator is not None and declarator.kind_id in self.g.func_declarator:
            return  # __device__ prototype
        entry = self.t.kernel[kind]
        api = token.text.decode()
        self.add("AC619", token, api, entry.message(f"{api} variable"), entry.alternative,
                 key=self.scan.base[0] + decl.start_byte)

    def _function_name(self, definition: Any) -> str:
        g = self.g
        d = definition.child_by_field_id(g.f_declarator)
        for _ in range(8):  # pointer/reference declarators wrap the function declarator
            if d is None:
                break
            if d.kind_id in g.func_declarator:
                name = d.child_by_field_id(g.f_declarator)
                return compact(name.text) if name is not None else "?"
            inner = d.child_by_field_id(g.f_declarator)
            d = inner if inner is not None else (d.named_children[-1] if d.named_child_count else None)
        return "?"

    def _in_device_function(self, node: Any) -> bool:
        g = self.g
        n = node.parent
        while n is not None and n.kind_id not in g.func_def:
            n = n.parent
        return n is not None and any(c.kind_id in g.tok_device or c.kind_id in g.tok_global for c in n.children)
