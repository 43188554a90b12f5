"""The declarative description of a custom Ascend C operator, and its validation.

An :class:`OpSpec` names the operator, its pattern (elementwise, reduction, matmul), what it computes, its tensors
(names, dtypes, shape rules), attributes and tile sizes. ``validate()`` reports every problem at once; the
unified-buffer (UB) rules are the ones the hardware imposes: ``DataCopy`` moves whole 32-byte blocks between global
memory and the UB, so every tile must be a multiple of 32 bytes, and all the tiles (times the buffer count, for
double buffering) must fit in the UB.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any, Optional, Union

__all__ = [
    "ALIGN_BYTES",
    "PATTERNS",
    "AttrSpec",
    "OpSpec",
    "SpecError",
    "TensorSpec",
    "computations",
    "default_spec",
    "dtypes",
    "op_type_name",
    "snake_name",
]

PATTERNS = ("elementwise", "reduction", "matmul")
DEFAULT_COMPUTE = {"elementwise": "add", "reduction": "sum", "matmul": "matmul"}
#: DataCopy between global memory and the unified buffer works on 32-byte blocks (Ascend C programming guide).
ALIGN_BYTES = 32
#: Unified buffer per AI Core on Atlas A2 (910B): 192 KiB; 910 (A1) has 256 KiB. The generated tiling code asks the
#: platform at run time (GetCoreMemSize); this is the design-time budget the spec is checked against.
DEFAULT_UB_BYTES = 192 * 1024
#: Cube unit buffers on Atlas A2: L0A and L0B 64 KiB each, L0C 128 KiB; the cube works on 16x16 fractals.
L0A_BYTES, L0B_BYTES, L0C_BYTES, FRACTAL = 64 * 1024, 64 * 1024, 128 * 1024, 16
SOC_VERSIONS = ("ascend910", "ascend910b", "ascend910_93", "ascend310p", "ascend310b")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_CXX_KEYWORDS = frozenset(
    "alignas alignof and asm auto bool break case catch char class const constexpr continue default delete do "
    "double else enum explicit export extern false float for friend goto if inline int long mutable namespace new "
    "noexcept not nullptr operator or private protected public register return short signed sizeof static struct "
    "switch template this throw true try typedef typeid typename union unsigned using virtual void volatile while "
    "xor half".split()
)
#: Names the generated code uses itself (kernel parameters, members, helpers).
_RESERVED = frozenset({"workspace", "tiling", "pipe", "op", "context", "m", "torch", "self", "tiling_data", "at"})


class SpecError(ValueError):
    """An invalid operator spec; ``problems`` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid operator spec:\n  - " + "\n  - ".join(self.problems))


@cache
def _load(name: str) -> dict[str, Any]:
    text = resources.files("ascend_compat.kernel_helper").joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text)


def dtypes() -> dict[str, dict[str, Any]]:
    """The element types a spec may use, by name (``float16``, ``float32``, ...)."""
    return {d["name"]: d for d in _load("dtypes.json")["dtypes"]}


def computations() -> dict[str, dict[str, Any]]:
    """What an operator can compute, by name, with the pattern it belongs to."""
    return {c["name"]: c for c in _load("computations.json")["computations"]}


def builtin_ops() -> frozenset[str]:
    """CANN's built-in operator types a custom operator must not be registered as."""
    return frozenset(o["name"] for o in _load("builtin_ops.json")["operators"])


def snake_name(name: str) -> str:
    """``AddCustom`` / ``add_custom`` -> ``add_custom``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def op_type_name(name: str) -> str:
    """``add_custom`` -> ``AddCustom`` (the OpType CANN registers)."""
    return "".join(part[:1].upper() + part[1:] for part in snake_name(name).split("_") if part)


def _identifier_problem(what: str, name: Any) -> Optional[str]:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        return (
            f"{what} {name!r} is not a valid name: use letters, digits and underscores, starting with a letter "
            f"(no paths, dots, dashes or spaces)"
        )
    if len(name) > 64:
        return f"{what} {name!r} is longer than 64 characters"
    lowered = snake_name(name)
    if keyword.iskeyword(lowered) or lowered in _CXX_KEYWORDS or "__" in lowered:
        return f"{what} {name!r} is a C++/Python keyword or contains '__'"
    return None


@dataclass(frozen=True)
class TensorSpec:
    """An input or output: name, the dtypes it supports (positional combinations across tensors), shape rule."""

    name: str
    dtypes: tuple[str, ...]
    shape: str = "any"


@dataclass(frozen=True)
class AttrSpec:
    """An operator attribute (passed to the kernel through the tiling data)."""

    name: str
    type: str = "float"
    default: Union[float, int, bool] = 0.0


@dataclass(frozen=True)
class OpSpec:
    """A custom operator. ``tile_length``: elements per UB tile (elementwise), or reduced rows per output tile
    (reduction); ``max_row_length``: longest reduced row the UB holds (reduction); ``tile_m/n/k``: cube base
    block (matmul); ``buffer_num``: 2 for double buffering."""

    name: str
    pattern: str
    compute: str = ""
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    attrs: tuple[AttrSpec, ...] = ()
    tile_length: int = 2048
    max_row_length: int = 8192
    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 64
    buffer_num: int = 2
    block_dim: int = 8
    ub_bytes: int = DEFAULT_UB_BYTES
    soc_versions: tuple[str, ...] = ("ascend910b",)
    namespace: str = "ascend_custom"
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def snake(self) -> str:
        return snake_name(self.name)

    @property
    def op_type(self) -> str:
        return op_type_name(self.name)

    @property
    def dtype_count(self) -> int:
        return len(self.inputs[0].dtypes) if self.inputs else 0

    # -- validation ---------------------------------------------------------------------------------------------
    def problems(self) -> list[str]:
        """Every problem with this spec (empty when it is valid)."""
        out: list[str] = []
        problem = _identifier_problem("operator name", self.name)
        if problem:
            return [problem]  # nothing else is meaningful (file names derive from it)
        if self.op_type in builtin_ops():
            return [f"operator name {self.name!r} gives the op type {self.op_type!r}, which is a CANN built-in "
                    f"operator: registering it would clash; pick another name (e.g. {self.snake.strip('_')}_custom)"]
        if self.pattern not in PATTERNS:
            return [f"pattern {self.pattern!r} is not one of {', '.join(PATTERNS)}"]
        ns_problem = _identifier_problem("torch namespace", self.namespace)
        if ns_problem:
            out.append(ns_problem)
        comp = computations().get(self.compute)
        if comp is None:
            names = sorted(c for c, v in computations().items() if v["pattern"] == self.pattern)
            return [*out, f"compute {self.compute!r} is unknown for pattern {self.pattern}; choose one of {names}"]
        if comp["pattern"] != self.pattern:
            out.append(f"compute {self.compute!r} belongs to the {comp['pattern']} pattern, not {self.pattern}")
        if len(self.inputs) != comp["inputs"]:
            out.append(f"{self.compute} takes {comp['inputs']} input(s), the spec declares {len(self.inputs)}")
        if len(self.outputs) != 1:
            out.append(f"the {self.pattern} templates produce exactly 1 output, the spec declares {len(self.outputs)}")

        known = dtypes()
        seen: set[str] = set()
        for tensor in (*self.inputs, *self.outputs):
            problem = _identifier_problem("tensor name", tensor.name)
            if problem:
                out.append(problem)
            elif tensor.name.lower() in _RESERVED or tensor.name.lower() == self.snake:
                out.append(f"tensor name {tensor.name!r} is used by the generated code itself; pick another")
            if tensor.name.lower() in seen:
                out.append(f"tensor name {tensor.name!r} is used twice (names are case-insensitive: DTYPE_ macros)")
            seen.add(tensor.name.lower())
            if not tensor.dtypes:
                out.append(f"tensor {tensor.name!r} declares no dtype")
            for dt in tensor.dtypes:
                if dt not in known:
                    out.append(f"tensor {tensor.name!r}: unknown dtype {dt!r}; known: {', '.join(sorted(known))}")
        counts = {len(t.dtypes) for t in (*self.inputs, *self.outputs)}
        if len(counts) > 1:
            out.append("every tensor must list the same number of dtypes (each position is one supported combination)")
        if self.dtype_count and len(set(zip(*(t.dtypes for t in (*self.inputs, *self.outputs))))) != self.dtype_count:
            out.append("the dtype combinations repeat")
        for dt in {d for t in self.inputs for d in t.dtypes}:
            if dt in known and dt not in comp["dtypes"]:
                out.append(
                    f"{self.compute}: the Ascend C call has no {dt} form (supported: {', '.join(comp['dtypes'])}); "
                    f"cast in the kernel or pick another dtype"
                )
        if self.pattern != "matmul":
            for i, (ins, outs) in enumerate(zip(zip(*(t.dtypes for t in self.inputs)), self.outputs[0].dtypes)
                                            if self.inputs and self.outputs else []):
                if len(set(ins)) > 1 or ins[0] != outs:
                    out.append(f"dtype combination {i}: the {self.pattern} template needs one dtype for all tensors")

        attr_names = {a.name for a in self.attrs}
        for need in comp.get("attrs", []):
            if need["name"] not in attr_names:
                out.append(f"{self.compute} needs the attribute {need['name']!r} ({need['type']})")
        for attr in self.attrs:
            problem = _identifier_problem("attribute name", attr.name)
            if problem:
                out.append(problem)
            if attr.name.lower() in seen or attr.name.lower() in _RESERVED:
                out.append(f"attribute name {attr.name!r} clashes with a tensor or generated name")
            if attr.type not in ("float", "int", "bool"):
                out.append(f"attribute {attr.name!r}: type must be float, int or bool, not {attr.type!r}")
        if len(attr_names) != len(self.attrs):
            out.append("attribute names repeat")

        for soc in self.soc_versions:
            if soc not in SOC_VERSIONS:
                out.append(f"unknown SoC {soc!r}; known: {', '.join(SOC_VERSIONS)}")
        for label, value, low in (("buffer_num", self.buffer_num, 1), ("block_dim", self.block_dim, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                out.append(f"{label} must be an integer >= {low}, got {value!r}")
        if isinstance(self.buffer_num, int) and self.buffer_num > 2:
            out.append("buffer_num must be 1 or 2 (TQue depth for single/double buffering)")
        if out:
            return out
        out.extend(self._tile_problems(known))
        return out

    def _tile_problems(self, known: dict[str, dict[str, Any]]) -> list[str]:
        out: list[str] = []
        widths = sorted({known[d]["bytes"] for t in (*self.inputs, *self.outputs) for d in t.dtypes})

        def aligned(label: str, elements: int) -> None:
            if not isinstance(elements, int) or isinstance(elements, bool) or elements <= 0:
                out.append(f"{label} must be a positive integer, got {elements!r}")
                return
            for width in widths:
                if elements * width % ALIGN_BYTES:
                    need = ALIGN_BYTES // _gcd(ALIGN_BYTES, width)
                    out.append(
                        f"{label}={elements}: a tile of {elements} x {width}-byte elements is "
                        f"{elements * width} bytes, "
                        f"not a multiple of {ALIGN_BYTES} (DataCopy moves 32-byte blocks into the unified buffer); "
                        f"use a multiple of {need} elements"
                    )
                    return

        if self.pattern == "elementwise":
            aligned("tile_length", self.tile_length)
            if not out:
                # bytes one element of every queue takes, for the widest dtype combination
                per_element = max(
                    sum(known[t.dtypes[i]]["bytes"] for t in (*self.inputs, *self.outputs))
                    for i in range(self.dtype_count)
                )
                need = self.buffer_num * self.tile_length * per_element
                if need > self.ub_bytes:
                    out.append(
                        f"tiles need {need} bytes of unified buffer ({len(self.inputs) + 1} queues x {self.buffer_num} "
                        f"buffers x {self.tile_length} elements), more than {self.ub_bytes}; lower tile_length"
                    )
        elif self.pattern == "reduction":
            aligned("tile_length", self.tile_length)
            aligned("max_row_length", self.max_row_length)
            if not out:
                width = widths[-1]
                # input queue + work buffer (ReduceSum needs one as large as the row) + scalar buffer + output queue
                need = (self.buffer_num * self.max_row_length * width + self.max_row_length * width + ALIGN_BYTES
                        + self.buffer_num * self.tile_length * width)
                if need > self.ub_bytes:
                    out.append(
                        f"a row of {self.max_row_length} elements and an output tile of {self.tile_length} need {need} "
                        f"bytes of unified buffer, more than {self.ub_bytes}; lower max_row_length or tile_length"
                    )
        else:
            in_width = max(known[d]["bytes"] for t in self.inputs for d in t.dtypes)
            for label, value in (("tile_m", self.tile_m), ("tile_n", self.tile_n), ("tile_k", self.tile_k)):
                if not isinstance(value, int) or isinstance(value, bool) or value <= 0 or value % FRACTAL:
                    out.append(f"{label}={value!r} must be a positive multiple of {FRACTAL} (the cube's fractal size)")
            if not out:
                if self.tile_m * self.tile_k * in_width > L0A_BYTES:
                    size = self.tile_m * self.tile_k * in_width
                    out.append(f"tile_m x tile_k = {size} bytes exceeds L0A ({L0A_BYTES})")
                if self.tile_k * self.tile_n * in_width > L0B_BYTES:
                    size = self.tile_k * self.tile_n * in_width
                    out.append(f"tile_k x tile_n = {size} bytes exceeds L0B ({L0B_BYTES})")
                if self.tile_m * self.tile_n * 4 > L0C_BYTES:
                    out.append(f"tile_m x tile_n float results = {self.tile_m * self.tile_n * 4} bytes exceed L0C "
                               f"({L0C_BYTES})")
        return out

    def validate(self) -> OpSpec:
        """Raise :class:`SpecError` listing every problem; return self when valid."""
        problems = self.problems()
        if problems:
            raise SpecError(problems)
        return self

    # -- (de)serialisation -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pattern": self.pattern,
            "compute": self.compute,
            "inputs": [{"name": t.name, "dtypes": list(t.dtypes), "shape": t.shape} for t in self.inputs],
            "outputs": [{"name": t.name, "dtypes": list(t.dtypes), "shape": t.shape} for t in self.outputs],
            "attrs": [{"name": a.name, "type": a.type, "default": a.default} for a in self.attrs],
            "tile_length": self.tile_length,
            "max_row_length": self.max_row_length,
            "tile_m": self.tile_m,
            "tile_n": self.tile_n,
            "tile_k": self.tile_k,
            "buffer_num": self.buffer_num,
            "block_dim": self.block_dim,
            "ub_bytes": self.ub_bytes,
            "soc_versions": list(self.soc_versions),
            "namespace": self.namespace,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpSpec:
        """Build a spec from a mapping (e.g. a JSON file); missing tensors/attrs take the pattern's defaults."""
        if not isinstance(data, dict):
            raise SpecError(["a spec must be a JSON object"])
        unknown = sorted(set(data) - set(cls.__dataclass_fields__) - {"$schema"})
        if unknown:
            raise SpecError([f"unknown spec field(s): {', '.join(unknown)}"])
        try:
            base = default_spec(data["name"], data.get("pattern", "elementwise"), compute=data.get("compute"))
        except KeyError:
            raise SpecError(["a spec needs a 'name'"]) from None
        kwargs: dict[str, Any] = {}
        try:
            for key in ("inputs", "outputs"):
                if key in data:
                    kwargs[key] = tuple(
                        TensorSpec(str(t["name"]), tuple(t.get("dtypes", ("float16",))), str(t.get("shape", "any")))
                        for t in data[key]
                    )
            if "attrs" in data:
                kwargs["attrs"] = tuple(
                    AttrSpec(str(a["name"]), str(a.get("type", "float")), a.get("default", 0.0)) for a in data["attrs"]
                )
        except (TypeError, KeyError) as exc:
            raise SpecError([f"malformed tensor or attribute entry: {exc!r}"]) from None
        for key in ("tile_length", "max_row_length", "tile_m", "tile_n", "tile_k", "buffer_num", "block_dim",
                    "ub_bytes", "namespace"):
            if key in data:
                kwargs[key] = data[key]
        if "soc_versions" in data:
            kwargs["soc_versions"] = tuple(data["soc_versions"])
        return replace(base, **kwargs)


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def default_spec(
    name: str, pattern: str = "elementwise", compute: Optional[str] = None, dtype: Union[str, list[str], None] = None
) -> OpSpec:
    """A ready-to-generate spec for ``pattern`` (tensor names, shape rules and attributes filled in)."""
    if pattern not in PATTERNS:
        raise SpecError([f"pattern {pattern!r} is not one of {', '.join(PATTERNS)}"])
    compute = compute or DEFAULT_COMPUTE[pattern]
    comp = computations().get(compute)
    if isinstance(dtype, str):
        dtype_list = [d.strip() for d in dtype.split(",") if d.strip()]
    else:
        dtype_list = list(dtype or [])
    if not dtype_list:
        dtype_list = ["float16"]
    dts = tuple(dtype_list)
    attrs = tuple(AttrSpec(a["name"], a["type"], a["default"]) for a in (comp or {}).get("attrs", []))
    arity = (comp or {}).get("inputs", 2 if pattern != "reduction" else 1)
    if pattern == "elementwise":
        names = ["x1", "x2"] if arity == 2 else ["x"]
        inputs = tuple(TensorSpec(n, dts, "any") for n in names)
        outputs = (TensorSpec("y", dts, f"same:{names[0]}"),)
    elif pattern == "reduction":
        inputs = (TensorSpec("x", dts, "any"),)
        outputs = (TensorSpec("y", dts, "reduce_last:x"),)
    else:
        inputs = (TensorSpec("a", dts, "[M, K]"), TensorSpec("b", dts, "[K, N]"))
        outputs = (TensorSpec("c", tuple("float32" for _ in dts), "matmul:a,b"),)
    return OpSpec(name=name, pattern=pattern, compute=compute, inputs=inputs, outputs=outputs, attrs=attrs)
