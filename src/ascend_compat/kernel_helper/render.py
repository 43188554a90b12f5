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

from ascend_compat.kernel_helper.spec import ALIGN_BYTES, OpSpec, TensorSpec, computations, dtypes

__all__ = ["render_project"]

_INDENT = " " * 8
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


def _cap(name: str) -> str:
    return name[:1].upper() + name[1:]


def _opdef_tensor(kind: str, tensor: TensorSpec) -> str:
    known = dtypes()
    ge_types = ", ".join(known[d]["ge"] for d in tensor.dtypes)
    formats = ", ".join("ge::FORMAT_ND" for _ in tensor.dtypes)
    return (
        f'{_INDENT}this->{kind}("{tensor.name}")\n'
        f"{_INDENT}    .ParamType(REQUIRED)\n"
        f"{_INDENT}    .DataType({{{ge_types}}})\n"
        f"{_INDENT}    .Format({{{formats}}})\n"
        f"{_INDENT}    .UnknownShapeFormat({{{formats}}});"
    )


#: attribute type -> (runtime attr C++ type, tiling field type, OpAttrDef setter)
_ATTR_CPP = {
    "float": ("float", "float", "Float"),
    "int": ("int64_t", "int64_t", "Int"),
    "bool": ("bool", "uint32_t", "Bool"),
}


def _literal(attr_type: str, value: Any) -> str:
    if attr_type == "float":
        return repr(float(value))
    if attr_type == "int":
        return str(int(value))
    return "true" if value else "false"


def _common_values(spec: OpSpec) -> dict[str, str]:
    known = dtypes()
    comp = computations()[spec.compute]
    ins, outs = spec.inputs, spec.outputs
    out = outs[0]
    attrs = spec.attrs

    opdef = [_opdef_tensor("Input", t) for t in ins] + [_opdef_tensor("Output", out)]
    for attr in attrs:
        _, _, setter = _ATTR_CPP[attr.type]
        opdef.append(
            f'{_INDENT}this->Attr("{attr.name}").AttrType(OPTIONAL).{setter}({_literal(attr.type, attr.default)});'
        )
    attr_tiling = []
    for index, attr in enumerate(attrs):
        runtime_type, field_type, _ = _ATTR_CPP[attr.type]
        attr_tiling.append(
            f"    const {runtime_type}* {attr.name}Attr =\n"
            f"        context->GetAttrs()->GetAttrPointer<{runtime_type}>({index});\n"
            f"    tiling.set_{attr.name}({attr.name}Attr == nullptr ? {_literal(attr.type, attr.default)} : "
            f"static_cast<{field_type}>(*{attr.name}Attr));"
        )
    py_names = [t.name for t in ins] + [a.name for a in attrs]
    py_params = ", ".join([t.name for t in ins] + [f"{a.name}={a.default!r}" for a in attrs])
    expr_values = {f"x{i}": t.name for i, t in enumerate(ins)}
    expr_values.update({a.name: a.name for a in attrs})
    torch_expr = Template(comp["torch"]).substitute(expr_values)
    cpp_params = ", ".join(
        [f"const at::Tensor& {t.name}" for t in ins] + [f"{_schema_cpp(a.type)} {a.name}" for a in attrs]
    )
    schema_args = ", ".join(
        [f"Tensor {t.name}" for t in ins] + [f"{_schema_type(a.type)} {a.name}={_schema_default(a)}" for a in attrs]
    )
    return {
        "op_name": spec.snake,
        "op_type": spec.op_type,
        "pattern": spec.pattern,
        "compute": spec.compute,
        "namespace": spec.namespace,
        "guard": f"{spec.snake.upper()}_TILING_H",
        "tiling_struct": f"{spec.op_type}TilingData",
        "ext_name": f"{spec.snake}_torch",
        "kernel_params": ", ".join(f"GM_ADDR {t.name}" for t in (*ins, out)) + ", GM_ADDR workspace, GM_ADDR tiling",
        "opdef_body": "\n".join(opdef),
        "soc_configs": "\n".join(f'{_INDENT}this->AICore().AddConfig("{soc}");' for soc in spec.soc_versions),
        "attr_tiling": "\n".join(attr_tiling),
        "buffer_num": str(spec.buffer_num),
        "block_dim": str(spec.block_dim),
        "tile_length": str(spec.tile_length),
        "max_row_length": str(spec.max_row_length),
        "tile_m": str(spec.tile_m),
        "tile_n": str(spec.tile_n),
        "tile_k": str(spec.tile_k),
        "ub_bytes": str(spec.ub_bytes),
        "align_elements": str(ALIGN_BYTES // min(known[d]["bytes"] for t in (*ins, out) for d in t.dtypes)),
        "first_soc": spec.soc_versions[0] if spec.soc_versions else "ascend910b",
        "in0": ins[0].name,
        "In0": _cap(ins[0].name),
        "in1": ins[1].name if len(ins) > 1 else "",
        "out": out.name,
        "Out": _cap(out.name),
        "t_macro": ins[0].name.upper(),
        "In0_macro": ins[0].name.upper(),
        "In1_macro": ins[1].name.upper() if len(ins) > 1 else "",
        "Out_macro": out.name.upper(),
        "attr_params": "".join(f", {_ATTR_CPP[a.type][1]} {a.name}" for a in attrs),
        "attr_args": "".join(f", tilingData.{a.name}" for a in attrs),
        "attr_assign": "\n".join(f"        this->{a.name} = {a.name};" for a in attrs),
        "attr_members": "\n".join(f"    {_ATTR_CPP[a.type][1]} {a.name} = 0;" for a in attrs),
        "py_params": py_params,
        "py_args": ", ".join(py_names),
        "first_input": ins[0].name,
        "torch_expr": torch_expr,
        "torch_expr_doc": torch_expr,
        "cpp_params": cpp_params,
        "cpp_args": ", ".join(py_names),
        "exec_args": ", ".join(py_names),
        "schema": f"{spec.snake}({schema_args}) -> Tensor",
        "attr_defaults": "{" + ", ".join(f"{a.name!r}: {a.default!r}" for a in attrs) + "}",
        "torch_dtypes": "[" + ", ".join(f"torch.{known[d]['torch']}" for d in ins[0].dtypes) + "]",
    }


def _schema_type(attr_type: str) -> str:
    return {"float": "float", "int": "int", "bool": "bool"}[attr_type]


def _schema_cpp(attr_type: str) -> str:
    return {"float": "double", "int": "int64_t", "bool": "bool"}[attr_type]


def _schema_default(attr: Any) -> str:
    if attr.type == "float":
        return repr(float(attr.default))
    if attr.type == "int":
        return str(int(attr.default))
    return "True" if attr.default else "False"


def _tiling_fields(spec: OpSpec) -> tuple[str, str]:
    """(fields, extra includes) of the tiling data definition."""
    fields: list[tuple[str, str]]
    includes = ""
    if spec.pattern == "elementwise":
        fields = [("uint32_t", "totalLength"), ("uint32_t", "blockLength"), ("uint32_t", "tileLength")]
    elif spec.pattern == "reduction":
        fields = [("uint32_t", "rows"), ("uint32_t", "cols"), ("uint32_t", "rowsPerCore"), ("uint32_t", "tileRows")]
    else:
        fields = []
        includes = '#include "tiling/tiling_api.h"\n'
    lines = [f"TILING_DATA_FIELD_DEF({ctype}, {name});" for ctype, name in fields]
    if spec.pattern == "matmul":
        lines.append("TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData);")
    lines += [f"TILING_DATA_FIELD_DEF({_ATTR_CPP[a.type][1]}, {a.name});" for a in spec.attrs]
    return "\n".join(lines), includes


def _elementwise_values(spec: OpSpec, values: dict[str, str]) -> dict[str, str]:
    comp = computations()[spec.compute]
    ins, out = spec.inputs, spec.outputs[0]
    gm_init, queue_init, copy_in, deque, free, members = [], [], [], [], [], []
    for t in ins:
        cap = _cap(t.name)
        gm_init.append(
            f"        {t.name}Gm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>({t.name}) + offset, this->length);"
        )
        queue_init.append(f"        pipe.InitBuffer(inQueue{cap}, BUFFER_NUM, this->tileLength * sizeof(T));")
        copy_in.append(
            f"        AscendC::LocalTensor<T> {t.name}Local = inQueue{cap}.AllocTensor<T>();\n"
            f"        LoadTile({t.name}Local, {t.name}Gm[progress * this->tileLength], count);\n"
            f"        inQueue{cap}.EnQue({t.name}Local);"
        )
        deque.append(f"        AscendC::LocalTensor<T> {t.name}Local = inQueue{cap}.DeQue<T>();")
        free.append(f"        inQueue{cap}.FreeTensor({t.name}Local);")
        members.append(f"    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inQueue{cap};")
    gm_init.append(
        f"        {out.name}Gm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>({out.name}) + offset, this->length);"
    )
    queue_init.append(f"        pipe.InitBuffer(outQueue{_cap(out.name)}, BUFFER_NUM, this->tileLength * sizeof(T));")
    members.append(f"    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outQueue{_cap(out.name)};")
    members += [f"    AscendC::GlobalTensor<T> {t.name}Gm;" for t in (*ins, out)]
    call_values = {"dst": f"{out.name}Local", "count": "count", "T": "T"}
    call_values.update({f"in{i}": f"{t.name}Local" for i, t in enumerate(ins)})
    same_size = [
        f"    if (static_cast<uint64_t>(context->GetInputShape({i})->GetStorageShape().GetShapeSize()) != total) {{\n"
        f"        return ge::GRAPH_FAILED;  // no broadcasting: inputs must have the same number of elements\n"
        f"    }}"
        for i in range(1, len(ins))
    ]
    return {
        **values,
        "init_params": "".join(f"GM_ADDR {t.name}, " for t in (*ins, out)),
        "init_args": "".join(f"{t.name}, " for t in (*ins, out)),
        "gm_init": "\n".join(gm_init),
        "queue_init": "\n".join(queue_init),
        "copy_in": "\n".join(copy_in),
        "compute_deque": "\n".join(deque),
        "compute_free": "\n".join(free),
        "compute_call": Template(comp["call"]).substitute(call_values),
        "members": "\n".join(members),
        "same_size_checks": "\n".join(same_size),
    }


def _reduction_values(spec: OpSpec, values: dict[str, str]) -> dict[str, str]:
    comp = computations()[spec.compute]
    call = Template(comp["call"]).substitute(
        {"dst": "resultLocal", "in0": f"{spec.inputs[0].name}Local", "work": "workLocal", "count": "this->cols",
         "T": "T"}
    )
    return {**values, "compute_call": call}


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
            {"name": a.name, "param_type": "optional", "type": a.type, "default_value": _literal(a.type, a.default)}
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
    values = _common_values(spec)
    fields, includes = _tiling_fields(spec)
    values["tiling_fields"] = fields
    values["tiling_includes"] = includes
    if spec.pattern == "elementwise":
        values = _elementwise_values(spec, values)
    elif spec.pattern == "reduction":
        values = _reduction_values(spec, values)
    values.update(_test_values(spec))
    values["result_alloc"] = _result_alloc(spec)
    values["tiling_doc"] = _tiling_doc(spec)
    values["limits"] = _limits(spec)
    known = dtypes()
    rows = [
        f"| `{t.name}` | {role} | {', '.join(t.dtypes)} | {t.shape} |"
        for role, group in (("input", spec.inputs), ("output", spec.outputs))
        for t in group
    ]
    del known
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
