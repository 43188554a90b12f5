"""The declarative description of a custom Ascend C operator, and its validation.

An :class:`OpSpec` names the operator, its pattern (elementwise, reduction, matmul), what it computes, its tensors
(names, dtypes, shape rules), attributes and tile sizes. ``validate()`` reports every problem at once (the rules,
including the unified-buffer budgets the hardware imposes, are in :mod:`ascend_compat.kernel_helper.validate`).
The dtypes, computations and CANN built-in operator names are data (``data/*.json``, read by
:mod:`ascend_compat._data`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union

from ascend_compat import _data

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


class SpecError(ValueError):
    """An invalid operator spec; ``problems`` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid operator spec:\n  - " + "\n  - ".join(self.problems))


def dtypes() -> dict[str, dict[str, Any]]:
    """The element types a spec may use, by name (``float16``, ``float32``, ...)."""
    return {d["name"]: d for d in _data.load("dtypes")["dtypes"]}


def computations() -> dict[str, dict[str, Any]]:
    """What an operator can compute, by name, with the pattern it belongs to."""
    return {c["name"]: c for c in _data.load("computations")["computations"]}


def builtin_ops() -> frozenset[str]:
    """CANN's built-in operator types a custom operator must not be registered as."""
    return frozenset(o["name"] for o in _data.load("builtin_ops")["operators"])


def snake_name(name: str) -> str:
    """``AddCustom`` / ``add_custom`` -> ``add_custom``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def op_type_name(name: str) -> str:
    """``add_custom`` -> ``AddCustom`` (the OpType CANN registers)."""
    return "".join(part[:1].upper() + part[1:] for part in snake_name(name).split("_") if part)


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
        from ascend_compat.kernel_helper.validate import spec_problems  # it imports this module

        return spec_problems(self)

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
