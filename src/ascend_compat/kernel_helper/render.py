"""Render an :class:`~ascend_compat.kernel_helper.spec.OpSpec` into the files of a custom-operator project.

Templates are package data (``kernel_helper/templates``, ``string.Template`` syntax: ``${name}``, ``$$`` for a
literal dollar). Rendering is pure: the same spec gives the same bytes (sorted, no dates, no paths).
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from ascend_compat.kernel_helper.spec import OpSpec, TensorSpec, dtypes
from ascend_compat.kernel_helper.values import (
    common_values,
    elementwise_values,
    literal,
    reduction_values,
    tiling_fields,
)

__all__ = ["render_project"]

_ALONE = re.compile(r"^\s*\$\{(\w+)\}\s*$")


@cache
def _template(path: str) -> Template:
    text = resources.files("ascend_compat.kernel_helper").joinpath("templates", *path.split("/")).read_text("utf-8")
    return Template(text)


def _fill(path: str, values: dict[str, str]) -> str:
    """Substitute ``values``; a line holding only a placeholder whose value is empty disappears entirely."""
    template = _template(path)
    lines = [
        line
        for line in template.template.split("\n")
        if not (_ALONE.match(line) and values.get(_ALONE.match(line).group(1)) == "")  # type: ignore[union-attr]
    ]
    # substitute (not safe_substitute): a placeholder without a value is a bug in this module, caught by the tests
    return Template("\n".join(lines)).substitute(values)


def _test_values(spec: OpSpec) -> dict[str, str]:
    if spec.pattern == "elementwise":
        shapes = "[(8, 2048), (3, 1000), (1, 17)]"  # whole tiles, a tail tile, a tail below one 32-byte block
        inputs = "[shape] * " + str(len(spec.inputs))
        expected = "shape"
    elif spec.pattern == "reduction":
        shapes = "[(16, 1024), (5, 256), (40, 64)]"  # rows over several cores and output tiles
        inputs = "[shape]"
        expected = "shape[:-1]"
    else:
        shapes = "[(128, 256, 64), (100, 64, 48), (16, 32, 16)]"  # (M, K, N): an uneven M as the tail case
        inputs = "[(shape[0], shape[1]), (shape[1], shape[2])]"
        expected = "(shape[0], shape[2])"
    return {"test_shapes": shapes, "input_shapes": inputs, "expected_shape": expected}


def _result_alloc(spec: OpSpec) -> str:
    first = spec.inputs[0].name
    if spec.pattern == "elementwise":
        return f"    return at::empty_like({first});"
    if spec.pattern == "reduction":
        return (
            f"    auto sizes = {first}.sizes().vec();\n"
            f"    sizes.pop_back();\n"
            f"    return at::empty(sizes, {first}.options());"
        )
    second = spec.inputs[1].name
    return f"    return at::empty({{{first}.size(0), {second}.size(1)}}, {first}.options().dtype(at::kFloat));"


def _msopgen_json(spec: OpSpec) -> str:
    known = dtypes()

    def desc(t: TensorSpec) -> dict[str, Any]:
        return {
            "name": t.name,
            "param_type": "required",
            "format": ["ND" for _ in t.dtypes],
            "type": [known[d]["msopgen"] for d in t.dtypes],
        }

    entry: dict[str, Any] = {
        "op": spec.op_type,
        "language": "cpp",
        "input_desc": [desc(t) for t in spec.inputs],
        "output_desc": [desc(t) for t in spec.outputs],
    }
    if spec.attrs:
        entry["attr"] = [
            {"name": a.name, "param_type": "optional", "type": a.type, "default_value": literal(a.type, a.default)}
            for a in spec.attrs
        ]
    return json.dumps([entry], indent=4) + "\n"


def _cmake_presets(spec: OpSpec) -> str:
    def var(kind: str, value: str) -> dict[str, str]:
        return {"type": kind, "value": value}

    presets = {
        "version": 1,
        "cmakeMinimumRequired": {"major": 3, "minor": 19, "patch": 0},
        "configurePresets": [
            {
                "name": "default",
                "displayName": "Default Config",
                "description": f"{spec.op_type}: settings build.sh applies to the msopgen project",
                "generator": "Unix Makefiles",
                "binaryDir": "${sourceDir}/build_out",
                "cacheVariables": {
                    "CMAKE_BUILD_TYPE": var("STRING", "Release"),
                    "ENABLE_SOURCE_PACKAGE": var("BOOL", "True"),
                    "ENABLE_BINARY_PACKAGE": var("BOOL", "True"),
                    "ASCEND_COMPUTE_UNIT": var("STRING", ";".join(spec.soc_versions)),
                    "ENABLE_TEST": var("BOOL", "True"),
                    "vendor_name": var("STRING", "customize"),
                    "ASCEND_CANN_PACKAGE_PATH": var("PATH", "/usr/local/Ascend/ascend-toolkit/latest"),
                    "ASCEND_PYTHON_EXECUTABLE": var("STRING", "python3"),
                    "CMAKE_INSTALL_PREFIX": var("PATH", "${sourceDir}/build_out"),
                    "ENABLE_CROSS_COMPILE": var("BOOL", "False"),
                },
            }
        ],
    }
    return json.dumps(presets, indent=4) + "\n"


def _tiling_doc(spec: OpSpec) -> str:
    if spec.pattern == "elementwise":
        return (
            f"The flattened tensors are split evenly over up to {spec.block_dim} AI cores (slices rounded up to whole "
            f"32-byte blocks); each core walks its slice in tiles of {spec.tile_length} elements, {spec.buffer_num} "
            f"buffer(s) per queue. The last tile of a core may be shorter; a tail that is not whole 32-byte blocks is "
            f"copied with DataCopyPad."
        )
    if spec.pattern == "reduction":
        return (
            f"Rows (all dimensions but the last) are split over up to {spec.block_dim} AI cores. A row of up to "
            f"{spec.max_row_length} elements is loaded and reduced at a time; results are gathered {spec.tile_length} "
            f"rows per output tile and written back together."
        )
    return (
        f"The matmul tiling library (MultiCoreMatmulTiling) splits C over the AI cores; the cube's base block is "
        f"{spec.tile_m} x {spec.tile_n} x {spec.tile_k} (M x N x K), checked against the L0A/L0B/L0C buffer sizes."
    )


_PAD_NOTE = (
    "\n- Tails that are not whole 32-byte blocks are copied with DataCopyPad, which Atlas A2 (910B) and later have;\n"
    "  on older SoCs keep sizes a multiple of 32 bytes or handle the tail another way."
)


def _limits(spec: OpSpec) -> str:
    if spec.pattern == "elementwise":
        return "inputs must have the same number of elements (no broadcasting)." + _PAD_NOTE
    if spec.pattern == "reduction":
        return (
            f"only the last dimension is reduced; rows longer than {spec.max_row_length} elements are refused by the "
            f"tiling function." + _PAD_NOTE
        )
    return "2-D inputs only, no bias, no transposes; the output is float32."


def render_project(spec: OpSpec) -> dict[str, str]:
    """Every file of the project for ``spec`` (validated first), as ``{relative posix path: text}``, sorted."""
    spec.validate()
    values = common_values(spec)
    fields, includes = tiling_fields(spec)
    values["tiling_fields"] = fields
    values["tiling_includes"] = includes
    if spec.pattern == "elementwise":
        values = elementwise_values(spec, values)
    elif spec.pattern == "reduction":
        values = reduction_values(spec, values)
    values.update(_test_values(spec))
    values["result_alloc"] = _result_alloc(spec)
    values["tiling_doc"] = _tiling_doc(spec)
    values["limits"] = _limits(spec)
    rows = [
        f"| `{t.name}` | {role} | {', '.join(t.dtypes)} | {t.shape} |"
        for role, group in (("input", spec.inputs), ("output", spec.outputs))
        for t in group
    ]
    values["tensor_table"] = "\n".join(rows)
    values["attr_doc"] = (
        "Attributes: " + ", ".join(f"`{a.name}` ({a.type}, default {a.default!r})" for a in spec.attrs) + "."
        if spec.attrs
        else "No attributes."
    )

    name = spec.snake
    files: dict[str, str] = {
        f"{spec.op_type}.json": _msopgen_json(spec),
        "CMakePresets.json": _cmake_presets(spec),
        "build.sh": _fill("common/build.sh.tmpl", values),
        "spec.json": json.dumps(spec.to_dict(), indent=2) + "\n",
        f"op_host/{name}_tiling.h": _fill("common/tiling.h.tmpl", values),
        f"op_host/{name}.cpp": _fill(f"{spec.pattern}/op_host.cpp.tmpl", values),
        f"op_kernel/{name}.cpp": _fill(f"{spec.pattern}/op_kernel.cpp.tmpl", values),
        f"torch_binding/csrc/{name}.cpp": _fill("common/binding.cpp.tmpl", values),
        "torch_binding/csrc/pytorch_npu_helper.hpp": _fill("common/pytorch_npu_helper.hpp.tmpl", values),
        "torch_binding/setup.py": _fill("common/setup.py.tmpl", values),
        f"torch_binding/{name}_op.py": _fill("common/op.py.tmpl", values),
        f"tests/test_{name}.py": _fill("common/test_op.py.tmpl", values),
    }
    tree = "\n".join(sorted([*files, "README.md"]))
    files["README.md"] = _fill("common/README.md.tmpl", {**values, "tree": tree})
    return {path: files[path] for path in sorted(files)}
