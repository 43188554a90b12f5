"""``data/quantization.json`` and how ``ascend_compat.ecosystem.quantization`` recognises methods in configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from ascend_compat.ecosystem import quantization, vllm
from ascend_compat.ecosystem.quantization import ct_scheme, get, lookup, lookup_all

RECOGNISE_KEYS = {"quant_method", "flag", "scheme", "file", "quant_types", "file_suffix", "none"}


def _ct(weights: dict[str, Any], acts: Optional[dict[str, Any]], fmt: str = "int-quantized") -> dict[str, Any]:
    group: dict[str, Any] = {"targets": ["Linear"], "weights": weights}
    if acts is not None:
        group["input_activations"] = acts
    return {"quant_method": "compressed-tensors", "format": fmt, "config_groups": {"group_0": group}}


INT8_CHANNEL = {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True, "dynamic": False}
INT8_TENSOR = {"num_bits": 8, "type": "int", "strategy": "tensor", "symmetric": True, "dynamic": False}
INT8_TOKEN = {"num_bits": 8, "type": "int", "strategy": "token", "symmetric": True, "dynamic": True}
FP8_CHANNEL = {**INT8_CHANNEL, "type": "float"}
FP8_TOKEN = {**INT8_TOKEN, "type": "float"}
INT4_GROUP = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}


# -- the data ---------------------------------------------------------------------------------------------------------

def test_ids_are_unique_and_every_entry_is_sourced_and_valid() -> None:
    methods = quantization.load_methods()
    ids = [m.id for m in methods]
    assert len(ids) == len(set(ids))
    for m in methods:
        assert m.source.strip() and m.name.strip(), m.id
        assert m.ascend in quantization.STATUSES, m.id
        assert set(m.recognise) <= RECOGNISE_KEYS and m.recognise, m.id
        for s in m.vllm_ascend:
            assert quantization.in_spec("0.13.0", s.versions) in (True, False)
            assert any(quantization.in_spec(r["vllm_ascend"], s.versions) for r in vllm.releases()), (m.id, s)
        if not m.vllm_ascend or m.ascend != "yes":
            assert m.alternative.strip() or m.id == "none", m.id  # what to do where it does not run
        if m.ascend == "no":
            assert not m.vllm_ascend, m.id


def test_the_methods_the_issue_names_are_covered() -> None:
    ids = {m.id for m in quantization.load_methods()}
    assert {"gptq", "awq", "bitsandbytes-4bit", "bitsandbytes-8bit", "fp8", "compressed-tensors", "gguf",
            "ascend/w8a8", "ascend/w8a8_dynamic", "ascend/w4a8_dynamic", "none"} <= ids


def test_recognition_keys_do_not_overlap() -> None:
    methods = quantization.load_methods()
    types = [t for m in methods for t in m.recognise.get("quant_types", ())]
    assert len(types) == len(set(types))
    schemes = [m.recognise["scheme"] for m in methods if "scheme" in m.recognise]
    assert len(schemes) == len(set(schemes)) and "other" in schemes
    plain = [(q, m.recognise.get("flag")) for m in methods if "scheme" not in m.recognise
             for q in m.recognise.get("quant_method", ())]
    assert len(plain) == len(set(plain))


def test_platform_methods_cover_every_release_once() -> None:
    raw = json.loads((Path(quantization.__file__).parent / "data" / "quantization.json").read_text("utf-8"))
    for entry in raw["platform_methods"]:
        assert entry["source"].strip() and "ascend" in entry["methods"]
    for r in vllm.releases():
        hits = [e for e in raw["platform_methods"] if quantization.in_spec(r["vllm_ascend"], e["versions"])]
        assert len(hits) == 1, r["vllm_ascend"]
    assert quantization.platform_methods("0.9.1") == ("ascend",)
    assert "compressed-tensors" in quantization.platform_methods("0.12.0rc1")
    assert "fp8" in quantization.platform_methods("0.21.0rc1")
    assert raw["ascend_flag"]["source"].strip()
    assert quantization.ascend_flag("0.9.1") == "--quantization ascend"
    assert quantization.ascend_flag("0.16.0rc1") == "--quantization ascend"  # auto-detection was reverted there
    assert quantization.ascend_flag("0.17.0rc1") == ""


def test_support_ranges() -> None:
    w4a8 = get("ascend/w4a8_dynamic")
    assert w4a8.support_for("0.9.1") is not None
    assert w4a8.support_for("0.9.2rc1") is None  # that branch predates the W4A8 scheme
    assert w4a8.support_for("0.9.1rc1") is None
    old = get("ascend/w8a8").support_for("0.7.3")
    assert old is not None and old.requires == "mindie-turbo"
    assert get("ascend/w8a8").support_for("0.7.1rc1") is None
    assert get("gptq").support_for("0.23.0") is None
    assert get("fp8").support_for("0.23.0") is not None and get("fp8").support_for("0.18.0") is None


# -- lookup -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"quant_method": "gptq", "bits": 4}, "gptq"),
        ({"quant_method": "GPTQ", "bits": 4}, "gptq"),
        ({"quant_method": "gptq_marlin"}, "gptq"),
        ({"quant_method": "awq", "version": "gemm"}, "awq"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes-4bit"),
        ({"quant_method": "bitsandbytes", "_load_in_8bit": True, "load_in_8bit": True}, "bitsandbytes-8bit"),
        ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "bitsandbytes-4bit"),  # before quant_method existed
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8"),
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "gguf"}, "gguf"),
        ({"quant_method": "compressed-tensors"}, "compressed-tensors"),  # no config_groups: scheme unknown
        (_ct(INT8_CHANNEL, INT8_TENSOR), "compressed-tensors/w8a8"),
        (_ct(INT8_CHANNEL, INT8_TOKEN), "compressed-tensors/w8a8_dynamic"),
        (_ct(FP8_CHANNEL, FP8_TOKEN, "float-quantized"), "compressed-tensors/w8a8fp8_dynamic"),
        (_ct(FP8_CHANNEL, {**FP8_TOKEN, "strategy": "tensor", "dynamic": False}, "float-quantized"),
         "compressed-tensors/unsupported"),
        (_ct({**INT4_GROUP}, INT8_TOKEN), "compressed-tensors/w4a8_dynamic"),
        (_ct(INT4_GROUP, None, "pack-quantized"), "compressed-tensors/w4a16"),
        (_ct(INT8_CHANNEL, INT8_TOKEN, "pack-quantized"), "compressed-tensors/unsupported"),  # no activation format
        ({}, "none"),
        (None, "none"),
    ],
)
def test_lookup(config: Optional[dict[str, Any]], expected: str) -> None:
    method = lookup(config)
    assert method is not None and method.id == expected


def test_lookup_of_a_whole_config_and_of_unknown_methods() -> None:
    assert lookup({"architectures": ["X"], "quantization_config": {"quant_method": "awq"}}).id == "awq"
    assert lookup({"architectures": ["X"], "compression_config": _ct(INT8_CHANNEL, INT8_TOKEN)}).id == (
        "compressed-tensors/w8a8_dynamic")
    assert lookup({"architectures": ["X"], "model_type": "llama"}).id == "none"
    assert lookup({"quant_method": "hqq"}) is None
    assert lookup({"quant_method": "bitsandbytes"}) is None  # neither 4- nor 8-bit


def test_compressed_tensors_groups_with_several_schemes() -> None:
    config = _ct(INT8_CHANNEL, INT8_TOKEN)
    experts = {"targets": ["re:.*experts.*"], "weights": INT4_GROUP, "format": "pack-quantized"}
    config["config_groups"]["group_1"] = experts
    assert [m.id for m in lookup_all(config)] == ["compressed-tensors/w8a8_dynamic", "compressed-tensors/w4a16"]


def test_ct_scheme_defaults() -> None:
    # strategy follows group_size when absent (compressed-tensors' QuantizationArgs): -1 is per channel.
    assert ct_scheme({"num_bits": 8, "group_size": -1}, {"strategy": "token", "dynamic": True}, "int-quantized") == (
        "W8A8_DYNAMIC")
    assert ct_scheme({"num_bits": 4, "group_size": 64}, None, "pack-quantized") == "W4A16"
    assert ct_scheme(None, None, "int-quantized") == "other"


# -- detect -----------------------------------------------------------------------------------------------------------

def test_detect_reads_the_msmodelslim_description(tmp_path: Path) -> None:
    (tmp_path / "quant_model_description.json").write_text(json.dumps({
        "model_quant_type": "W4A8_DYNAMIC", "model.layers.0.mlp.experts.0.up_proj.weight": "W4A8_DYNAMIC",
        "model.layers.0.self_attn.q_proj.weight": "W8A8_DYNAMIC", "lm_head.weight": "FLOAT", "kv_cache_type": "C8",
        "model.layers.1.mlp.down_proj.weight": "W9A9_NEW",
    }), "utf-8")  # fmt: skip
    found = quantization.detect({"architectures": ["X"]}, str(tmp_path))
    assert [f.method.id for f in found] == ["ascend/w4a8_dynamic", "ascend/w8a8_dynamic", "ascend"]
    assert found[-1].types == ("W9A9_NEW",)


def test_detect_without_quantization(tmp_path: Path) -> None:
    (found,) = quantization.detect({"architectures": ["X"]}, str(tmp_path))
    assert found.method is not None and found.method.id == "none"


def test_detect_unknown_method_keeps_its_name(tmp_path: Path) -> None:
    (found,) = quantization.detect({"quantization_config": {"quant_method": "eetq"}}, str(tmp_path))
    assert found.method is None and found.quant_method == "eetq"


def test_detect_names_an_invalid_description_file(tmp_path: Path) -> None:
    (tmp_path / "quant_model_description.json").write_text("{nope", "utf-8")
    with pytest.raises(ValueError, match=r"quant_model_description\.json: invalid JSON"):
        quantization.detect({}, str(tmp_path))
