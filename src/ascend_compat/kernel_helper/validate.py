"""What is wrong with an :class:`~ascend_compat.kernel_helper.spec.OpSpec`: every problem at once, in spec order.

Names first (a bad operator name makes everything else meaningless), then the computation, tensors, attributes and
options, and last the buffer budgets: ``DataCopy`` moves whole 32-byte blocks between global memory and the unified
buffer (UB), so every tile must be a multiple of 32 bytes, and all the tiles (times the buffer count, for double
buffering) must fit in the UB; a matmul's base block must fit the cube's L0A/L0B/L0C buffers.
"""

from __future__ import annotations

import keyword
import math
import re
from typing import Any, Optional

from ascend_compat.kernel_helper.spec import (
    ALIGN_BYTES,
    FRACTAL,
    L0A_BYTES,
    L0B_BYTES,
    L0C_BYTES,
    PATTERNS,
    SOC_VERSIONS,
    OpSpec,
    builtin_ops,
    computations,
    dtypes,
    snake_name,
)

__all__ = ["spec_problems"]

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

DTypes = dict[str, dict[str, Any]]


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


def spec_problems(spec: OpSpec) -> list[str]:
    """Every problem with ``spec`` (empty when it is valid); the tile budgets are checked only on an otherwise valid
    spec, since they depend on its dtypes and pattern."""
    problem = _identifier_problem("operator name", spec.name)
    if problem:
        return [problem]  # nothing else is meaningful (file names derive from it)
    if spec.op_type in builtin_ops():
        return [f"operator name {spec.name!r} gives the op type {spec.op_type!r}, which is a CANN built-in "
                f"operator: registering it would clash; pick another name (e.g. {spec.snake.strip('_')}_custom)"]
    if spec.pattern not in PATTERNS:
        return [f"pattern {spec.pattern!r} is not one of {', '.join(PATTERNS)}"]
    out: list[str] = []
    ns_problem = _identifier_problem("torch namespace", spec.namespace)
    if ns_problem:
        out.append(ns_problem)
    comp = computations().get(spec.compute)
    if comp is None:
        names = sorted(c for c, v in computations().items() if v["pattern"] == spec.pattern)
        return [*out, f"compute {spec.compute!r} is unknown for pattern {spec.pattern}; choose one of {names}"]
    known = dtypes()
    out += _compute_problems(spec, comp)
    seen: set[str] = set()  # tensor names, lower-cased (attributes must not reuse them)
    out += _tensor_problems(spec, known, seen)
    out += _dtype_problems(spec, comp, known)
    out += _attr_problems(spec, comp, seen)
    out += _option_problems(spec)
    if out:
        return out
    return _tile_problems(spec, known)


def _compute_problems(spec: OpSpec, comp: dict[str, Any]) -> list[str]:
    out = []
    if comp["pattern"] != spec.pattern:
        out.append(f"compute {spec.compute!r} belongs to the {comp['pattern']} pattern, not {spec.pattern}")
    if len(spec.inputs) != comp["inputs"]:
        out.append(f"{spec.compute} takes {comp['inputs']} input(s), the spec declares {len(spec.inputs)}")
    if len(spec.outputs) != 1:
        out.append(f"the {spec.pattern} templates produce exactly 1 output, the spec declares {len(spec.outputs)}")
    return out


def _tensor_problems(spec: OpSpec, known: DTypes, seen: set[str]) -> list[str]:
    out = []
    for tensor in (*spec.inputs, *spec.outputs):
        problem = _identifier_problem("tensor name", tensor.name)
        if problem:
            out.append(problem)
        elif tensor.name.lower() in _RESERVED or tensor.name.lower() == spec.snake:
            out.append(f"tensor name {tensor.name!r} is used by the generated code itself; pick another")
        if tensor.name.lower() in seen:
            out.append(f"tensor name {tensor.name!r} is used twice (names are case-insensitive: DTYPE_ macros)")
        seen.add(tensor.name.lower())
        if not tensor.dtypes:
            out.append(f"tensor {tensor.name!r} declares no dtype")
        for dt in tensor.dtypes:
            if dt not in known:
                out.append(f"tensor {tensor.name!r}: unknown dtype {dt!r}; known: {', '.join(sorted(known))}")
    return out


def _dtype_problems(spec: OpSpec, comp: dict[str, Any], known: DTypes) -> list[str]:
    out = []
    tensors = (*spec.inputs, *spec.outputs)
    if len({len(t.dtypes) for t in tensors}) > 1:
        out.append("every tensor must list the same number of dtypes (each position is one supported combination)")
    if spec.dtype_count and len(set(zip(*(t.dtypes for t in tensors)))) != spec.dtype_count:
        out.append("the dtype combinations repeat")
    for dt in {d for t in spec.inputs for d in t.dtypes}:
        if dt in known and dt not in comp["dtypes"]:
            out.append(
                f"{spec.compute}: the Ascend C call has no {dt} form (supported: {', '.join(comp['dtypes'])}); "
                f"cast in the kernel or pick another dtype"
            )
    if spec.pattern != "matmul" and spec.inputs and spec.outputs:
        for i, (ins, outs) in enumerate(zip(zip(*(t.dtypes for t in spec.inputs)), spec.outputs[0].dtypes)):
            if len(set(ins)) > 1 or ins[0] != outs:
                out.append(f"dtype combination {i}: the {spec.pattern} template needs one dtype for all tensors")
    return out


def _attr_problems(spec: OpSpec, comp: dict[str, Any], seen: set[str]) -> list[str]:
    out = []
    attr_names = {a.name for a in spec.attrs}
    for need in comp.get("attrs", []):
        if need["name"] not in attr_names:
            out.append(f"{spec.compute} needs the attribute {need['name']!r} ({need['type']})")
    for attr in spec.attrs:
        problem = _identifier_problem("attribute name", attr.name)
        if problem:
            out.append(problem)
        if attr.name.lower() in seen or attr.name.lower() in _RESERVED:
            out.append(f"attribute name {attr.name!r} clashes with a tensor or generated name")
        if attr.type not in ("float", "int", "bool"):
            out.append(f"attribute {attr.name!r}: type must be float, int or bool, not {attr.type!r}")
    if len(attr_names) != len(spec.attrs):
        out.append("attribute names repeat")
    return out


def _option_problems(spec: OpSpec) -> list[str]:
    out = []
    for soc in spec.soc_versions:
        if soc not in SOC_VERSIONS:
            out.append(f"unknown SoC {soc!r}; known: {', '.join(SOC_VERSIONS)}")
    for label, value, low in (("buffer_num", spec.buffer_num, 1), ("block_dim", spec.block_dim, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            out.append(f"{label} must be an integer >= {low}, got {value!r}")
    if isinstance(spec.buffer_num, int) and spec.buffer_num > 2:
        out.append("buffer_num must be 1 or 2 (TQue depth for single/double buffering)")
    return out


# -- buffer budgets ---------------------------------------------------------------------------------------------------

def _alignment_problem(label: str, elements: Any, widths: list[int]) -> Optional[str]:
    """Why ``elements`` per tile is not a positive whole number of 32-byte blocks for every element width."""
    if not isinstance(elements, int) or isinstance(elements, bool) or elements <= 0:
        return f"{label} must be a positive integer, got {elements!r}"
    for width in widths:
        if elements * width % ALIGN_BYTES:
            need = ALIGN_BYTES // math.gcd(ALIGN_BYTES, width)
            return (
                f"{label}={elements}: a tile of {elements} x {width}-byte elements is {elements * width} bytes, "
                f"not a multiple of {ALIGN_BYTES} (DataCopy moves 32-byte blocks into the unified buffer); "
                f"use a multiple of {need} elements"
            )
    return None


def _tile_problems(spec: OpSpec, known: DTypes) -> list[str]:
    widths = sorted({known[d]["bytes"] for t in (*spec.inputs, *spec.outputs) for d in t.dtypes})
    if spec.pattern == "elementwise":
        return _elementwise_budget(spec, known, widths)
    if spec.pattern == "reduction":
        return _reduction_budget(spec, widths)
    return _matmul_budget(spec, known)


def _elementwise_budget(spec: OpSpec, known: DTypes, widths: list[int]) -> list[str]:
    problem = _alignment_problem("tile_length", spec.tile_length, widths)
    if problem:
        return [problem]
    # bytes one element of every queue takes, for the widest dtype combination
    per_element = max(
        sum(known[t.dtypes[i]]["bytes"] for t in (*spec.inputs, *spec.outputs)) for i in range(spec.dtype_count)
    )
    need = spec.buffer_num * spec.tile_length * per_element
    if need > spec.ub_bytes:
        return [f"tiles need {need} bytes of unified buffer ({len(spec.inputs) + 1} queues x {spec.buffer_num} "
                f"buffers x {spec.tile_length} elements), more than {spec.ub_bytes}; lower tile_length"]
    return []


def _reduction_budget(spec: OpSpec, widths: list[int]) -> list[str]:
    out = [p for p in (_alignment_problem("tile_length", spec.tile_length, widths),
                       _alignment_problem("max_row_length", spec.max_row_length, widths)) if p]
    if out:
        return out
    width = widths[-1]
    # input queue + work buffer (ReduceSum needs one as large as the row) + scalar buffer + output queue
    need = (spec.buffer_num * spec.max_row_length * width + spec.max_row_length * width + ALIGN_BYTES
            + spec.buffer_num * spec.tile_length * width)
    if need > spec.ub_bytes:
        return [f"a row of {spec.max_row_length} elements and an output tile of {spec.tile_length} need {need} "
                f"bytes of unified buffer, more than {spec.ub_bytes}; lower max_row_length or tile_length"]
    return []


def _matmul_budget(spec: OpSpec, known: DTypes) -> list[str]:
    out = []
    for label, value in (("tile_m", spec.tile_m), ("tile_n", spec.tile_n), ("tile_k", spec.tile_k)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0 or value % FRACTAL:
            out.append(f"{label}={value!r} must be a positive multiple of {FRACTAL} (the cube's fractal size)")
    if out:
        return out
    in_width = max(known[d]["bytes"] for t in spec.inputs for d in t.dtypes)
    if spec.tile_m * spec.tile_k * in_width > L0A_BYTES:
        out.append(f"tile_m x tile_k = {spec.tile_m * spec.tile_k * in_width} bytes exceeds L0A ({L0A_BYTES})")
    if spec.tile_k * spec.tile_n * in_width > L0B_BYTES:
        out.append(f"tile_k x tile_n = {spec.tile_k * spec.tile_n * in_width} bytes exceeds L0B ({L0B_BYTES})")
    if spec.tile_m * spec.tile_n * 4 > L0C_BYTES:
        out.append(f"tile_m x tile_n float results = {spec.tile_m * spec.tile_n * 4} bytes exceed L0C ({L0C_BYTES})")
    return out
