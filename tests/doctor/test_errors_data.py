"""The CANN error table itself: structure, sources, completeness against the reference, own wording."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from ascend_compat.doctor import errors
from tests.conftest import load_tool

ROOT = Path(__file__).resolve().parents[2]
# The shared reference data beside the checkout (../shared/reference), wherever the repository is.
REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "cann_error_codes.json"
needs_reference = pytest.mark.skipif(not REFERENCE.is_file(), reason="the reference data is not on this machine")

DATA_TEXT = resources.files("ascend_compat.doctor").joinpath("data/cann_errors.json").read_text(encoding="utf-8")
CODES: dict[str, dict[str, Any]] = json.loads(DATA_TEXT)["codes"]

# Codes users hit most (the task's list, where the reference has them): hand-written text.
HOT = ["507035", "507899", "107002", "107001", "100000", "207018", "507033", "507015", "507053", "EZ9999", "EE9999",
       "EI0006", "EI0002", "EL0004", "EE1001", "EZ1001", "161001", "161002", "361001", "561003", "561103", "ERR00100",
       "ERR01002", "ERR02005", "ERR02200", "561000", "507034", "507014", "207001", "200000", "107022", "7", "9"]


def _reference() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def test_codes_are_unique_and_keyed_by_their_code() -> None:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), f"duplicate keys: {sorted(k for k in keys if keys.count(k) > 1)}"
        return dict(pairs)

    json.loads(DATA_TEXT, object_pairs_hook=no_duplicates)
    assert len(CODES) > 700
    for key, entry in CODES.items():
        assert entry["code"] == key
        assert errors.normalize(key) == key


def test_every_entry_has_a_valid_family_component_text_and_source() -> None:
    families = errors.families()
    for code, entry in CODES.items():
        assert entry["family"] in families, code
        assert entry["component"], code
        for field in ("meaning", "cause", "fix", "source"):
            assert isinstance(entry[field], str) and len(entry[field]) > 3, (code, field)
        assert re.search(r"hicann/|Ascend/pytorch", entry["source"]), code
        assert isinstance(entry["curated"], bool)


def test_families_follow_the_documented_ranges_and_prefixes() -> None:
    for code, entry in CODES.items():
        fam = entry["family"]
        if code.startswith("ERR"):
            assert fam == "torch_npu"
        elif code[0] in "EW":
            assert fam == "cann_message"
        elif code == "0":
            assert fam == "success"
        elif int(code) < 100:
            assert fam == "hccl"
        elif fam != "aclnn":
            assert fam == {"1": "acl_parameter", "2": "acl_resource", "3": "acl_business", "5": "acl_internal"}[code[0]]
        else:
            assert code[:3] in ("161", "361", "561")


def test_hot_codes_have_hand_written_text() -> None:
    for code in HOT:
        assert CODES[code]["curated"], code


def test_torch_npu_reactions_are_attached() -> None:
    assert "OutOfMemoryError" in CODES["EL0004"]["torch_npu"]
    assert CODES["107022"]["torch_npu"] == "FORCE STOP"
    assert "UCE" in CODES["507053"]["torch_npu"]
    assert "driver and firmware" in CODES["207000"]["torch_npu"]


@needs_reference
def test_every_reference_code_is_present_with_its_facts() -> None:
    ref = _reference()
    for code, item in ref["acl_numeric"].items():
        assert item["name"] in CODES[code]["name"].split(" / "), code
        if item.get("meaning_zh"):
            assert CODES[code]["meaning_zh"] == item["meaning_zh"], code
    for code, item in ref["aclnn_status"].items():
        assert item["name"] in CODES[code]["name"].split(" / "), code
    for code, name in ref["hccl_result"].items():
        assert name in CODES[code]["name"].split(" / "), code
    for code, item in ref["cann_E_codes"].items():
        assert CODES[code]["family"] == "cann_message"
        if item["ErrMessage"].strip("%s ."):
            assert CODES[code]["template"] == item["ErrMessage"].strip(), code
    spec = ref["torch_npu_ERR"]
    for mod, mod_name in spec["modules"].items():
        for typ, typ_name in spec["types"].items():
            entry = CODES[f"ERR{mod}{typ}"]
            assert (entry["module"], entry["type"]) == (mod_name, typ_name)
    for key in ref["torch_npu_special"]:
        if key != "src":
            code = re.match(r"\s*(E[A-Z]\d{4}|\d+)", key).group(1)  # type: ignore[union-attr]
            assert CODES[code].get("torch_npu"), key
    # The inner error of every module prefix exists, sourced to the guide that documents the xx9999 suffix.
    for prefix in ref["E_prefix_modules"]:
        if re.fullmatch(r"[A-Z]{2}", prefix):
            assert f"{prefix}9999" in CODES


@needs_reference
def test_texts_are_our_own_wording() -> None:
    """No reference prose (English descriptions, E-code causes/solutions) is copied into meaning/cause/fix."""
    ref = _reference()
    theirs: set[str] = set()
    for item in ref["acl_numeric"].values():
        theirs.update(p.strip() for p in (item.get("description_en") or "").split("|"))
    for item in ref["cann_E_codes"].values():
        theirs.update(str(v).strip() for v in (item.get("suggestion") or {}).values())
    theirs = {t for t in theirs if len(t) > 25}
    ours = [e[f] for e in CODES.values() for f in ("meaning", "cause", "fix")]
    copied = [t for t in theirs if any(t in o for o in ours)]
    assert not copied, copied[:5]


@needs_reference
def test_committed_data_is_what_the_generator_builds() -> None:
    gen = load_tool("build_cann_errors")
    assert gen.render(gen.build(REFERENCE)) == DATA_TEXT
