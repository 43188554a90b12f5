"""The values the project templates are filled with: C++ fragments (op definition, tiling fields, kernel queues),
the binding's Python/C++ signatures and schema, derived from an :class:`~ascend_compat.kernel_helper.spec.OpSpec`.

Pure functions of the spec (no dates, no paths), so rendering stays deterministic.
"""

from __future__ import annotations

from string import Template
from typing import Any

from ascend_compat.kernel_helper.spec import ALIGN_BYTES, AttrSpec, OpSpec, TensorSpec, computations, dtypes

__all__ = ["common_values", "elementwise_values", "literal", "reduction_values", "tiling_fields"]

_INDENT = " " * 8


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


def literal(attr_type: str, value: Any) -> str:
    if attr_type == "float":
        return repr(float(value))
    if attr_type == "int":
        return str(int(value))
    return "true" if value else "false"


def _attr_code(spec: OpSpec) -> tuple[list[str], list[str]]:
    """(OpDef attribute lines, tiling code that reads each attribute at run time, its default when absent)."""
    opdef, tiling = [], []
    for index, attr in enumerate(spec.attrs):
        runtime_type, field_type, setter = _ATTR_CPP[attr.type]
        default = literal(attr.type, attr.default)
        opdef.append(f'{_INDENT}this->Attr("{attr.name}").AttrType(OPTIONAL).{setter}({default});')
        tiling.append(
            f"    const {runtime_type}* {attr.name}Attr =\n"
            f"        context->GetAttrs()->GetAttrPointer<{runtime_type}>({index});\n"
            f"    tiling.set_{attr.name}({attr.name}Attr == nullptr ? {default} : "
            f"static_cast<{field_type}>(*{attr.name}Attr));"
        )
    return opdef, tiling


def _binding_values(spec: OpSpec) -> dict[str, str]:
    """The torch binding's Python and C++ signatures, its schema and the reference expression."""
    ins, attrs = spec.inputs, spec.attrs
    py_names = [t.name for t in ins] + [a.name for a in attrs]
    expr_values = {f"x{i}": t.name for i, t in enumerate(ins)}
    expr_values.update({a.name: a.name for a in attrs})
    torch_expr = Template(computations()[spec.compute]["torch"]).substitute(expr_values)
    cpp_params = ", ".join(
        [f"const at::Tensor& {t.name}" for t in ins] + [f"{_schema_cpp(a.type)} {a.name}" for a in attrs]
    )
    schema_args = ", ".join(
        [f"Tensor {t.name}" for t in ins] + [f"{_schema_type(a.type)} {a.name}={_schema_default(a)}" for a in attrs]
    )
    return {
        "py_params": ", ".join([t.name for t in ins] + [f"{a.name}={a.default!r}" for a in attrs]),
        "py_args": ", ".join(py_names),
        "first_input": ins[0].name,
        "torch_expr": torch_expr,
        "torch_expr_doc": torch_expr,
        "cpp_params": cpp_params,
        "cpp_args": ", ".join(py_names),
        "exec_args": ", ".join(py_names),
        "schema": f"{spec.snake}({schema_args}) -> Tensor",
        "attr_defaults": "{" + ", ".join(f"{a.name!r}: {a.default!r}" for a in attrs) + "}",
        "torch_dtypes": "[" + ", ".join(f"torch.{dtypes()[d]['torch']}" for d in ins[0].dtypes) + "]",
    }


def _tensor_values(spec: OpSpec) -> dict[str, str]:
    """Tensor and attribute names as the kernel templates spell them (members, macros, parameters)."""
    ins, out, attrs = spec.inputs, spec.outputs[0], spec.attrs
    return {
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
    }


def common_values(spec: OpSpec) -> dict[str, str]:
    """The values every pattern's templates use."""
    known = dtypes()
    ins, out = spec.inputs, spec.outputs[0]
    attr_opdef, attr_tiling = _attr_code(spec)
    opdef = [_opdef_tensor("Input", t) for t in ins] + [_opdef_tensor("Output", out)] + attr_opdef
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
        **_tensor_values(spec),
        **_binding_values(spec),
    }


def _schema_type(attr_type: str) -> str:
    return {"float": "float", "int": "int", "bool": "bool"}[attr_type]


def _schema_cpp(attr_type: str) -> str:
    return {"float": "double", "int": "int64_t", "bool": "bool"}[attr_type]


def _schema_default(attr: AttrSpec) -> str:
    if attr.type == "float":
        return repr(float(attr.default))
    if attr.type == "int":
        return str(int(attr.default))
    return "True" if attr.default else "False"


def tiling_fields(spec: OpSpec) -> tuple[str, str]:
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


def elementwise_values(spec: OpSpec, values: dict[str, str]) -> dict[str, str]:
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


def reduction_values(spec: OpSpec, values: dict[str, str]) -> dict[str, str]:
    comp = computations()[spec.compute]
    call = Template(comp["call"]).substitute(
        {"dst": "resultLocal", "in0": f"{spec.inputs[0].name}Local", "work": "workLocal", "count": "this->cols",
         "T": "T"}
    )
    return {**values, "compute_call": call}
