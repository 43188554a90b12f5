"""The tolerance data itself: complete, sourced, consistent with the op suite."""

from __future__ import annotations

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
