"""The C/C++/CUDA scanner: CUDA runtime, driver and library calls, kernels, launches, inline PTX, device
intrinsics, CUDA headers and PyTorch's CUDA C++ APIs, each mapped to its Ascend counterpart.

Sources are parsed with tree-sitter's CUDA grammar (a superset of C and C++), so comments and string literals
never produce findings. Macro bodies are parsed on their own, because a ``#define`` is opaque text to the
grammar and ``CUDA_CHECK``-style macros are where much CUDA code lives. What counts as a finding is a *use* that
must change: calls, launches and definitions; CUDA types (``cudaStream_t``) and enum values are not reported
on their own, since they change together with the calls that use them.

The mapping is data (``data/cuda_cxx_apis.json``): exact names, name prefixes (``cublas`` then an upper-case
letter), ``::``-qualified names and namespace prefixes (``thrust::``), methods (``x.is_cuda()``) and headers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Optional

from ascend_compat.migrate.model import FileResult, FileScanned, FileSkipped, Finding, Rule, register_rules

CXX_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx")
#: Files compiled by nvcc: inline asm there is PTX even outside a __device__ function.
CUDA_SUFFIXES = (".cu", ".cuh")
SKIP_REASON = ("C/C++/CUDA NOT ANALYSED: tree-sitter and tree-sitter-cuda (dependencies of ascend-compat) are "
               "missing or broken; reinstall: pip install --force-reinstall tree-sitter tree-sitter-cuda")

FAMILIES = (
    "runtime", "driver", "cublas", "cudnn", "nccl", "curand", "thrust", "cub", "cufft", "cusparse", "cusolver",
    "cutlass", "nvrtc", "nvtx", "kernel", "intrinsic", "header", "torch_ext",
)
MATCHES = ("exact", "prefix", "method")
#: Runtime entries say which part of the runtime they belong to; the rule code follows from it.
RUNTIME_CATEGORIES = ("memory", "streams", "device", "custom_kernel")

_R = Rule
CXX_RULES = (
    _R("AC601", "cuda-runtime-memory", "memory", "warning", "CUDA runtime memory call",
       "the ACL runtime counterpart (aclrtMalloc, aclrtMemcpy, aclrtFree, ...)", False, False, "easy", 0.05, "cxx"),
    _R("AC602", "cuda-driver-call", "device", "warning", "CUDA driver API call",
       "the ACL runtime counterpart (aclInit, aclrtCreateContext, aclrtMalloc, ...)", False, False, "medium", 0.25,
       "cxx"),
    _R("AC603", "cublas-call", "blas_dnn", "warning", "cuBLAS call",
       "aclnn matmul operators (aclnnMatmul, aclnnBatchMatMul) or the ATB Linear operation", False, False, "medium",
       0.5, "cxx"),
    _R("AC604", "cudnn-call", "blas_dnn", "warning", "cuDNN call",
       "the matching aclnn operator (aclnnConvolution, aclnnBatchNorm, ...)", False, False, "medium", 0.5, "cxx"),
    _R("AC605", "nccl-call", "distributed", "warning", "NCCL call",
       "the HCCL function of the same collective (HcclAllReduce, HcclCommInitRootInfo, ...)", False, False, "easy",
       0.1, "cxx"),
    _R("AC606", "curand-call", "blas_dnn", "warning", "cuRAND call",
       "aclnn random operators with the torch_npu generator", False, False, "medium", 0.25, "cxx"),
    _R("AC607", "thrust-cub", "custom_kernel", "error", "Thrust/CUB call or type (CUDA-only template libraries)",
       "torch ops on NPU tensors, aclnn operators or an Ascend C kernel", False, False, "medium", 0.5, "cxx"),
    _R("AC608", "cuda-library", "blas_dnn", "error", "other CUDA library (cuFFT, cuSPARSE, cuSOLVER, NVRTC, CUTLASS)",
       "torch ops on the NPU, CATLASS for CUTLASS GEMMs, otherwise a rewrite", False, False, "hard", 1.0, "cxx"),
    _R("AC609", "cuda-kernel", "custom_kernel", "error", "__global__ CUDA kernel definition",
       "rewrite as an Ascend C kernel (__global__ __aicore__)", False, False, "hard", 3.0, "cxx"),
    _R("AC610", "kernel-launch", "custom_kernel", "error", "CUDA kernel launch (<<<...>>> or a launch API)",
       "ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...) or aclrtLaunchKernel", False, False, "hard", 0.5,
       "cxx"),
    _R("AC611", "inline-ptx", "custom_kernel", "error", "inline PTX assembly",
       "no counterpart: rewrite with Ascend C APIs", False, False, "hard", 2.0, "cxx"),
    _R("AC612", "device-intrinsic", "custom_kernel", "warning", "CUDA device intrinsic (warp, atomic, fast math)",
       "the Ascend C API of the same role, or a vector rewrite", False, False, "medium", 0.25, "cxx"),
    _R("AC613", "cuda-header", "device", "note", "CUDA header include",
       "the Ascend header (acl/acl.h, hccl/hccl.h, aclnnop/..., torch_npu/csrc/...)", False, False, "trivial", 0.02,
       "cxx"),
    _R("AC614", "torch-cuda-cxx-api", "device", "warning", "PyTorch CUDA C++ API in an extension",
       "the torch_npu C++ counterpart (c10_npu::getCurrentNPUStream, c10_npu::NPUGuard, ...)", False, False, "easy",
       0.05, "cxx"),
    _R("AC615", "device-function", "custom_kernel", "warning", "__device__ function",
       "an __aicore__ inline function of the Ascend C kernel", False, False, "medium", 0.5, "cxx"),
    _R("AC616", "cuda-runtime-stream", "streams", "warning", "CUDA runtime stream/event/graph call",
       "the ACL runtime counterpart (aclrtCreateStream, aclrtRecordEvent, ...)", False, False, "easy", 0.05, "cxx"),
    _R("AC617", "cuda-runtime-device", "device", "warning", "CUDA runtime device/error call",
       "the ACL runtime counterpart (aclrtSetDevice, aclrtGetDeviceCount, ...)", False, False, "easy", 0.05, "cxx"),
    _R("AC618", "nvtx-cxx", "profiling", "note", "NVTX annotation", "the mstx counterpart (mstxRangeStartA, ...)",
       False, False, "easy", 0.02, "cxx"),
    _R("AC619", "device-variable", "custom_kernel", "warning", "__constant__/__device__/__managed__ variable",
       "global memory passed to the kernel as an argument, or tiling data", False, False, "medium", 0.25, "cxx"),
)
register_rules(*CXX_RULES)
_RULE_LEVEL = {r.code: r.level for r in CXX_RULES}

_FAMILY_CODE = {
    "driver": "AC602", "cublas": "AC603", "cudnn": "AC604", "nccl": "AC605", "curand": "AC606", "thrust": "AC607",
    "cub": "AC607", "cufft": "AC608", "cusparse": "AC608", "cusolver": "AC608", "cutlass": "AC608", "nvrtc": "AC608",
    "nvtx": "AC618", "intrinsic": "AC612", "header": "AC613", "torch_ext": "AC614",
}
_RUNTIME_CODE = {"memory": "AC601", "streams": "AC616", "device": "AC617", "custom_kernel": "AC610"}
_KERNEL_CODE = {
    "__global__": "AC609", "<<<>>>": "AC610", "asm": "AC611", "__device__": "AC615", "__constant__": "AC619",
    "__managed__": "AC619", "__device__ variable": "AC619",
}
_LABEL = {
    "runtime": "CUDA runtime", "driver": "CUDA driver API", "cublas": "cuBLAS", "cudnn": "cuDNN", "nccl": "NCCL",
    "curand": "cuRAND", "thrust": "Thrust", "cub": "CUB", "cufft": "cuFFT", "cusparse": "cuSPARSE",
    "cusolver": "cuSOLVER", "cutlass": "CUTLASS", "nvrtc": "NVRTC", "nvtx": "NVTX",
    "intrinsic": "CUDA device intrinsic", "header": "CUDA header", "torch_ext": "PyTorch CUDA C++ API",
    "kernel": "CUDA kernel code",
}
# Namespaces whose CUDA names (CUDAGuard, kCUDA) are looked up even when the name is not the whole path.
_TORCH_ROOTS = (b"at", b"c10", b"torch")


@dataclass(frozen=True)
class ApiEntry:
    """One mapping from a CUDA API or construct to its Ascend counterpart (None: no direct counterpart)."""

    name: str
    match: str
    ascend: Optional[str]
    family: str
    difficulty: str
    source: str
    category: Optional[str] = None
    note: Optional[str] = None

    @property
    def code(self) -> str:
        if self.family == "runtime":
            return _RUNTIME_CODE[self.category or "device"]
        if self.family == "kernel":
            return _KERNEL_CODE[self.name]
        return _FAMILY_CODE[self.family]

    @property
    def alternative(self) -> str:
        if self.ascend is None:
            return f"no direct counterpart: {self.note or 'rewrite with Ascend C'}"
        return f"{self.ascend}; {self.note}" if self.note else self.ascend

    def message(self, api: str) -> str:
        label = _LABEL[self.family]
        if self.ascend is None:
            return f"{api} ({label}) has no direct Ascend counterpart: {self.note or 'rewrite with Ascend C'}"
        return f"{api} ({label}): use {self.alternative}"


@lru_cache(maxsize=1)
def api_entries() -> tuple[ApiEntry, ...]:
    """Every entry of ``data/cuda_cxx_apis.json``, in file order."""
    text = (resources.files("ascend_compat.migrate") / "data" / "cuda_cxx_apis.json").read_text("utf-8")
    return tuple(
        ApiEntry(e["name"], e["match"], e["ascend"], e["family"], e["difficulty"], e["source"], e.get("category"),
                 e.get("note"))
        for e in json.loads(text)["entries"]
    )


@dataclass(frozen=True)
class _Tables:
    names: dict[bytes, ApiEntry]  # exact names, bare and ::-qualified
    prefixes: tuple[tuple[bytes, bool, ApiEntry], ...]  # bare name prefixes, longest first, with boundary rule
    prefix_starts: tuple[bytes, ...]  # the same prefixes, for one quick startswith
    ns_prefixes: tuple[tuple[bytes, ApiEntry], ...]  # "thrust::" and the like, longest first
    ns_starts: tuple[bytes, ...]
    torch_words: frozenset[bytes]  # parts of PyTorch's CUDA names: at::/c10::/torch:: paths without one are settled
    roots: frozenset[bytes]  # first components worth resolving a qualified name for
    methods: dict[bytes, ApiEntry]
    headers: dict[str, ApiEntry]
    header_prefixes: tuple[tuple[str, ApiEntry], ...]
    header_starts: tuple[str, ...]
    kernel: dict[str, ApiEntry]


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    names: dict[bytes, ApiEntry] = {}
    prefixes: list[tuple[bytes, bool, ApiEntry]] = []
    ns_prefixes: list[tuple[bytes, ApiEntry]] = []
    methods: dict[bytes, ApiEntry] = {}
    headers: dict[str, ApiEntry] = {}
    header_prefixes: list[tuple[str, ApiEntry]] = []
    kernel: dict[str, ApiEntry] = {}
    roots = set(_TORCH_ROOTS)
    torch_words = {b"cuda"}
    for e in api_entries():
        key = e.name.encode()
        if e.family == "kernel":
            kernel[e.name] = e
        elif e.family == "header":
            if e.match == "prefix":
                header_prefixes.append((e.name, e))
            else:
                headers[e.name] = e
        elif e.match == "method":
            methods[key] = e
        elif e.match == "prefix" and key.endswith(b"::"):
            ns_prefixes.append((key, e))
        elif e.match == "prefix":
            # A lower-case prefix is a library name and must be followed by a capital: cublasSgemm, not
            # cublas_helper or cumsum. "cudaMem" (already camel case) and "curand_" stand as written.
            prefixes.append((key, key.isalpha() and key.islower(), e))
        else:
            names[key] = e
        if b"::" in key and e.family != "header":
            roots.add(key.split(b"::", 1)[0])
        if e.family == "torch_ext":
            torch_words.update(w for w in key.split(b"::") if w)
    by_len: Callable[[tuple[Any, ...]], int] = lambda item: -len(item[0])  # noqa: E731
    prefixes.sort(key=by_len)
    ns_prefixes.sort(key=by_len)
    header_prefixes.sort(key=by_len)
    return _Tables(names, tuple(prefixes), tuple(p[0] for p in prefixes), tuple(ns_prefixes),
                   tuple(p for p, _ in ns_prefixes), frozenset(torch_words), frozenset(roots), methods, headers,
                   tuple(header_prefixes), tuple(p for p, _ in header_prefixes), kernel)


# --- the grammar, loaded once per process -------------------------------------------------------------------


class _Grammar:
    """The tree-sitter parser and the node-kind and field ids the walk dispatches on."""

    def __init__(self, tree_sitter: Any, language_fn: Callable[[], Any]) -> None:
        lang = tree_sitter.Language(language_fn())
        self.parser = tree_sitter.Parser(lang)
        ids: dict[tuple[str, bool], set[int]] = {}
        for i in range(lang.node_kind_count):
            ids.setdefault((lang.node_kind_for_id(i), lang.node_kind_is_named(i)), set()).add(i)

        def kinds(*names: str, named: bool = True) -> frozenset[int]:
            return frozenset(i for n in names for i in ids.get((n, named), ()))

        self.call = kinds("call_expression")
        self.qualified = kinds("qualified_identifier")
        self.template = kinds("template_function", "template_type", "template_method")
        self.field_expr = kinds("field_expression")
        self.func_def = kinds("function_definition")
        self.declaration = kinds("declaration", "field_declaration")
        self.func_declarator = kinds("function_declarator")
        self.type_qualifier = kinds("type_qualifier")
        self.tok_global = kinds("__global__", named=False)
        self.tok_device = kinds("__device__", named=False)
        self.tok_host = kinds("__host__", named=False)
        self.tok_space = kinds("__constant__", "__managed__", named=False)
        self.include_path = kinds("string_literal", "system_lib_string")
        fid = lang.field_id_for_name
        self.f_function, self.f_type, self.f_name = fid("function"), fid("type"), fid("name")
        self.f_scope, self.f_field, self.f_path = fid("scope"), fid("field"), fid("path")
        self.f_value, self.f_declarator = fid("value"), fid("declarator")
        handlers: dict[frozenset[int], Callable[[_FileScan, Any, Any], bool]] = {
            self.call: _FileScan.on_call,
            self.qualified: _FileScan.on_qualified,
            kinds("type_identifier"): _FileScan.on_type_identifier,
            kinds("kernel_call_syntax"): _FileScan.on_launch,
            kinds("gnu_asm_expression"): _FileScan.on_asm,
            kinds("preproc_include"): _FileScan.on_include,
            kinds("preproc_def", "preproc_function_def"): _FileScan.on_define,
            self.tok_global: _FileScan.on_global,
            self.tok_device: _FileScan.on_device,
            self.tok_space: _FileScan.on_memory_space,
            # Text the grammar does not treat as code: nothing in it is a use of an API.
            kinds("comment", "string_literal", "raw_string_literal", "char_literal", "concatenated_string",
                  "system_lib_string", "preproc_call"): _FileScan.skip,
        }
        self.handlers = {k: h for ks, h in handlers.items() for k in ks}


_GRAMMAR: Optional[_Grammar] = None
_UNAVAILABLE = False


def _grammar() -> Optional[_Grammar]:
    """The process's grammar, built on first use; None when tree-sitter or its CUDA grammar is missing."""
    global _GRAMMAR, _UNAVAILABLE
    if _GRAMMAR is None and not _UNAVAILABLE:
        try:
            import tree_sitter
            import tree_sitter_cuda
            _GRAMMAR = _Grammar(tree_sitter, tree_sitter_cuda.language)
        except (ImportError, ValueError):  # not installed, or a grammar built for another tree-sitter ABI
            _UNAVAILABLE = True  # remembered: a failed import searches sys.path again on every call
            return None
    return _GRAMMAR


# --- the walk -----------------------------------------------------------------------------------------------


def _compact(text: bytes, limit: int = 60) -> str:
    s = " ".join(text.decode("utf-8", "replace").split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


class _FileScan:
    """One file's walk. Handlers return whether the walk should descend into the node."""

    def __init__(self, g: _Grammar, path: str, src: bytes) -> None:
        self.g = g
        self.t = _tables()
        self.path = path
        self.src = src
        self.cuda_file = path.endswith(CUDA_SUFFIXES)
        self.findings: list[Finding] = []
        self.seen: set[tuple[str, Any]] = set()
        # Where the tree being walked starts in the file: (byte, row, column); a macro body is parsed alone.
        self.base = (0, 0, 0)

    def walk(self, root: Any) -> None:
        handler_of = self.g.handlers.get
        cursor = root.walk()
        # Bound methods hoisted: this loop runs once per node of every file.
        first_child, next_sibling, parent = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
        while True:
            node = cursor.node
            handler = handler_of(node.kind_id)
            if (handler is None or handler(self, node, cursor)) and first_child():
                continue
            while not next_sibling():
                if not parent():
                    return

    # -- positions and findings ------------------------------------------------------------------------------
    def _pos(self, byte: int, point: Any) -> tuple[int, int]:
        """1-based line and character column in the file of a byte offset and point of the walked tree."""
        base_byte, base_row, base_col = self.base
        row, col = point
        col = col + base_col if row == 0 else col
        byte += base_byte
        line_start = byte - col
        head = self.src[line_start:byte]
        chars = col if head.isascii() else len(head.decode("utf-8", "replace"))
        return base_row + row + 1, chars + 1

    def add(self, code: str, node: Any, api: str, message: str, alternative: str, level: Optional[str] = None,
            key: Any = None) -> None:
        dedupe = (code, self.base[0] + node.start_byte if key is None else key)
        if dedupe in self.seen:
            return
        self.seen.add(dedupe)
        line, col = self._pos(node.start_byte, node.start_point)
        end_line, end_col = self._pos(node.end_byte, node.end_point)
        self.findings.append(Finding(
            code=code, path=self.path, line=line, col=col, message=message, api=api, end_line=end_line,
            end_col=end_col, alternative=alternative, level=level, fixable=False,
        ))

    def add_entry(self, entry: ApiEntry, node: Any, api: str, once_per_file: bool = False) -> None:
        code = entry.code
        # A hard entry (no counterpart worth the name) outranks the rule's default level.
        level = "error" if entry.difficulty == "hard" and _RULE_LEVEL[code] != "error" else None
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

    def lookup_qualified(self, node: Any) -> tuple[Optional[ApiEntry], str]:
        """The entry a ``::``-qualified name resolves to, and the name as written (template arguments left out)."""
        g = self.g
        t = self.t
        scope = node.child_by_field_id(g.f_scope)
        if scope is not None:
            root = self._name_text(scope)
            if root not in t.roots:
                return None, ""  # std::, user namespaces: the common case, settled by one look
            if root in _TORCH_ROOTS:
                text = node.text
                if b"cuda" not in text and b"CUDA" not in text:
                    return None, ""  # at::Tensor, c10::optional
        comps: list[bytes] = []
        n = node
        while n is not None and n.kind_id in g.qualified:
            scope = n.child_by_field_id(g.f_scope)
            if scope is not None:
                comps.append(self._name_text(scope))
            n = n.child_by_field_id(g.f_name)
        if n is not None:
            comps.append(self._name_text(n))
        written = b"::".join(comps)
        api = _compact(written, 80)
        if len(comps) == 1:  # ::cudaMalloc
            return self.lookup_name(comps[0]), api
        if comps[0] in _TORCH_ROOTS and t.torch_words.isdisjoint(comps):
            return None, api  # at::cuda_helper_of_my_own: no part of the path is one of PyTorch's CUDA names
        names = t.names
        for i in range(len(comps)):
            key = written if i == 0 else b"::".join(comps[i:])
            entry = names.get(key)
            # at::cuda::CUDAGuard resolves through its last part; foo::cudaMalloc is somebody else's function.
            if entry is not None and (i == 0 or b"::" in key or entry.family == "torch_ext"):
                return entry, api
        if comps[0] in _TORCH_ROOTS:
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
    def skip(self, node: Any, cursor: Any) -> bool:
        return False

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

    def on_launch(self, node: Any, cursor: Any) -> bool:
        call = node.parent
        if call is None or call.kind_id not in self.g.call:
            return True
        kernel = call.child_by_field_id(self.g.f_function)
        name = _compact(kernel.text) if kernel is not None else "?"
        entry = self.t.kernel["<<<>>>"]
        self.add("AC610", call, "<<<>>>", f"<<<...>>> launch of kernel {name}: use {entry.alternative}",
                 entry.alternative)
        return True

    def on_asm(self, node: Any, cursor: Any) -> bool:
        # asm in host code of a .cpp file is x86/Arm assembly, not PTX.
        if self.cuda_file or self._in_device_function(node):
            entry = self.t.kernel["asm"]
            self.add("AC611", node, "asm", entry.message("inline PTX (asm)"), entry.alternative)
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

    def on_define(self, node: Any, cursor: Any) -> bool:
        value = node.child_by_field_id(self.g.f_value)
        if value is not None:
            self._walk_macro_body(value)
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
                 key=self.base[0] + decl.start_byte)

    def _function_name(self, definition: Any) -> str:
        g = self.g
        d = definition.child_by_field_id(g.f_declarator)
        for _ in range(8):  # pointer/reference declarators wrap the function declarator
            if d is None:
                break
            if d.kind_id in g.func_declarator:
                name = d.child_by_field_id(g.f_declarator)
                return _compact(name.text) if name is not None else "?"
            inner = d.child_by_field_id(g.f_declarator)
            d = inner if inner is not None else (d.named_children[-1] if d.named_child_count else None)
        return "?"

    def _in_device_function(self, node: Any) -> bool:
        g = self.g
        n = node.parent
        while n is not None and n.kind_id not in g.func_def:
            n = n.parent
        return n is not None and any(c.kind_id in g.tok_device or c.kind_id in g.tok_global for c in n.children)

    def _walk_macro_body(self, value: Any) -> None:
        body = value.text
        # Same length, same lines: a line continuation becomes a space, so positions map back one to one.
        body = body.replace(b"\\\r\n", b" \r\n").replace(b"\\\n", b" \n")
        tree = self.g.parser.parse(body)
        saved = self.base
        row, col = value.start_point
        self.base = (saved[0] + value.start_byte, saved[1] + row, (saved[2] + col) if row == 0 else col)
        try:
            self.walk(tree.root_node)
        finally:
            self.base = saved


def scan_cxx(path: str, text: str) -> FileResult:
    """Scan one C, C++ or CUDA source; FileSkipped when tree-sitter is not installed."""
    g = _grammar()
    if g is None:
        return FileSkipped(path, "cxx", SKIP_REASON)
    # Editors do not count a byte-order mark as a column; tree-sitter would read it as a stray token.
    src = text[1:].encode("utf-8", "replace") if text.startswith("\ufeff") else text.encode("utf-8", "replace")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    scan = _FileScan(g, path, src)
    scan.walk(g.parser.parse(src).root_node)
    scan.findings.sort(key=lambda f: (f.line, f.col, f.code))
    return FileScanned(path=path, language="cxx", lines=lines, findings=scan.findings)
