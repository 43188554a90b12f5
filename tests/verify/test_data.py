"""The tolerance data itself: complete, sourced, consistent with the op suite."""

from __future__ import annotations

import pytest

from ascend_compat.verify import tolerances
from ascend_compat.verify.tolerances import DTYPES


def test_every_dtype_has_sourced_reasoned_thresholds_at_both_levels():
    data = tolerances.load()
    assert data["schema_version"] == 1
    for level in ("op_level", "model_level"):
        table = data[level]["dtypes"]
        assert set(table) == set(DTYPES)
        for dtype, entry in table.items():
            assert entry["source"].strip() and entry["reasoning"].strip(), (level, dtype)
            assert 0 < entry["rtol"] < 1 and 0 < entry["atol"] < 1, (level, dtype)


def test_thresholds_grow_as_precision_shrinks():
    for level in ("op_level", "model_level"):
        t = tolerances.load()[level]["dtypes"]
        assert t["float32"]["rtol"] < t["float16"]["rtol"] < t["bfloat16"]["rtol"]
        assert t["float32"]["atol"] <= t["float16"]["atol"] <= t["bfloat16"]["atol"]


def test_op_thresholds_exceed_the_output_rounding_of_their_dtype():
    # rtol below the unit roundoff would fail a correctly rounded result.
    for dtype, entry in tolerances.load()["op_level"]["dtypes"].items():
        assert entry["rtol"] > entry["unit_roundoff"], dtype


def test_overrides_name_known_ops_dtypes_devices_and_do_not_overlap(sim):
    from ascend_compat.verify.ops import build_suite

    ops = {c.name for c in build_suite()}
    seen = set()
    for entry in tolerances.load()["op_level"]["overrides"]:
        assert entry["source"].strip() and entry["reasoning"].strip()
        assert set(entry["ops"]) <= ops, entry["ops"]
        assert set(entry["dtypes"]) <= set(DTYPES)
        assert set(entry["devices"]) <= {"npu", "cuda", "cpu"}
        for op in entry["ops"]:
            for dtype in entry["dtypes"]:
                for device in entry["devices"] or ["*"]:
                    assert (op, dtype, device) not in seen, (op, dtype, device)
                    seen.add((op, dtype, device))
                    assert (op, dtype, "*") not in seen or device == "*"


def test_lookup_prefers_overrides_and_user_values():
    assert tolerances.op_tolerance("embedding", "float16", "npu").atol == 0.0
    hf32 = tolerances.op_tolerance("conv2d", "float32", "npu")
    assert hf32.rtol > tolerances.op_tolerance("conv2d", "float32", "cpu").rtol
    assert tolerances.op_tolerance("conv2d", "float16", "npu").basis == "float16"
    user = tolerances.model_tolerance("float16", rtol=0.5)
    assert (user.rtol, user.basis) == (0.5, "user")
    assert user.atol == tolerances.load()["model_level"]["dtypes"]["float16"]["atol"]


def _check_shape(value, hint, where):
    """``value`` has the shape of the type ``hint`` (TypedDicts: exactly their keys; dict/list; str/int/float)."""
    import typing

    if typing.is_typeddict(hint):
        assert isinstance(value, dict), where
        hints = typing.get_type_hints(hint)
        assert set(value) == set(hints), (where, sorted(set(value) ^ set(hints)))
        for key, sub in hints.items():
            _check_shape(value[key], sub, f"{where}.{key}")
        return
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict:
        assert isinstance(value, dict) and value, where
        for key, item in value.items():
            _check_shape(item, args[1], f"{where}.{key}")
    elif origin is list:
        assert isinstance(value, list), where
        for i, item in enumerate(value):
            _check_shape(item, args[0], f"{where}[{i}]")
    elif hint is float:
        assert isinstance(value, (int, float)) and not isinstance(value, bool), where
    else:
        assert type(value) is hint, (where, type(value).__name__, hint)


def test_the_file_has_the_shape_its_types_declare():
    # load() hands out the parsed file as a TolerancesFile: the declared keys and types must be what is there.
    _check_shape(tolerances.load(), tolerances.TolerancesFile, "tolerances.json")


def test_the_shape_check_catches_a_missing_or_mistyped_field():
    entry = {"rtol": 0.1, "atol": 0.1, "source": "s", "reasoning": "r"}
    _check_shape(entry, tolerances.Thresholds, "ok")
    for bad in ({k: v for k, v in entry.items() if k != "source"}, {**entry, "rtol": "0.1"}, {**entry, "extra": 1}):
        with pytest.raises(AssertionError):
            _check_shape(bad, tolerances.Thresholds, "bad")
