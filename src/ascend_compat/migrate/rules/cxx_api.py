"""CUDA API uses in C/C++/CUDA (AC601-AC608, AC612-AC614, AC616-AC618): runtime, driver and library calls, CUDA
headers and PyTorch's CUDA C++ API, each looked up in ``data/cuda_cxx_apis.json`` (``cxx_tables``).

What counts is a *use* that must change: calls, and library types once per file; CUDA types (``cudaStream_t``) and
enum values are not reported on their own, since they change together with the calls that use them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from ascend_compat.migrate.model import RULES
from ascend_compat.migrate.rules.base import RuleDef
from ascend_compat.migrate.rules.cxx_rules import CxxRuleFamily
from ascend_compat.migrate.rules.cxx_tables import TORCH_ROOTS, ApiEntry


def compact(text: bytes, limit: int = 60) -> str:
    """Source text on one line, at most ``limit`` characters."""
    s = " ".join(text.decode("utf-8", "replace").split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


class CudaApiRules(CxxRuleFamily):
    TITLE = "CUDA runtime, driver, library and PyTorch CUDA C++ APIs"
    # Launch APIs (cudaLaunchKernel, cudaLaunchCooperativeKernel) are runtime entries reported as kernel launches.
    ALSO_REPORTS = frozenset({"AC610"})
    KINDS: ClassVar[dict[tuple[str, bool], str]] = {
        ("call_expression", True): "on_call", ("qualified_identifier", True): "on_qualified",
        ("type_identifier", True): "on_type_identifier", ("preproc_include", True): "on_include",
    }
    RULES = (
        RuleDef(
            code="AC601", name="cuda-runtime-memory", category="memory", level="warning",
            message="CUDA runtime memory call",
            alternative="the ACL runtime counterpart (aclrtMalloc, aclrtMemcpy, aclrtFree, ...)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.05, language="cxx",
            source="CANN Runtime API reference (Ascend docs, Runtime API (C)); data/cuda_cxx_apis.json per entry",
        ),
        RuleDef(
            code="AC602", name="cuda-driver-call", category="device", level="warning",
            message="CUDA driver API call",
            alternative="the ACL runtime counterpart (aclInit, aclrtCreateContext, aclrtMalloc, ...)",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.25, language="cxx",
            source="CANN Runtime API reference (Ascend docs, Runtime API (C)); data/cuda_cxx_apis.json per entry",
        ),
        RuleDef(
            code="AC603", name="cublas-call", category="blas_dnn", level="warning",
            message="cuBLAS call",
            alternative="aclnn matmul operators (aclnnMatmul, aclnnBatchMatMul) or the ATB Linear operation",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5, language="cxx",
            source=(
                "aclnn operator API (aclnnMatmul, aclnnBatchMatMul; Ascend/op-plugin op_plugin/ops/opapi); "
                "data/cuda_cxx_apis.json"
            ),
        ),
        RuleDef(
            code="AC604", name="cudnn-call", category="blas_dnn", level="warning",
            message="cuDNN call",
            alternative="the matching aclnn operator (aclnnConvolution, aclnnBatchNorm, ...)",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5, language="cxx",
            source=(
                "aclnn operator API (aclnnConvolution, aclnnBatchNorm; Ascend/op-plugin op_plugin/ops/opapi); "
                "data/cuda_cxx_apis.json"
            ),
        ),
        RuleDef(
            code="AC605", name="nccl-call", category="distributed", level="warning",
            message="NCCL call",
            alternative="the HCCL function of the same collective (HcclAllReduce, HcclCommInitRootInfo, ...)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.1, language="cxx",
            source="HCCL API reference; Ascend/pytorch third_party/hccl/inc/hccl/hccl.h; data/cuda_cxx_apis.json",
        ),
        RuleDef(
            code="AC606", name="curand-call", category="blas_dnn", level="warning",
            message="cuRAND call",
            alternative="aclnn random operators with the torch_npu generator",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.25, language="cxx",
            source="aclnn random operators (Ascend/op-plugin); Ascend/pytorch torch_npu/csrc/aten/NPUGeneratorImpl.h",
        ),
        RuleDef(
            code="AC607", name="thrust-cub", category="custom_kernel", level="error",
            message="Thrust/CUB call or type (CUDA-only template libraries)",
            alternative="torch ops on NPU tensors, aclnn operators or an Ascend C kernel",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.5, language="cxx",
            source="Thrust/CUB run CUDA kernels, no Ascend port exists; aclnn operator API; data/cuda_cxx_apis.json",
        ),
        RuleDef(
            code="AC608", name="cuda-library", category="blas_dnn", level="error",
            message="other CUDA library (cuFFT, cuSPARSE, cuSOLVER, NVRTC, CUTLASS)",
            alternative="torch ops on the NPU, CATLASS for CUTLASS GEMMs, otherwise a rewrite",
            shim_handles=False, fixable=False, difficulty="hard", effort_days=1.0, language="cxx",
            source="CANN ships no cuFFT/cuSPARSE/cuSOLVER/NVRTC counterpart; CATLASS (gitcode.com/cann/catlass)",
        ),
        RuleDef(
            code="AC612", name="device-intrinsic", category="custom_kernel", level="warning",
            message="CUDA device intrinsic (warp, atomic, fast math)",
            alternative="the Ascend C API of the same role, or a vector rewrite",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=0.25, language="cxx",
            source="Ascend C API reference (basic/high-level kernel APIs); data/cuda_cxx_apis.json per intrinsic",
        ),
        RuleDef(
            code="AC613", name="cuda-header", category="device", level="note",
            message="CUDA header include",
            alternative="the Ascend header (acl/acl.h, hccl/hccl.h, aclnnop/..., torch_npu/csrc/...)",
            shim_handles=False, fixable=False, difficulty="trivial", effort_days=0.02, language="cxx",
            source="data/cuda_cxx_apis.json header entries (CANN, HCCL, aclnn and torch_npu headers)",
        ),
        RuleDef(
            code="AC614", name="torch-cuda-cxx-api", category="device", level="warning",
            message="PyTorch CUDA C++ API in an extension",
            alternative="the torch_npu C++ counterpart (c10_npu::getCurrentNPUStream, c10_npu::NPUGuard, ...)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.05, language="cxx",
            source=(
                "Ascend/pytorch torch_npu/csrc/core/npu (NPUStream.h, NPUGuard.h, NPUFunctions.h, c10_npu namespace)"
            ),
        ),
        RuleDef(
            code="AC616", name="cuda-runtime-stream", category="streams", level="warning",
            message="CUDA runtime stream/event/graph call",
            alternative="the ACL runtime counterpart (aclrtCreateStream, aclrtRecordEvent, ...)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.05, language="cxx",
            source="CANN Runtime API reference (Ascend docs, Runtime API (C)); data/cuda_cxx_apis.json per entry",
        ),
        RuleDef(
            code="AC617", name="cuda-runtime-device", category="device", level="warning",
            message="CUDA runtime device/error call",
            alternative="the ACL runtime counterpart (aclrtSetDevice, aclrtGetDeviceCount, ...)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.05, language="cxx",
            source="CANN Runtime API reference (Ascend docs, Runtime API (C)); data/cuda_cxx_apis.json per entry",
        ),
        RuleDef(
            code="AC618", name="nvtx-cxx", category="profiling", level="note",
            message="NVTX annotation",
            alternative="the mstx counterpart (mstxRangeStartA, ...)",
            shim_handles=False, fixable=False, difficulty="easy", effort_days=0.02, language="cxx",
            source="msTX API reference (mstx/ms_tools_ext.h): mstxMarkA, mstxRangeStartA, mstxRangeEnd",
        ),
    )

    def add_entry(self, entry: ApiEntry, node: Any, api: str, once_per_file: bool = False) -> None:
        code = entry.code
        # A hard entry (no counterpart worth the name) outranks the rule's default level.
        level = "error" if entry.difficulty == "hard" and RULES[code].level != "error" else None
        self.add(code, node, api, entry.message(api), entry.alternative, level, key=(api,) if once_per_file else None)

    # -- name resolution -------------------------------------------------------------------------------------
    def lookup_name(self, name: bytes) -> Optional[ApiEntry]:
        t = self.t
        entry = t.names.get(name)
        if entry is not None:
            return entry
        if name.startswith(t.prefix_starts):
            for prefix, boundary, entry in t.prefixes:
                if name.startswith(prefix) and (
                    not boundary or (len(name) > len(prefix) and 65 <= name[len(prefix)] <= 90)
                ):
                    return entry
        return None

    def _name_text(self, node: Any) -> bytes:
        if node.kind_id in self.g.template:
            name = node.child_by_field_id(self.g.f_name)
            if name is not None:
                return name.text
        return node.text

    def _components(self, node: Any) -> list[bytes]:
        g = self.g
        comps: list[bytes] = []
        n = node
        while n is not None and n.kind_id in g.qualified:
            scope = n.child_by_field_id(g.f_scope)
            if scope is not None:
                comps.append(self._name_text(scope))
            n = n.child_by_field_id(g.f_name)
        if n is not None:
            comps.append(self._name_text(n))
        return comps

    def lookup_qualified(self, node: Any) -> tuple[Optional[ApiEntry], str]:
        """The entry a ``::``-qualified name resolves to, and the name as written (template arguments left out)."""
        t = self.t
        scope = node.child_by_field_id(self.g.f_scope)
        if scope is not None:
            root = self._name_text(scope)
            if root not in t.roots:
                return None, ""  # std::, user namespaces: the common case, settled by one look
            if root in TORCH_ROOTS:
                text = node.text
                if b"cuda" not in text and b"CUDA" not in text:
                    return None, ""  # at::Tensor, c10::optional
        comps = self._components(node)
        written = b"::".join(comps)
        api = compact(written, 80)
        if len(comps) == 1:  # ::cudaMalloc
            return self.lookup_name(comps[0]), api
        if comps[0] in TORCH_ROOTS and t.torch_words.isdisjoint(comps):
            return None, api  # at::cuda_helper_of_my_own: no part of the path is one of PyTorch's CUDA names
        names = t.names
        for i in range(len(comps)):
            key = written if i == 0 else b"::".join(comps[i:])
            entry = names.get(key)
            # at::cuda::CUDAGuard resolves through its last part; foo::cudaMalloc is somebody else's function.
            if entry is not None and (i == 0 or b"::" in key or entry.family == "torch_ext"):
                return entry, api
        if comps[0] in TORCH_ROOTS:
            for comp in comps[1:-1]:  # c10::cuda::CUDACachingAllocator::raw_alloc
                entry = names.get(comp)
                if entry is not None and entry.family == "torch_ext":
                    return entry, api
        full = written + b"::"
        if full.startswith(t.ns_starts):
            for prefix, entry in t.ns_prefixes:
                # The namespace itself (using namespace at::cuda;) is not a use of anything in it.
                if full.startswith(prefix) and len(full) > len(prefix):
                    return entry, api
        return None, api

    # -- handlers --------------------------------------------------------------------------------------------
    def on_call(self, node: Any, cursor: Any) -> bool:
        g = self.g
        fn = node.child_by_field_id(g.f_function)
        if fn is None:
            return True
        kind = fn.kind_id
        if kind in g.qualified:
            entry, api = self.lookup_qualified(fn)
        elif kind in g.field_expr:
            field = fn.child_by_field_id(g.f_field)
            name = field.text if field is not None else b""
            entry, api = self.t.methods.get(name), f".{name.decode('utf-8', 'replace')}()"
        elif kind in g.template:
            name = self._name_text(fn)
            entry, api = self.lookup_name(name), name.decode("utf-8", "replace")
        else:
            name = fn.text
            entry, api = self.lookup_name(name), name.decode("utf-8", "replace")
        if entry is not None:
            self.add_entry(entry, node, api)
        return True

    def on_qualified(self, node: Any, cursor: Any) -> bool:
        g = self.g
        field = cursor.field_id
        if field == g.f_function:
            return False  # resolved by on_call
        if field == g.f_declarator:
            return False  # void c10::cuda::Foo::bar() {...} defines a name, it does not use one
        if field == g.f_name and node.parent is not None and node.parent.kind_id in g.qualified:
            return True  # the tail of an outer name already resolved
        entry, api = self.lookup_qualified(node)
        if entry is None:
            return True  # template arguments may still name something: std::vector<thrust::complex<float>>
        # Namespaced library values (thrust::device, cutlass::Status::kSuccess) ride along with the calls and
        # types that need them; PyTorch's CUDA names (torch::kCUDA) are findings wherever they appear.
        if entry.family == "torch_ext":
            self.add_entry(entry, node, api)
        elif field == g.f_type:
            # A library type is one port decision per file, however often it is spelled: CUTLASS code names
            # cutlass::half_t hundreds of times.
            self.add_entry(entry, node, api, once_per_file=True)
        return False

    def on_type_identifier(self, node: Any, cursor: Any) -> bool:
        # Unqualified types after `using namespace at::cuda;`: only PyTorch's names are distinctive enough.
        if cursor.field_id == self.g.f_type:
            entry = self.t.names.get(node.text)
            if entry is not None and entry.family == "torch_ext":
                self.add_entry(entry, node, node.text.decode("utf-8", "replace"))
        return False

    def on_include(self, node: Any, cursor: Any) -> bool:
        path_node = node.child_by_field_id(self.g.f_path)
        if path_node is None or path_node.kind_id not in self.g.include_path:
            return False  # #include MACRO_NAME: nothing to read
        path = path_node.text[1:-1].decode("utf-8", "replace").strip()
        entry = self.t.headers.get(path)
        if entry is None and path.startswith(self.t.header_starts):
            for prefix, candidate in self.t.header_prefixes:
                if path.startswith(prefix):
                    entry = candidate
                    break
        if entry is not None:
            self.add("AC613", path_node, path, entry.message(f"#include <{path}>"), entry.alternative)
        return False

