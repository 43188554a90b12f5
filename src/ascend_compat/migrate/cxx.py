"""The C/C++/CUDA scanner: CUDA runtime, driver and library calls, kernels, launches, inline PTX, device
intrinsics, CUDA headers and PyTorch's CUDA C++ APIs, each mapped to its Ascend counterpart.

Sources are parsed with tree-sitter's CUDA grammar (a superset of C and C++), so comments and string literals
never produce findings. Macro bodies are parsed on their own, because a ``#define`` is opaque text to the
grammar and ``CUDA_CHECK``-style macros are where much CUDA code lives. This module owns the walk; the rules are
the families of ``migrate/rules`` (``cxx_api.py``: API uses looked up in ``data/cuda_cxx_apis.json``;
``cxx_kernels.py``: kernel code), each handling the node kinds it declares.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ascend_compat.migrate.model import FileResult, FileScanned, FileSkipped, Finding
from ascend_compat.migrate.rules import CXX_FAMILIES, CXX_RULES
from ascend_compat.migrate.rules.cxx_tables import ApiEntry, Tables, api_entries, tables

__all__ = [
    "CUDA_SUFFIXES", "CXX_RULES", "CXX_SUFFIXES", "FAMILIES", "MATCHES", "RUNTIME_CATEGORIES", "SKIP_REASON",
    "ApiEntry", "CxxFile", "api_entries", "scan_cxx",
]

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

# Text the grammar does not treat as code: nothing in it is a use of an API.
_SKIPPED_KINDS = ("comment", "string_literal", "raw_string_literal", "char_literal", "concatenated_string",
                  "system_lib_string", "preproc_call")


class _Grammar:
    """The tree-sitter parser, the node-kind and field ids the families read, and which family handles a kind."""

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
        self.include_path = kinds("string_literal", "system_lib_string")
        fid = lang.field_id_for_name
        self.f_function, self.f_type, self.f_name = fid("function"), fid("type"), fid("name")
        self.f_scope, self.f_field, self.f_path = fid("scope"), fid("field"), fid("path")
        self.f_value, self.f_declarator = fid("value"), fid("declarator")
        self.defines = kinds("preproc_def", "preproc_function_def")
        self.skipped = kinds(*_SKIPPED_KINDS)
        #: kind id -> (index into CXX_FAMILIES, method name)
        self.dispatch: dict[int, tuple[int, str]] = {}
        for index, family in enumerate(CXX_FAMILIES):
            for (kind, named), method in family.KINDS.items():
                for kind_id in kinds(kind, named=named):
                    if kind_id in self.dispatch:
                        raise ValueError(f"node kind {kind!r} handled by two C/C++ rule families")
                    self.dispatch[kind_id] = (index, method)


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


class CxxFile:
    """One file's walk. Handlers (the families' methods) return whether the walk should descend into the node."""

    def __init__(self, g: _Grammar, path: str, src: bytes) -> None:
        self.g = g
        self.t: Tables = tables()
        self.path = path
        self.src = src
        self.cuda_file = path.endswith(CUDA_SUFFIXES)
        self.findings: list[Finding] = []
        self.seen: set[tuple[str, Any]] = set()
        # Where the tree being walked starts in the file: (byte, row, column); a macro body is parsed alone.
        self.base = (0, 0, 0)
        families = [cls(self) for cls in CXX_FAMILIES]
        self.handlers: dict[int, Callable[[Any, Any], bool]] = {
            kind_id: getattr(families[index], method) for kind_id, (index, method) in g.dispatch.items()
        }
        self.handlers.update({k: self.on_define for k in g.defines})
        self.handlers.update({k: self.skip for k in g.skipped})

    def walk(self, root: Any) -> None:
        handler_of = self.handlers.get
        cursor = root.walk()
        # Bound methods hoisted: this loop runs once per node of every file.
        first_child, next_sibling, parent = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
        while True:
            node = cursor.node
            handler = handler_of(node.kind_id)
            if (handler is None or handler(node, cursor)) and first_child():
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
        """Record a finding, once per rule and place (or per rule and ``key``)."""
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

    # -- the walk's own handlers -----------------------------------------------------------------------------
    def skip(self, node: Any, cursor: Any) -> bool:
        return False

    def on_define(self, node: Any, cursor: Any) -> bool:
        value = node.child_by_field_id(self.g.f_value)
        if value is not None:
            self._walk_macro_body(value)
        return False

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
    scan = CxxFile(g, path, src)
    scan.walk(g.parser.parse(src).root_node)
    scan.findings.sort(key=lambda f: (f.line, f.col, f.code))
    return FileScanned(path=path, language="cxx", lines=lines, findings=scan.findings)
