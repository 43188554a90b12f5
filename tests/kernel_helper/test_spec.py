"""OpSpec validation: names, dtypes, 32-byte tile alignment, unified-buffer and L0 budgets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ascend_compat.kernel_helper import OpSpec, SpecError, TensorSpec, default_spec
from ascend_compat.kernel_helper.spec import op_type_name, snake_name


@pytest.mark.parametrize("pattern", ["elementwise", "reduction", "matmul"])
def test_default_specs_are_valid(pattern):
    spec = default_spec("my_op", pattern)
    assert spec.validate() is spec and spec.problems() == []


@pytest.mark.parametrize("name", ["../evil", "a/b", "1abc", "a-b", "", "class", "a b", "x" * 65, "a__b", "import"])
def test_bad_names_are_refused(name):
    with pytest.raises(SpecError, match="name"):
        default_spec(name).validate()


def test_names_convert_both_ways():
    assert snake_name("AddCustom") == "add_custom" and op_type_name("add_custom") == "AddCustom"
    assert default_spec("AddCustom").op_type == "AddCustom" and default_spec("add_custom").op_type == "AddCustom"


def test_misaligned_tile_gets_a_clear_error():
    with pytest.raises(SpecError) as info:
        replace(default_spec("my_op", dtype="float16"), tile_length=100).validate()
    message = str(info.value)
    assert "200 bytes" in message and "multiple of 32" in message and "multiple of 16 elements" in message
    # float32 needs multiples of 8 elements; 8 float32 = 32 bytes is fine
    assert replace(default_spec("my_op", dtype="float32"), tile_length=8).problems() == []
    # with two dtypes, the narrower one decides
    assert replace(default_spec("my_op", dtype="float16,float32"), tile_length=8).problems()


def test_unified_buffer_budget():
    spec = replace(default_spec("my_op", dtype="float32"), tile_length=16384)  # 3 queues x 2 x 64 KiB
    assert any("unified buffer" in p for p in spec.problems())
    assert replace(spec, buffer_num=1, ub_bytes=256 * 1024).problems() == []
    red = replace(default_spec("row_op", "reduction"), max_row_length=65536)
    assert any("max_row_length" in p for p in red.problems())


def test_matmul_tiles_follow_the_cube():
    spec = default_spec("mm", "matmul")
    assert any("multiple of 16" in p for p in replace(spec, tile_k=40).problems())
    assert any("L0A" in p for p in replace(spec, tile_m=512, tile_k=128).problems())
    assert any("L0C" in p for p in replace(spec, tile_m=256, tile_n=256).problems())


def test_dtype_and_compute_problems_are_all_reported():
    spec = default_spec("my_op", compute="div", dtype="int32")
    assert any("no int32 form" in p for p in spec.problems())
    assert any("unknown dtype" in p for p in default_spec("my_op", dtype="float8").problems())
    assert any("unknown for pattern" in p for p in default_spec("my_op", compute="softmax").problems())
    wrong = replace(default_spec("my_op", "reduction"), compute="add")
    assert any("belongs to the elementwise pattern" in p for p in wrong.problems())


def test_tensor_names_must_be_distinct_and_not_reserved():
    spec = default_spec("my_op")
    dup = replace(spec, inputs=(TensorSpec("x", ("float16",)), TensorSpec("X", ("float16",))))
    assert any("used twice" in p for p in dup.problems())
    reserved = replace(spec, inputs=(TensorSpec("tiling", ("float16",)), spec.inputs[1]))
    assert any("generated code" in p for p in reserved.problems())
    mixed = replace(spec, outputs=(TensorSpec("y", ("float32",)),))
    assert any("one dtype for all tensors" in p for p in mixed.problems())


def test_attribute_required_by_compute():
    spec = default_spec("scaler", compute="scale")
    assert [a.name for a in spec.attrs] == ["alpha"] and spec.problems() == []
    assert any("needs the attribute" in p for p in replace(spec, attrs=()).problems())


def test_unknown_soc_and_buffer_num():
    spec = default_spec("my_op")
    assert any("unknown SoC" in p for p in replace(spec, soc_versions=("ascend999",)).problems())
    assert any("buffer_num" in p for p in replace(spec, buffer_num=3).problems())


def test_dict_round_trip_and_unknown_fields():
    spec = default_spec("scaler", compute="scale", dtype=["float16", "float32"])
    assert OpSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(SpecError, match="unknown spec field"):
        OpSpec.from_dict({**spec.to_dict(), "tile_size": 4})
    with pytest.raises(SpecError, match="needs a 'name'"):
        OpSpec.from_dict({"pattern": "elementwise"})
