"""``ascend-compat quant``: a model's quantization on Ascend, in a process of its own (forked from a warm
interpreter, tests/_forkserver.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ascend_compat.ecosystem import quantization
from tests._forkserver import cli


def _quant(*args: str) -> subprocess.CompletedProcess:
    return cli("quant", *args, timeout=60)


def _model(tmp_path: Path, config: dict, **files: dict) -> Path:
    tmp_path.joinpath("config.json").write_text(json.dumps(config))
    for name, content in files.items():
        tmp_path.joinpath(name).write_text(json.dumps(content))
    return tmp_path


def test_gptq_is_not_usable_and_names_the_alternative(tmp_path: Path) -> None:
    model = _model(tmp_path, {"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})
    proc = _quant(str(model))
    assert proc.returncode == 1, proc.stderr
    assert "NOT usable" in proc.stdout and "GPTQ" in proc.stdout
    assert "instead: " + quantization.get("gptq").alternative in proc.stdout


def test_unquantized_model_is_usable(tmp_path: Path) -> None:
    proc = _quant(str(_model(tmp_path, {"architectures": ["LlamaForCausalLM"]}) / "config.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "usable on Ascend" in proc.stdout and "not quantized" in proc.stdout


def test_msmodelslim_description_is_read_next_to_the_config(tmp_path: Path) -> None:
    model = _model(tmp_path, {"architectures": ["Qwen2ForCausalLM"]},
                   quant_model_description={"model_quant_type": "W8A8", "lm_head.weight": "FLOAT"})
    # The file name carries .json: the keyword above is only the stem.
    model.joinpath("quant_model_description").rename(model / "quant_model_description.json")
    report = json.loads(_quant(str(model), "--json").stdout)
    assert report["schema_version"] == quantization.SCHEMA_VERSION
    assert report["usable"] is True
    assert [m["id"] for m in report["methods"]] == ["ascend/w8a8"]
    assert report["methods"][0]["types"] == ["W8A8"]


@pytest.mark.parametrize("section", [{"quant_method": "bitsandbytes", "load_in_8bit": True},
                                     {"quant_method": "bitsandbytes", "load_in_4bit": True}])
def test_bitsandbytes_json_names_the_method_and_a_source(tmp_path: Path, section: dict) -> None:
    proc = _quant(str(_model(tmp_path, {"quantization_config": section})), "--json")
    report = json.loads(proc.stdout)
    (method,) = report["methods"]
    assert method["id"] == quantization.lookup(section).id
    assert method["source"]
    assert proc.returncode == (0 if report["usable"] else 1)


def test_unknown_method_is_reported_and_fails(tmp_path: Path) -> None:
    proc = _quant(str(_model(tmp_path, {"quantization_config": {"quant_method": "made-up-q"}})), "--json")
    assert proc.returncode == 1
    (method,) = json.loads(proc.stdout)["methods"]
    assert method["ascend"] == "unknown" and method["name"] == "made-up-q"


def test_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    assert _quant(str(tmp_path / "missing")).returncode == 2
    tmp_path.joinpath("config.json").write_text("{not json")
    proc = _quant(str(tmp_path))
    assert proc.returncode == 2 and "invalid JSON" in proc.stderr


@pytest.mark.parametrize("section, usable", [({}, False), (None, True)], ids=["empty", "null"])
def test_an_empty_quantization_config_is_not_called_usable(tmp_path: Path, section: object, usable: bool) -> None:
    # transformers refuses `"quantization_config": {}` ("has no `quant_method` attribute"); it was reported as
    # "usable on Ascend ... (no quantization_config, ...)". A null one is no quantization, for transformers too.
    proc = _quant(str(_model(tmp_path, {"model_type": "llama", "quantization_config": section})))
    assert proc.returncode == (0 if usable else 1), proc.stdout + proc.stderr
    if not usable:
        assert "an empty quantization_config (no quant_method: transformers refuses it)" in proc.stdout
        assert "fix: remove quantization_config from config.json" in proc.stdout
