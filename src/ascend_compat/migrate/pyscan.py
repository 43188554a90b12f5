"""The Python scanner: one ``ast`` walk per file with qualified-name resolution through imports.

Names are resolved through the file's imports (``import torch as th``, ``from torch.cuda import amp``,
``import torch.backends.cudnn as cudnn``), so ``th.cuda.synchronize`` is found and a variable or an unrelated
module named ``cuda`` (``import cuda.bindings.driver as cuda``) is not. Strings count only where they are code:
docstrings and comments never produce findings. Each finding carries the character-offset edits ``port`` applies.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from ast import AST
from functools import lru_cache
from importlib import resources
from typing import Callable, Optional

from ascend_compat.migrate import apidb, deps, flashattn, pyrules, pytriton  # noqa: F401  (pyrules: the rules)
from ascend_compat.migrate.model import Edit, FileFailed, FileResult, FileScanned, Finding

# The tree walk looks for code no file can contain without one of these substrings (``.cuda()``, "nccl",
# ``torch.*`` names, ``.to(rank)``...). A file with none of them is still parsed (syntax errors are reported) and
# its imports checked, but not walked: a third of a typical package, skipped at the cost of one substring search.
TRIGGERS = (
    "cuda", "CUDA", "nccl", "NCCL", "nvidia", "nvml", "nvtx", "triton", "torch", "numba", "device_map", ".to(",
    "flash_attn", "xformers", "load_in_", "quantization", "Config(",
)

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where Python's tokenizer splits (not at form feeds or U+2028)."""
    return _LINE_RE.findall(text)


DEVICE_RE = re.compile(r"cuda(?::\d+)?")
DEVICE_FORMAT_RE = re.compile(r"cuda:(?:%d|%s|%i|\{[^{}]*\})")
NCCL_ENV_RE = re.compile(r"NCCL_[A-Z0-9_]+")
ENV_KEY = "CUDA_VISIBLE_DEVICES"
ENV_KEY_RE = re.compile(r"(?<![A-Za-z0-9_])CUDA_VISIBLE_DEVICES(?![A-Za-z0-9_])")
# Calls whose first argument is an environment variable name.
_ENV_METHODS = frozenset({"get", "setdefault", "pop", "__getitem__", "__setitem__", "__delitem__"})
_ENV_CALLS = frozenset({"os.getenv", "os.putenv", "os.unsetenv", "os.environ.get", "os.environ.setdefault",
                        "os.environ.pop", "os.environ.__getitem__", "os.environ.__setitem__", "os.environ.__delitem__"})
# Names that hold an integer ordinal (``device_id``/``dev_id`` are left out: often already a device string).
RANK_NAME_RE = re.compile(r"(?:local_)?rank|(?:local_)?gpu(?:_id|_idx|_index)?|cuda_id|gpu_rank")

_AMP_FIXABLE = {"autocast": "torch.amp.autocast", "GradScaler": "torch.amp.GradScaler"}
_LEGACY_SUFFIXES = ("Tensor", "Storage")
_STREAM_NAMES = {
    "Stream", "Event", "current_stream", "default_stream", "synchronize", "stream", "set_stream",
    "StreamContext", "ExternalStream", "streams",
}
_GRAPH_NAMES = {
    "CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle", "graphs", "is_current_stream_capturing",
}
_PROBE_NAMES = {"get_device_capability", "get_arch_list", "get_gencode_flags"}
_ATTN_CALLS = {
    "flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache",
}
# transformers quantization configs whose class alone names the method (BitsAndBytesConfig says 4 or 8 bit only
# through its load_in_* keyword, which is judged on its own).
_QUANT_CONFIGS = {"GPTQConfig": "gptq", "AwqConfig": "awq", "FineGrainedFP8Config": "fp8", "GgufConfig": "gguf"}
_QUANT_LEVEL = {"yes": "note", "partial": "warning", "no": "error"}
# Names of torch.cuda that torch.npu provides beyond those the shim table calls "direct".
_NPU_ALSO = {"is_available", "is_bf16_supported", "get_device_properties", "utilization"}
# CUDA fields of get_device_properties() that torch_npu's NPUDeviceProperties lack, and the field that stands in
# (None: no counterpart). torch_npu's properties have name, total_memory, cube_core_num, vector_core_num, L2_cache_size.
_CUDA_ONLY_PROPERTIES: dict[str, Optional[str]] = {
    "multi_processor_count": "cube_core_num", "warp_size": None, "max_threads_per_multi_processor": None,
    "major": None, "minor": None, "gcnArchName": None, "regs_per_multiprocessor": None,
}  # fmt: skip
# The legacy tensor types torch_npu defines as torch.npu.<Dtype>Tensor.
_NPU_TENSOR_TYPES = frozenset(
    f"{d}Tensor" for d in ("Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
)


@lru_cache(maxsize=1)
def cuda_table() -> dict[str, dict]:
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


class _Source:
    """Line/column bookkeeping: ast columns are UTF-8 byte offsets, edits are character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()  # most sources: byte columns are character columns, no line table needed
        self._starts: Optional[list[int]] = None
        self._lines: Optional[list[str]] = None

    def _index(self) -> None:
        text = self.text
        # str.splitlines (fast) also splits at form feeds and the like, which Python's tokenizer does not.
        exotic = not self.ascii or any(c in text for c in "\x0b\x0c\x1c\x1d\x1e")
        lines = split_lines(text) if exotic else text.splitlines(keepends=True)
        starts, pos = [], 0
        for line in lines:
            starts.append(pos)
            pos += len(line)
        starts.append(pos)
        self._starts, self._lines = starts, lines

    def col(self, lineno: int, byte_col: int) -> int:
        """0-based character column of a byte column on a 1-based line."""
        if self.ascii:
            return byte_col
        if self._lines is None:
            self._index()
        assert self._lines is not None
        line = self._lines[lineno - 1] if lineno - 1 < len(self._lines) else ""
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def offset(self, lineno: int, byte_col: int) -> int:
        if self._starts is None:
            self._index()
        assert self._starts is not None
        return self._starts[lineno - 1] + self.col(lineno, byte_col)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]


# Fields that never hold child expressions/statements worth walking (``ctx`` singletons, names, flags).
_SCALAR_FIELDS = frozenset({
    "ctx", "id", "attr", "arg", "name", "module", "level", "type_comment", "kind", "is_async", "conversion",
    "simple", "asname", "type_ignores", "tag",
})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        skip = _SCALAR_FIELDS | ({"names"} if cls in (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal) else set())
        # Reversed: children are pushed on a stack, so a statement's header (test, items) is visited before its body.
        fields = _CHILD_FIELDS[cls] = tuple(reversed([f for f in cls._fields if f not in skip]))  # type: ignore[attr-defined]
    return fields


_STMT_CLASSES = frozenset(c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.stmt))
_REEXPORTING_SUBMODULES = frozenset({"random", "memory", "graphs", "streams"})
_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.Module) -> tuple[list[ast.stmt], set[int], set[str]]:
    """Every import statement (at any depth), the ids of bare string statements (docstrings, attribute
    docstrings: prose, not code) and the names the file defines with ``def``, without walking expressions."""
    imports: list[ast.stmt] = []
    docstrings: set[int] = set()
    defined: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)  # type: ignore[arg-type]
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            # ``self.is_cuda = ...``: the file's own attribute; its reads must not be renamed without its writes.
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(_assigned_attributes(targets))
        for f in _BODY_FIELDS:
            value = getattr(node, f, None)
            if value:
                stack.extend(value)
    imports.sort(key=lambda n: (n.lineno, n.col_offset))
    return imports, docstrings, defined


def _assigned_attributes(targets: list[ast.expr]) -> list[str]:
    """Attribute names written by assignment targets (``a.x = ...``, ``a.x, b.y = ...``)."""
    names: list[str] = []
    stack: list[ast.expr] = list(targets)
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Attribute):
            names.append(t.attr)
        elif isinstance(t, (ast.Tuple, ast.List)):
            stack.extend(t.elts)
        elif isinstance(t, ast.Starred):
            stack.append(t.value)
    return names


def _imported_modules(node: ast.stmt) -> list[str]:
    """The absolute modules an import statement names (relative imports name the file's own package)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module]
    return []


class _Scanner:
    def __init__(self, path: str, text: str, tree: ast.Module, line: str) -> None:
        self.path = path
        self.src = _Source(text)
        self.tree = tree
        self.line = line
        self.aliases: dict[str, str] = {}
        self.findings: list[Finding] = []
        self.apis: dict[str, int] = {}
        self.imports: dict[str, tuple[int, int]] = {}
        self.import_sites: list[tuple[str, int, int]] = []
        self.advised: set[str] = set()
        self.in_fstring = 0
        self.handlers: dict[type, Callable[[ast.AST], bool]] = {
            ast.Attribute: self.on_attribute, ast.Name: self.on_name, ast.Call: self.on_call,
            ast.Constant: self.on_constant, ast.JoinedStr: self.on_joinedstr, ast.Compare: self.on_compare,
            ast.FunctionDef: self.on_def, ast.AsyncFunctionDef: self.on_def, ast.Dict: self.on_dict,
            ast.Assign: self.on_assign, ast.Subscript: self.on_subscript,
        }
        self.nofix: set[int] = set()  # literals reported without a fix (dict keys: a table of device types)
        self.backend_ctx: set[int] = set()  # "nccl" literals that select the collective backend
        self.default_type_args: set[int] = set()  # arguments of torch.set_default_tensor_type(...)
        self.marked: dict[int, str] = {}  # id(str constant) -> rule code decided by its parent
        self.import_nodes, self.skip, self.defined = _statements(tree)
        self.stmt: Optional[ast.stmt] = None
        self.coupled: dict[int, list[int]] = {}  # id(statement) -> indexes of device-coupled findings
        # CUDA_VISIBLE_DEVICES is renamed only as an environment key: id(str constant) -> "" (os.environ and the
        # like) or the name of the mapping it indexes (an env dict, decided once the whole file is seen).
        self.env_keys: dict[int, str] = {}
        self.env_names: set[str] = set()  # names bound to an environment mapping (``env = os.environ.copy()``)
        self.env_pending: list[tuple[int, str]] = []  # (finding index, mapping name) to settle after the walk

    # -- names -------------------------------------------------------------------------------------------
    def collect_imports(self) -> None:
        for node in self.import_nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.split(".")[0]
                    self.imports.setdefault(top, (node.lineno, node.col_offset))
                    self.import_sites.append((a.name, node.lineno, node.col_offset))
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top = node.module.split(".")[0]
                self.imports.setdefault(top, (node.lineno, node.col_offset))
                self.import_sites.append((node.module, node.lineno, node.col_offset))
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    def qual(self, node: ast.AST) -> Optional[str]:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None:
            return None
        parts.append(base)
        return ".".join(reversed(parts))

    def torch_root(self, node: ast.AST) -> Optional[ast.Name]:
        """The ``Name`` at the root of an attribute chain when it is bound to the torch module itself."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if isinstance(node, ast.Name) and self.aliases.get(node.id) == "torch":
            return node
        return None

    # -- findings ----------------------------------------------------------------------------------------
    def add(self, code: str, node: ast.AST, message: str, api: str = "", edits: tuple[Edit, ...] = (),
            alternative: Optional[str] = None, level: Optional[str] = None, coupled: bool = False) -> None:
        lineno, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        self.findings.append(Finding(
            code=code, path=self.path, line=lineno, col=self.src.col(lineno, col) + 1, message=message,
            api=api, end_line=end_line, end_col=self.src.col(end_line, end_col) + 1, alternative=alternative,
            level=level, edits=edits,
        ))
        if coupled and self.stmt is not None:
            self.coupled.setdefault(id(self.stmt), []).append(len(self.findings) - 1)

    def literal_edit(self, node: ast.Constant, old: str, new: str) -> tuple[Edit, ...]:
        """Replace ``old`` inside a plain string literal, when its source spells the value verbatim."""
        start, end = self.src.span(node)
        seg = self.src.text[start:end]
        i = seg.find(old)
        # Only simple literals: one quoted piece (no implicit concatenation, escapes or byte prefixes).
        if i < 0 or seg.count(old) != 1 or seg[:1] not in "'\"rRuU" or seg.find(old, i + 1) >= 0:
            return ()
        body = seg.lstrip("rRuU")
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        if not body.endswith(quote) or body[len(quote):-len(quote)] != node.value:
            return ()
        return (Edit(start + i, start + i + len(old), new),)

    def attr_edit(self, node: ast.Attribute, new: str) -> tuple[Edit, ...]:
        """Rename the attribute token of ``node`` (it ends where the node ends)."""
        _, end = self.src.span(node)
        start = end - len(node.attr)
        if self.src.text[start:end] != node.attr:
            return ()
        return (Edit(start, end, new),)

    # -- walk --------------------------------------------------------------------------------------------
    def run(self) -> None:
        self.collect_imports()
        reported: set[str] = set()
        flash = [n for n in self.import_nodes if any(flashattn.is_flash_attn(m) for m in _imported_modules(n))]
        if flash:
            info = deps.lookup("flash-attn")
            alternative = info.alternative if info else ""
            self.findings.extend(flashattn.import_findings(self.path, flash, self.src, alternative))
        for mod, lineno, col in self.import_sites:
            if flashattn.is_flash_attn(mod):
                continue  # reported above, with the rewrite onto the drop-in
            f = deps.import_finding(self.path, mod, lineno, self.src.col(lineno, col) + 1)
            if f is not None and f.api not in reported:  # one finding per package per file
                reported.add(f.api)
                self.findings.append(f)
        text = self.src.text
        if not any(t in text for t in TRIGGERS):
            return
        if pytriton.imports_triton(self.aliases):
            pytriton.TritonChecks(self).run()
        self._walk([self.tree])
        self.uncouple()
        self.settle_env_keys()

    def settle_env_keys(self) -> None:
        """Keep a rename of ``name["CUDA_VISIBLE_DEVICES"]`` only where ``name`` is an environment mapping."""
        for i, name in self.env_pending:
            if name not in self.env_names:
                self.findings[i] = Finding(**{**self.findings[i].__dict__, "edits": (), "fixable": False})

    def is_environ(self, node: Optional[ast.AST]) -> bool:
        """Whether ``node`` is ``os.environ`` (through any alias)."""
        return node is not None and self.qual(node) == "os.environ"

    def env_copy(self, node: ast.AST) -> bool:
        """``os.environ.copy()``, ``dict(os.environ)``, ``copy.copy(os.environ)`` or ``{**os.environ, ...}``."""
        if isinstance(node, ast.Dict):
            return any(k is None and self.is_environ(v) for k, v in zip(node.keys, node.values))
        if not isinstance(node, ast.Call):
            return False
        q = self.qual(node.func) or (node.func.id if isinstance(node.func, ast.Name) else "")
        if q == "os.environ.copy":
            return True
        return q in ("dict", "copy.copy", "copy.deepcopy") and bool(node.args) and self.is_environ(node.args[0])

    def env_arguments(self, node: ast.Call, q: Optional[str]) -> None:
        """Mark the environment keys a call names: ``os.getenv(KEY)``, ``env.get(KEY)``, ``env={KEY: ...}``."""
        func = node.func
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and first.value == ENV_KEY:
            if q in _ENV_CALLS:
                self.env_keys[id(first)] = ""
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in _ENV_METHODS:
                self.env_keys.setdefault(id(first), func.value.id)
        if q == "os.environ.update" and first is not None:
            self.mark_env_dict(first)
        for kw in node.keywords:
            if kw.arg == "env":
                if isinstance(kw.value, ast.Name):
                    self.env_names.add(kw.value.id)
                else:
                    self.mark_env_dict(kw.value)

    def mark_env_dict(self, node: ast.AST) -> None:
        """The string keys of a dict literal that is an environment (``env={...}``, ``{**os.environ, ...}``)."""
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value == ENV_KEY:
                    self.env_keys[id(key)] = ""

    def uncouple(self) -> None:
        """Coupled device idioms are rewritten together or not at all (never half-rewritten).

        Within a statement for device literals; across the whole file for "nccl", whose value often travels
        (a default, a choices list, a comparison): one literal that cannot change keeps them all.
        """
        nccl = [i for i, f in enumerate(self.findings) if f.code == "AC301" and f.api == "nccl"]
        if any(not self.findings[i].edits for i in nccl):
            for i in nccl:
                if self.findings[i].edits:
                    self.findings[i] = Finding(**{**self.findings[i].__dict__, "edits": (), "fixable": False})
        for indexes in self.coupled.values():
            group = [self.findings[i] for i in indexes]
            if any(not f.edits for f in group) and any(f.edits for f in group):
                for i in indexes:
                    f = self.findings[i]
                    if f.edits:
                        self.findings[i] = Finding(**{**f.__dict__, "edits": (), "fixable": False})

    # -- handlers: return True to skip the node's children --------------------------------------------------
    def on_name(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Name)
        q = self.aliases.get(node.id)
        if q is not None and q != node.id:
            self.on_qualified(q, node, None)
        return True

    def on_attribute(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Attribute)
        q = self.qual(node)
        if q is not None:
            self.on_qualified(q, node, None)
            return True
        if node.attr in _CUDA_ONLY_PROPERTIES and isinstance(node.value, ast.Call) \
                and self.qual(node.value.func) == "torch.cuda.get_device_properties":
            # Renaming the call to torch.npu alone would read a field the NPU's properties do not have.
            new = _CUDA_ONLY_PROPERTIES[node.attr]
            self.add("AC117", node, f"`.{node.attr}` of CUDA device properties", node.attr,
                     self.attr_edit(node, new) if new else (), coupled=True)
            return False
        if node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
            # A tensor's ``is_cuda`` is read-only, so a written one is the file's own attribute (not reported).
            # Where the file defines or writes ``is_cuda``, no read is renamed (renaming reads but not writes
            # gave ``if self.is_npu ... elif self.is_npu``); nor does it hold back the rest of its statement.
            fixable = "is_cuda" not in self.defined
            self.add("AC105", node, "`.is_cuda` is False for NPU tensors", "Tensor.is_cuda",
                     self.attr_edit(node, "is_npu") if fixable else (), coupled=fixable)
        return False

    def on_def(self, node: ast.AST) -> bool:
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            q = self.qual(target)
            if q in ("triton.jit", "triton.autotune", "triton.heuristics"):
                if q == "triton.jit" or not any(
                    self.qual(d.func if isinstance(d, ast.Call) else d) == "triton.jit" for d in node.decorator_list
                ):
                    self.add("AC410", dec, f"Triton kernel `{node.name}` (@{q})", q)
            elif q in ("numba.cuda.jit", "numba.cuda.reduce"):
                self.add("AC412", dec, f"numba CUDA kernel `{node.name}`", q)
        return False

    def on_qualified(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> None:
        """A reference that resolves to a module-qualified name (``call`` is set when it is called)."""
        if q.startswith("torch"):
            if q.startswith("torch.") and not q.startswith("torch.cuda"):
                self.apis[q] = self.apis.get(q, 0) + 1
                if q == "torch.load" and call is not None:
                    self.torch_load(node, call)
                if self.torch_rules(q, node, call):
                    return
                self.api_support(q, node)
            elif q.startswith("torch.cuda"):
                self.apis[q] = self.apis.get(q, 0) + 1
                self.torch_cuda(q, node, call)
            return
        head = q.split(".", 1)[0]
        if head in ("pynvml", "nvidia_smi") and q != head:
            self.add("AC506", node, f"NVML query `{q}`", q)
        elif head == "flash_attn" and q.rsplit(".", 1)[-1] in _ATTN_CALLS and call is not None:
            self.add("AC401", node, f"flash_attn kernel `{q.rsplit('.', 1)[-1]}`", q)
        elif head == "xformers" and q.endswith("memory_efficient_attention") and call is not None:
            self.add("AC403", node, "xformers memory_efficient_attention", q)
        elif head == "nvtx" and q != head:
            self.add("AC505", node, f"NVTX `{q}`", q)
        elif head == "transformers" and q.rsplit(".", 1)[-1] in _QUANT_CONFIGS and call is not None:
            self.quantization({"quant_method": _QUANT_CONFIGS[q.rsplit(".", 1)[-1]]}, node, q)
        elif head == "vllm" and call is not None:
            for kw in call.keywords:
                if kw.arg == "quantization" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    self.quantization({"quant_method": kw.value.value}, kw.value, f"{q}(quantization=...)")

    def quantization(self, section: dict, node: ast.AST, api: str) -> None:
        """AC508 for a quantization method chosen in code, judged by the table ``ascend-compat quant`` uses."""
        from ascend_compat.ecosystem import quantization

        method = quantization.lookup(section)
        if method is None or method.id == "none":
            return
        usable = {"yes": "runs on Ascend", "partial": "runs on Ascend only in part", "no": "does not run on Ascend"}
        self.add("AC508", node, f"{method.name} quantization {usable[method.ascend]}", api,
                 alternative=method.alternative or "; ".join(method.through), level=_QUANT_LEVEL[method.ascend])

    def torch_rules(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        """torch.* names (outside torch.cuda) that have a dedicated rule. Returns True when one matched."""
        if q.startswith("torch.backends.cudnn"):
            if q.endswith("allow_tf32"):
                self.add("AC502", node, f"`{q}` enables TF32 on CUDA only", q)
            else:
                self.add("AC501", node, f"`{q}` has no effect on the NPU", q)
            return True
        if q.startswith("torch.backends.cuda"):
            if "allow_tf32" in q or "allow_fp16_reduced" in q or "allow_bf16_reduced" in q:
                self.add("AC502", node, f"`{q}` is a CUDA matmul precision flag", q)
            elif "sdp" in q or "flash" in q or "mem_efficient" in q or "math_sdp" in q:
                self.add("AC402", node, f"`{q}` selects CUDA SDPA kernels", q)
            elif q.endswith("is_built"):
                self.add("AC503", node, f"`{q}` probes the CUDA build", q)
            else:
                self.add("AC501", node, f"`{q}` is a CUDA backend setting", q)
            return True
        if q == "torch.version.cuda":
            self.add("AC503", node, "`torch.version.cuda` is None on Ascend builds of torch", q)
            return True
        if q in ("torch.library.wrap_triton", "torch.library.triton_op", "torch._library.triton.wrap_triton"):
            self.add("AC413", node, f"`{q}` registers a Triton kernel as a torch operator", q)
            return True
        if q in ("torch.compile", "torch._dynamo.optimize"):
            self.add("AC507", node, f"`{q}`: inductor does not generate NPU code", q)
            return True
        if q in ("torch.utils.cpp_extension.CUDAExtension", "torch.utils.cpp_extension.CUDA_HOME"):
            self.add("AC411", node, f"`{q.rsplit('.', 1)[1]}` builds CUDA code", q)
            return True
        if q in ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load") and call is not None:
            if self._builds_cuda(call):
                self.add("AC411", node, f"`{q.rsplit('.', 1)[1]}` compiles CUDA sources", q)
                return True
            return False
        if q in ("torch.distributed.Backend.NCCL", "torch.distributed.distributed_c10d.Backend.NCCL"):
            assert isinstance(node, ast.Attribute)
            start, end = self.src.span(node)
            self.add("AC301", node, "NCCL collective backend", q, (Edit(start, end, '"hccl"'),))
            return True
        if q in ("torch.distributed.is_nccl_available", "torch.cuda.nccl"):
            self.add("AC301", node, f"`{q}` asks about NCCL", q, alternative="torch.distributed.is_hccl_available()")
            return True
        if q == "torch.set_float32_matmul_precision":
            self.add("AC502", node, "matmul precision hint (TF32 on CUDA)", q,
                     alternative="torch.npu.matmul.allow_hf32")
            return True
        return False

    def torch_load(self, node: ast.AST, call: ast.Call) -> None:
        """``torch.load(f)`` without ``map_location`` puts a CUDA checkpoint's tensors back on CUDA (AC116)."""
        if len(call.args) > 1 or any(k.arg == "map_location" for k in call.keywords):
            return  # explicit, positional or keyword: left alone
        unknown = any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)
        if unknown or not (call.args or call.keywords):  # map_location may be in *args / **kwargs: report only
            self.add("AC116", node, "`torch.load` without map_location restores tensors on their CUDA device",
                     "torch.load")
            return
        last = max((*call.args, *(k.value for k in call.keywords)), key=lambda a: self.src.span(a)[1])
        _, end = self.src.span(last)
        self.add("AC116", node, "`torch.load` without map_location restores tensors on their CUDA device",
                 "torch.load", (Edit(end, end, ', map_location="npu"'),))

    @staticmethod
    def _builds_cuda(call: ast.Call) -> bool:
        for kw in call.keywords:
            if kw.arg in ("cuda_sources", "with_cuda") and not (
                isinstance(kw.value, ast.Constant) and kw.value.value in (None, False)
            ):
                return True
        for node in ast.walk(call):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith((".cu", ".cuh")):
                return True
        return False

    def api_support(self, q: str, node: ast.AST) -> None:
        status = apidb.status(q, self.line)
        if status == "unsupported":
            self.add("AC801", node, f"`{q}` is listed as not supported by torch_npu {self.line}", q)
            return
        adv = apidb.advice(q)
        if adv is not None and q not in self.advised:  # advice once per API per file, not per use
            self.advised.add(q)
            code = "AC802" if adv.kind == "precision" else "AC803"
            alt = adv.replacement or adv.text
            self.add(code, node, f"`{q}`: {adv.text}", q, alternative=alt)

    def torch_cuda(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> None:
        rest = q[len("torch.cuda"):].lstrip(".")
        name = rest.split(".", 1)[0]
        via_submodule = False
        if name in _REEXPORTING_SUBMODULES and "." in rest:
            # torch.cuda.random.get_rng_state is torch.cuda.get_rng_state under another name.
            rest, name, via_submodule = rest.split(".", 1)[1], rest.split(".")[1], True
        last = rest.rsplit(".", 1)[-1]
        root = self.torch_root(node)
        # The ``cuda`` token of ``<torch>.cuda....`` when the chain is spelled from the torch module.
        cuda_attr: Optional[ast.Attribute] = None
        if root is not None:
            n = node
            while isinstance(n, ast.Attribute):
                if isinstance(n.value, ast.Name) and n.attr == "cuda":
                    cuda_attr = n
                n = n.value
        if name == "amp":
            # Positional arguments mean something else in torch.amp (enabled vs dtype): keywords only.
            kw_only = call is not None and not call.args and all(k.arg for k in call.keywords)
            if last in _AMP_FIXABLE and kw_only and cuda_attr is not None and rest.count(".") == 1:
                start, end = self.src.span(node)
                edits = [Edit(start, end, f"{root.id}.amp.{last}")]  # type: ignore[union-attr]
                first = call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)
                if first is not None:
                    if call.keywords and first is call.keywords[0].value:
                        kw_start = self._keyword_start(call.keywords[0])
                        edits.append(Edit(kw_start, kw_start, '"npu", '))
                    else:
                        s, _ = self.src.span(first)
                        edits.append(Edit(s, s, '"npu", '))
                else:
                    _, e = self.src.span(call)
                    edits.append(Edit(e - 1, e - 1, '"npu"'))
                self.add("AC201", node, f"`{q}` is CUDA-only AMP", q, tuple(edits))
            else:
                self.add("AC201", node, f"`{q}` is CUDA-only AMP", q,
                         alternative=f"torch.amp.{last}(\"npu\", ...)" if last != "amp" else None)
            return
        if name == "nvtx":
            self.add("AC505", node, f"`{q}`: NVTX ranges do nothing on the NPU", q)
            return
        if name in _GRAPH_NAMES:
            self.add("AC504", node, f"`{q}`: CUDA graphs", q)
            return
        if name.endswith(_LEGACY_SUFFIXES) and name[:1].isupper():
            # torch_npu has the legacy tensor types (torch.npu.HalfTensor, ...) but no typed storages.
            # Not as a default type: torch accepts only its own tensortypes there (torch_npu's are refused, and
            # torch's legacy constructor ignores the default device), so set_default_dtype + set_default_device
            # is a person's rewrite, checked against code that builds tensors with torch.Tensor(sizes).
            fixable = (name in _NPU_TENSOR_TYPES and rest == name and cuda_attr is not None
                       and id(node) not in self.default_type_args)
            edits = self.attr_edit(cuda_attr, "npu") if fixable and cuda_attr is not None else ()
            kind = "storage" if name.endswith("Storage") else "tensor"
            self.add("AC112", node, f"`{q}`: legacy CUDA {kind} type", q, edits, coupled=True)
            return
        if name in _PROBE_NAMES:
            self.add("AC503", node, f"`{q}`: CUDA compute capability", q)
            return
        entry = cuda_table().get(name) if name else None
        if name and (entry is None or entry.get("kind") in ("unsupported", "submodule")) and not npu_has(name):
            alt = (entry or {}).get("alternative") or (entry or {}).get("note")
            self.add("AC109", node, f"`{q}` has no NPU counterpart", q, alternative=alt)
            return
        code = "AC114" if "memory" in name or name in ("empty_cache", "mem_get_info") else (
            "AC115" if name in _STREAM_NAMES else "AC108")
        fixable = cuda_attr is not None and not via_submodule and (not name or npu_has(name))
        edits = self.attr_edit(cuda_attr, "npu") if fixable and cuda_attr is not None else ()
        self.add(code, node, f"`{q}`", q, edits, coupled=True)

    def _keyword_start(self, kw: ast.keyword) -> int:
        if hasattr(kw, "lineno"):
            return self.src.offset(kw.lineno, kw.col_offset)
        s, _ = self.src.span(kw.value)  # Python 3.8 keywords have no position
        return s

    def on_call(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Call)
        func = node.func
        for kw in node.keywords:
            if kw.arg in ("backend", "dist_backend", "ddp_backend"):
                self._backend_literal(kw.value)
            elif kw.arg == "device_map" and isinstance(kw.value, ast.Constant) and kw.value.value == "auto":
                self.add("AC113", kw.value, "device_map=\"auto\"", "device_map")
                self.skip.add(id(kw.value))
            elif kw.arg in ("load_in_8bit", "load_in_4bit") and isinstance(kw.value, ast.Constant) \
                    and kw.value.value is True:
                self.quantization({"quant_method": "bitsandbytes", kw.arg: True}, kw.value, kw.arg)
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if fname in ("init_process_group", "new_group") and node.args:
            self._backend_literal(node.args[0])
        if fname == "set_default_tensor_type" and node.args:
            self.default_type_args.add(id(node.args[0]))
        if fname == "add_argument" and any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and "backend" in a.value.lower()
            for a in node.args
        ):
            # argparse's --dist-backend default (pytorch/examples' imagenet): the value reaches init_process_group.
            for kw in node.keywords:
                if kw.arg == "default":
                    self._backend_literal(kw.value)
        if fname in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) > 1:
            self.nofix.add(id(node.args[1]))  # an attribute name, not a device
        q = self.qual(func)
        self.env_arguments(node, q)
        if q is not None:
            if not q.startswith("torch"):
                # Device strings of other libraries (jax.devices("cuda"), tvm.device("cuda")): report, keep.
                for a in (*node.args, *(k.value for k in node.keywords)):
                    if isinstance(a, ast.Constant):
                        self.nofix.add(id(a))
            self.on_qualified(q, func, node)
            if q.startswith("torch.") and q.endswith(("autocast", "GradScaler")):
                self.mark_device_args(node, "AC202")
            if q in ("torch.device",) and node.args and self._is_ordinal(node.args[0]):
                self.ordinal(node.args[0], "torch.device")
            if q in ("os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
                     "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput"):
                self.nvidia_smi_args(node)
            # Visit arguments, not the (already resolved) function expression.
            self.visit_args(node)
            return True
        if isinstance(func, ast.Attribute):
            if func.attr == "cuda" and self.qual(func.value) is None:  # not ``some_module.cuda(...)``
                # A file that defines its own ``cuda()`` method may be calling it: report, do not rename.
                edits = () if "cuda" in self.defined else self.attr_edit(func, "npu")
                self.add("AC101", func, "`.cuda()` moves to a CUDA device", ".cuda()", edits, coupled=True)
            elif func.attr == "to" and node.args and self._is_ordinal(node.args[0]):
                self.ordinal(node.args[0], ".to()")
            elif func.attr == "startswith" and node.args:
                self.mark_compare_literals(node.args[0], "AC106")
        return False

    def visit_args(self, node: ast.Call) -> None:
        # Resolved calls consume their subtree: walk the arguments here with a nested scanner pass.
        stack: list[ast.AST] = [*node.args, *(kw.value for kw in node.keywords)]
        func = node.func
        while isinstance(func, ast.Attribute):
            func = func.value
        if not isinstance(func, ast.Name):
            stack.append(func)  # e.g. ``foo().bar`` whose root is a call
        self._walk(stack)

    def _walk(self, stack: list[ast.AST]) -> None:
        """The one tree walk: the file from the top, and the arguments of calls and f-strings whose handler
        consumed the node (so every part of the tree sees the same handlers)."""
        get = self.handlers.get
        pop, push = stack.pop, stack.append
        stmt_classes = _STMT_CLASSES
        fields_of = _CHILD_FIELDS
        aliases = self.aliases
        name_cls, const_cls, attr_cls = ast.Name, ast.Constant, ast.Attribute
        # The hot loop: Name, non-string Constant and ``self.x``-like Attribute children (most of a tree) are
        # settled inline, never pushed; their handlers would find nothing else in them.
        while stack:
            node = pop()
            cls = type(node)
            if cls in stmt_classes:
                self.stmt = node  # type: ignore[assignment]
            h = get(cls)
            if h is not None and h(node):
                continue  # the handler consumed the subtree
            for name in fields_of.get(cls) or _child_fields(cls):
                value = getattr(node, name, None)
                if value is None:
                    continue
                for v in reversed(value) if type(value) is list else (value,):
                    t = type(v)
                    if t is name_cls:
                        if v.id in aliases:
                            self.on_name(v)
                    elif t is const_cls:
                        if type(v.value) is str:
                            self.on_constant(v)
                    elif t is attr_cls and type(v.value) is name_cls and v.value.id not in aliases:
                        if v.attr == "is_cuda":
                            self.on_attribute(v)
                    elif isinstance(v, AST):  # lists may hold None ({**d} keys) or str (global names)
                        push(v)

    @staticmethod
    def _is_ordinal(arg: ast.AST) -> bool:
        if isinstance(arg, ast.Constant):
            return type(arg.value) is int
        if isinstance(arg, ast.Name):
            return RANK_NAME_RE.fullmatch(arg.id) is not None
        if isinstance(arg, ast.Attribute):
            return RANK_NAME_RE.fullmatch(arg.attr) is not None
        return False

    def ordinal(self, arg: ast.AST, where: str) -> None:
        start, end = self.src.span(arg)
        seg = self.src.text[start:end]
        new = f'"npu:{arg.value}"' if isinstance(arg, ast.Constant) else f'f"npu:{{{seg}}}"'
        # Inside an f-string the new quotes could clash with the enclosing ones before Python 3.12: report only.
        ok = "\n" not in seg and '"' not in seg and not self.in_fstring
        edits = (Edit(start, end, new),) if ok else ()
        self.add("AC104", arg, f"integer device `{seg}` in {where} means a CUDA device", seg, edits, coupled=True)
        self.skip.add(id(arg))

    def mark_device_args(self, call: ast.Call, code: str) -> None:
        for arg in [*call.args[:1], *(kw.value for kw in call.keywords if kw.arg in ("device_type", "device"))]:
            if isinstance(arg, ast.Constant):
                self.marked[id(arg)] = code

    def mark_compare_literals(self, node: ast.AST, code: str) -> None:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for elt in node.elts:
                self.mark_compare_literals(elt, code)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.marked[id(node)] = code

    def on_dict(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Dict)
        if self.env_copy(node):
            self.mark_env_dict(node)
        for key in node.keys:
            if isinstance(key, ast.Constant):
                self.nofix.add(id(key))
        return False

    def on_subscript(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Subscript)
        key = node.slice
        if isinstance(key, ast.Constant):
            self.nofix.add(id(key))  # a lookup in a table keyed by device type, like the table's keys
            if key.value == ENV_KEY:
                if self.is_environ(node.value):
                    self.env_keys[id(key)] = ""
                elif isinstance(node.value, ast.Name):
                    self.env_keys[id(key)] = node.value.id  # an env dict when the file uses it as one
        return False

    def on_assign(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Assign)
        value = node.value
        if self.env_copy(value):
            self.env_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(value, (ast.List, ast.Tuple)):
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                for n in value.elts:
                    self.nofix.add(id(n))  # exported names, not devices
            return False
        if not isinstance(value, (ast.Constant, ast.IfExp)):
            return False
        names = [
            t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else "" for t in node.targets
        ]
        if any("backend" in n.lower() for n in names):
            self._backend_literal(node.value)
        return False

    def _backend_literal(self, node: Optional[ast.AST]) -> None:
        if isinstance(node, ast.Constant):
            self.backend_ctx.add(id(node))
        elif isinstance(node, ast.IfExp):
            self._backend_literal(node.body)
            self._backend_literal(node.orelse)

    def on_compare(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Compare)
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            left, right = operands[i], operands[i + 1]
            if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                self.mark_compare_literals(left, "AC106")
                self.mark_compare_literals(right, "AC106")
                self._backend_literal(left)
                self._backend_literal(right)
            elif isinstance(op, (ast.In, ast.NotIn)):
                if isinstance(left, ast.Constant) and left.value == ENV_KEY and self.is_environ(right):
                    self.env_keys[id(left)] = ""
                self.mark_compare_literals(left, "AC107")
                if isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                    self.mark_compare_literals(right, "AC106")
        return False

    def nvidia_smi_args(self, call: ast.Call) -> None:
        for arg in call.args[:1]:
            values = arg.elts[:1] if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            for v in values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.split(" ")[0] == "nvidia-smi":
                    self.marked[id(v)] = "AC506"

    def on_constant(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.Constant)
        value = node.value
        if not isinstance(value, str) or id(node) in self.skip or len(value) > 200:
            return True
        marked = self.marked.get(id(node))
        if DEVICE_RE.fullmatch(value):
            code = marked if marked in ("AC106", "AC107", "AC202") else "AC102"
            new = "npu" + value[4:]
            edits = () if id(node) in self.nofix else self.literal_edit(node, value, new)
            self.add(code, node, f"device {value!r}", value, edits, coupled=id(node) not in self.nofix)
        elif marked in ("AC106", "AC107") and value.startswith("cuda") and len(value) <= 8:
            self.add(marked, node, f"{value!r} compared with a device", value,
                     self.literal_edit(node, value, "npu" + value[4:]), coupled=True)
        elif DEVICE_FORMAT_RE.fullmatch(value):
            self.add("AC103", node, f"device format {value!r}", value,
                     self.literal_edit(node, "cuda", "npu"), coupled=True)
        elif value == "nccl":
            # Rewritten only where it selects the backend (not in lists of choices or lookup tables).
            ctx = id(node) in self.backend_ctx and id(node) not in self.nofix
            edits = self.literal_edit(node, "nccl", "hccl") if ctx else ()
            self.add("AC301", node, "NCCL collective backend \"nccl\"", "nccl", edits)
        elif ENV_KEY_RE.search(value):
            # Renamed only as the exact key in an environment context: never inside other strings or messages.
            ctx = self.env_keys.get(id(node)) if value == ENV_KEY else None
            edits = self.literal_edit(node, ENV_KEY, "ASCEND_RT_VISIBLE_DEVICES") if ctx is not None else ()
            self.add("AC111", node, "CUDA_VISIBLE_DEVICES does not select NPUs", ENV_KEY, edits)
            if ctx and edits:
                self.env_pending.append((len(self.findings) - 1, ctx))
        elif NCCL_ENV_RE.fullmatch(value):
            self.add("AC302", node, f"{value} has no effect on HCCL", value)
        elif marked == "AC506" or value == "nvidia-smi":
            self.add("AC506", node, "nvidia-smi does not see NPUs", "nvidia-smi", alternative="npu-smi info")
        return True

    def on_joinedstr(self, node: ast.AST) -> bool:
        assert isinstance(node, ast.JoinedStr)
        values = node.values
        first = values[0] if values else None
        if (isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value == "cuda:"
                and len(values) == 2 and isinstance(values[1], ast.FormattedValue)):
            seg = self.src.segment(node)
            i = seg.find("cuda:")
            edits = ()
            if 0 < i <= 3 and seg.count("cuda") == 1:
                start, _ = self.src.span(node)
                edits = (Edit(start + i, start + i + 4, "npu"),)
            self.add("AC103", node, "device f-string for CUDA", "f\"cuda:{...}\"", edits, coupled=True)
        else:
            for v in values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str) and ENV_KEY_RE.search(v.value):
                    # Part of a longer string (a shell line, a message): reported, never rewritten.
                    self.add("AC111", node, "CUDA_VISIBLE_DEVICES does not select NPUs", ENV_KEY)
                    break
        # Constant parts of an f-string carry no precise position before Python 3.12: visit only the
        # interpolated expressions.
        self.in_fstring += 1
        try:
            self._walk([v.value for v in values if isinstance(v, ast.FormattedValue)])
        finally:
            self.in_fstring -= 1
        return True


def decode_python(data: bytes) -> str:
    """Decode as Python does (PEP 263 coding cookie, UTF-8 by default); raises on undecodable bytes."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def scan_python(path: str, text: str, line: str = apidb.DEFAULT_LINE) -> FileResult:
    """Scan one Python source text. A file that does not parse becomes a ``FileFailed``."""
    return scan_python_tree(path, text, line)[0]


def scan_python_tree(path: str, text: str, line: str = apidb.DEFAULT_LINE
                     ) -> tuple[FileResult, Optional[ast.Module]]:
    """:func:`scan_python` and the parsed tree (None when it did not parse), so callers parse only once."""
    nlines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are the file's business, not ours
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        return FileFailed(path, "python", f"syntax error at line {exc.lineno}: {exc.msg}", nlines), None
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileFailed(path, "python", f"cannot parse: {exc}", nlines), None
    scanner = _Scanner(path, text, tree, apidb.normalize_line(line))
    scanner.run()
    findings = sorted(scanner.findings, key=lambda f: (f.line, f.col, f.code))
    return FileScanned(path, "python", nlines, findings, scanner.apis, sorted(scanner.imports)), tree
