"""``ascend-compat vllm``: a process per command (forked from a warm interpreter, tests/_forkserver.py) against
fake installed distributions (dist-info directories first on PYTHONPATH, read through importlib.metadata as vLLM
itself reads them), plus checks on ``data/vllm_ascend.json``."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from ascend_compat.ecosystem import pep440, quantization, vllm
from tests._forkserver import cli as forked_cli
from tests.conftest import _clean_env

PLUGIN = "[vllm.platform_plugins]\nascend = vllm_ascend:register\n"
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True}
BNB4 = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
BNB8 = {"quant_method": "bitsandbytes", "load_in_8bit": True}
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
INT8_DYNAMIC = {
    "quant_method": "compressed-tensors", "format": "int-quantized",
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "dynamic": False, "symmetric": True},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True, "symmetric": True},
    }},
}  # fmt: skip
NVFP4 = {
    "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
    "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
        "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                              "dynamic": "local"},
    }},
}  # fmt: skip


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _dist(site: Path, name: str, version: str, entry_points: str = "") -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", "utf-8")
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points, "utf-8")


def _site(root: Path, vllm_version: Optional[str] = None, ascend: Optional[str] = None, plugin: bool = True,
          torch: Optional[str] = None, torch_npu: Optional[str] = None,
          extra: tuple[tuple[str, str], ...] = ()) -> Path:
    """A directory of fake distributions; with ``ascend``, torch / torch_npu default to the versions its matrix
    row names (so a published pair reads as ready)."""
    site = root / "site"
    site.mkdir()
    row = vllm.release(ascend) if ascend else None
    if vllm_version:
        _dist(site, "vllm", vllm_version)
    if ascend:
        _dist(site, "vllm-ascend", ascend, PLUGIN if plugin else "")
    torch = torch or (row["torch"] if row else None)
    torch_npu = torch_npu or (row["torch_npu"] if row else None)
    for name, version in (("torch", torch), ("torch_npu", torch_npu)):
        if version:
            _dist(site, name, version)
    for name, version in extra:
        _dist(site, name, version)
    return site


def _run(site: Path, *args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess:
    full = _clean_env()
    full.pop("VLLM_PLUGINS", None)
    full.pop("NO_COLOR", None)
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), full.get("PYTHONPATH", "")) if p)
    full.update(env or {})
    return forked_cli("vllm", *args, env=full, timeout=120)


def _json(site: Path, *args: str, env: Optional[dict[str, str]] = None) -> tuple[int, dict[str, Any]]:
    proc = _run(site, "--json", *args, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any]:
    matches = [c for c in report["checks"] if c["id"] == check_id]
    assert len(matches) == 1, (check_id, report["checks"])
    return matches[0]


def _model(root: Path, quant: Optional[dict[str, Any]] = None, **extra: Any) -> Path:
    model = root / "model"
    model.mkdir()
    config: dict[str, Any] = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **extra}
    if quant is not None:
        config["quantization_config"] = quant
    (model / "config.json").write_text(json.dumps(config), "utf-8")
    return model


# -- installation states ----------------------------------------------------------------------------------------------

@pytest.mark.skipif(_installed("vllm") or _installed("vllm-ascend"), reason="vllm is really installed here")
def test_nothing_installed_is_not_ready_and_names_the_newest_published_pair(tmp_path: Path) -> None:
    site = _site(tmp_path)
    proc = _run(site)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    newest = vllm.newest_final()
    assert "not ready" in proc.stdout
    assert f"pip install vllm=={newest['vllm'][0]}" in proc.stdout
    assert f"pip install vllm-ascend=={newest['vllm_ascend']}" in proc.stdout
    code, report = _json(site)
    assert code == 1 and not report["ready"]
    assert _check(report, "vllm")["status"] == _check(report, "vllm-ascend")["status"] == "error"
    assert {_check(report, c)["status"] for c in ("pair", "platform-plugin", "attention")} == {"skip"}
    assert report["recommended"]["vllm_ascend"] == newest["vllm_ascend"]


def test_published_pair_is_ready(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.9.1", "0.9.1")
    proc = _run(site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("vLLM on Ascend: ready")
    assert "\x1b[" not in proc.stdout  # not a terminal: no colour
    code, report = _json(site)
    assert code == 0 and report["ready"]
    assert {c["id"]: c["status"] for c in report["checks"]} == {
        "vllm": "ok", "vllm-ascend": "ok", "torch": "ok", "torch_npu": "ok", "python": "ok", "pair": "ok",
        "platform-plugin": "ok", "attention": "ok",
    }  # fmt: skip
    assert report["published_pair"]["vllm_ascend"] == "0.9.1"
    assert report["versions"]["vllm"] == "0.9.1"
    assert "CANN 8.2.RC1" in _check(report, "pair")["note"]
    assert _check(report, "platform-plugin")["found"].endswith("ascend = vllm_ascend:register")


def test_source_build_of_vllm_with_a_local_label_pairs(tmp_path: Path) -> None:
    # vllm-ascend's install guide builds vLLM with VLLM_TARGET_DEVICE=empty, which versions it 0.9.1+empty.
    code, report = _json(_site(tmp_path, "0.9.1+empty", "0.9.1"))
    assert code == 0, report["checks"]
    assert _check(report, "pair")["status"] == "ok"


def test_unpublished_pair_is_an_error_with_both_ways_out(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.9.2", "0.9.1")
    code, report = _json(site)
    assert code == 1
    pair = _check(report, "pair")
    assert pair["status"] == "error"
    assert "published for vllm 0.9.1" in pair["found"] and "found vllm 0.9.2" in pair["found"]
    assert "pip install vllm==0.9.1" in pair["fix"] and "vllm-ascend==0.9.2rc1" in pair["fix"]
    assert _run(site).returncode == 1


def test_vllm_without_vllm_ascend(tmp_path: Path) -> None:
    code, report = _json(_site(tmp_path, "0.9.1", torch="2.5.1"))
    assert code == 1
    va = _check(report, "vllm-ascend")
    assert va["status"] == "error" and "pip install vllm-ascend==0.9.1" in va["fix"]
    assert _check(report, "vllm")["status"] == "ok"
    assert _check(report, "pair")["status"] == "skip"


def test_vllm_ascend_without_vllm(tmp_path: Path) -> None:
    code, report = _json(_site(tmp_path, None, "0.9.1"))
    assert code == 1
    assert "pip install vllm==0.9.1" in _check(report, "vllm")["fix"]


def test_missing_platform_entry_point_is_an_error(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.9.1", "0.9.1", plugin=False)
    code, report = _json(site)
    assert code == 1
    plugin = _check(report, "platform-plugin")
    assert plugin["status"] == "error" and "vllm.platform_plugins" in plugin["found"]
    assert "reinstall" in plugin["fix"]


def test_vllm_plugins_that_leaves_out_ascend_is_an_error(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.9.1", "0.9.1")
    code, report = _json(site, env={"VLLM_PLUGINS": "lora_filesystem_resolver"})
    assert code == 1
    assert "VLLM_PLUGINS" in _check(report, "platform-plugin")["found"]
    code, report = _json(site, env={"VLLM_PLUGINS": "ascend,lora_filesystem_resolver"})
    assert code == 0


def test_torch_npu_built_for_another_torch_is_an_error(tmp_path: Path) -> None:
    code, report = _json(_site(tmp_path, "0.9.1", "0.9.1", torch="2.13.0+cpu"))
    assert code == 1
    npu = _check(report, "torch_npu")
    assert npu["status"] == "error" and "needs torch 2.5.1" in npu["found"]
    assert _check(report, "torch")["status"] == "warn"


def test_torch_npu_missing_is_an_error_when_vllm_ascend_is_installed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _dist(site, "vllm", "0.9.1")
    _dist(site, "vllm-ascend", "0.9.1", PLUGIN)
    _dist(site, "torch", "2.5.1")
    code, report = _json(site)
    assert code == 1
    assert "pip install torch-npu==2.5.1.post1" in _check(report, "torch_npu")["fix"]


def test_other_torch_npu_build_of_the_same_torch_is_a_warning(tmp_path: Path) -> None:
    code, report = _json(_site(tmp_path, "0.9.1", "0.9.1", torch_npu="2.5.1"))
    assert code == 0
    assert _check(report, "torch_npu")["status"] == "warn"


def test_release_newer_than_the_table_is_a_warning_not_an_error(tmp_path: Path) -> None:
    code, report = _json(_site(tmp_path, "0.99.0", "0.99.0", torch="2.10.0", torch_npu="2.10.0"))
    assert code == 0, report["checks"]
    pair = _check(report, "pair")
    assert pair["status"] == "warn" and "not in ascend-compat's table" in pair["found"]
    assert "same version number" in pair["note"]
    attention = _check(report, "attention")  # the newest entry still answers
    assert attention["status"] == "ok" and "newer than ascend-compat's data" in attention["note"]


def test_development_build_of_vllm_ascend_is_a_warning(tmp_path: Path) -> None:
    code, report = _json(_site(tmp_path, "0.23.0", "0.23.1.dev12+g1234abc", torch="2.10.0", torch_npu="2.10.0"))
    assert code == 0
    assert "development build" in _check(report, "pair")["found"]


# -- attention --------------------------------------------------------------------------------------------------------

def test_attention_backend_by_release_and_model(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.13.0", "0.13.0")
    _, report = _json(site)
    assert "AscendAttentionBackend (vllm_ascend.attention.attention_v1" in _check(report, "attention")["found"]
    assert report["attention"]["selected"] == "default"
    mla = _model(tmp_path, architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3", kv_lora_rank=512)
    _, report = _json(site, "--model", str(mla))
    assert "AscendMLABackend" in _check(report, "attention")["found"]
    assert report["attention"]["selected"] == "mla"


def test_attention_on_the_v0_line_names_the_v1_switch(tmp_path: Path) -> None:
    _, report = _json(_site(tmp_path, "0.8.5.post1", "0.8.5rc1"))
    attention = _check(report, "attention")
    assert "vllm_ascend.attention.attention;" in attention["found"] and "V0" in attention["found"]
    assert "VLLM_USE_V1=1" in attention["note"]


# -- models -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("quant", "ascend", "method", "status"),
    [
        (GPTQ, "0.9.1", "gptq", "error"),
        (AWQ, "0.13.0", "awq", "error"),
        (BNB4, "0.13.0", "bitsandbytes-4bit", "error"),
        (BNB8, "0.13.0", "bitsandbytes-8bit", "error"),
        (FP8, "0.13.0", "fp8", "error"),
        (FP8, "0.23.0", "fp8", "warn"),  # served on Ascend 950 only
        (INT8_DYNAMIC, "0.9.1", "compressed-tensors/w8a8_dynamic", "error"),
        (INT8_DYNAMIC, "0.13.0", "compressed-tensors/w8a8_dynamic", "ok"),
        (NVFP4, "0.23.0", "compressed-tensors/unsupported", "error"),
        (None, "0.9.1", "none", "ok"),
    ],
)
def test_model_quantization(tmp_path: Path, quant: Optional[dict], ascend: str, method: str, status: str) -> None:
    row = vllm.release(ascend)
    site = _site(tmp_path, row["vllm"][0], ascend)
    model = _model(tmp_path, quant)
    code, report = _json(site, "--model", str(model))
    check = _check(report, "quantization")
    assert check["status"] == status, check
    assert code == (1 if status == "error" else 0)
    (found,) = report["model"]["quantization"]
    assert found["method"]["id"] == method
    assert found["method"]["source"]
    if status == "error":
        assert check["fix"]
    assert report["model"]["architectures"] == ["LlamaForCausalLM"]
    # The config file itself works as --model too.
    _, again = _json(site, "--model", str(model / "config.json"))
    assert _check(again, "quantization")["status"] == status


def test_unknown_quant_method_outside_the_platform_list_is_an_error(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.13.0", "0.13.0")
    code, report = _json(site, "--model", str(_model(tmp_path, {"quant_method": "hqq"})))
    assert code == 1
    check = _check(report, "quantization")
    assert "hqq" in check["found"] and "ascend, compressed-tensors" in check["fix"]


def test_msmodelslim_model_and_the_quantization_flag(tmp_path: Path) -> None:
    model = _model(tmp_path, architectures=["Qwen3ForCausalLM"], model_type="qwen3")
    (model / "quant_model_description.json").write_text(json.dumps({
        "model_quant_type": "W8A8_DYNAMIC", "version": "1.0.0", "model.embed_tokens.weight": "FLOAT",
        "model.layers.0.mlp.gate_proj.weight": "W8A8_DYNAMIC", "model.layers.0.self_attn.q_proj.weight": "W8A8",
    }), "utf-8")  # fmt: skip
    site_old = tmp_path / "old"
    site_old.mkdir()
    code, report = _json(_site(site_old, "0.9.1", "0.9.1"), "--model", str(model))
    assert code == 0
    ids = {q["method"]["id"] for q in report["model"]["quantization"]}
    assert ids == {"ascend/w8a8", "ascend/w8a8_dynamic"}
    assert all("--quantization ascend" in c["note"] for c in report["checks"] if c["id"] == "quantization")
    site_new = tmp_path / "new"
    site_new.mkdir()
    _, report = _json(_site(site_new, "0.18.0", "0.18.0"), "--model", str(model))
    assert all("detects it" in c["note"] for c in report["checks"] if c["id"] == "quantization")


def test_msmodelslim_on_the_0_7_3_line_needs_mindie_turbo(tmp_path: Path) -> None:
    model = _model(tmp_path)
    (model / "quant_model_description.json").write_text('{"model_quant_type": "W8A8"}', "utf-8")
    first = tmp_path / "a"
    first.mkdir()
    code, report = _json(_site(first, "0.7.3", "0.7.3"), "--model", str(model))
    assert code == 1
    assert "pip install mindie-turbo" in _check(report, "quantization")["fix"]
    second = tmp_path / "b"
    second.mkdir()
    code, report = _json(_site(second, "0.7.3", "0.7.3", extra=(("mindie-turbo", "2.0rc1"),)), "--model", str(model))
    assert code == 0, report["checks"]


def test_misnamed_description_file_is_a_warning(tmp_path: Path) -> None:
    model = _model(tmp_path)
    (model / "quant_model_description_w8a8.json").write_text('{"model_quant_type": "W8A8"}', "utf-8")
    code, report = _json(_site(tmp_path, "0.13.0", "0.13.0"), "--model", str(model))
    assert code == 0
    check = _check(report, "quantization")
    assert check["status"] == "warn" and "quant_model_description.json" in check["fix"]


def test_gguf_model(tmp_path: Path) -> None:
    model = tmp_path / "gguf"
    model.mkdir()
    (model / "qwen2-7b-q4_0.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    site = _site(tmp_path, "0.13.0", "0.13.0")
    code, report = _json(site, "--model", str(model))
    assert code == 1
    check = _check(report, "quantization")
    assert check["status"] == "error" and "llama.cpp" in check["fix"]
    code, _ = _json(site, "--model", str(model / "qwen2-7b-q4_0.gguf"))
    assert code == 1


# -- usage errors -----------------------------------------------------------------------------------------------------

def test_invalid_json_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    model = tmp_path / "broken"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": [', "utf-8")
    proc = _run(_site(tmp_path, "0.9.1", "0.9.1"), "--model", str(model))
    assert proc.returncode == 2
    assert str(model / "config.json") in proc.stderr and "invalid JSON" in proc.stderr
    assert proc.stdout == ""


def test_invalid_description_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    model = _model(tmp_path)
    (model / "quant_model_description.json").write_text("{", "utf-8")
    proc = _run(_site(tmp_path, "0.9.1", "0.9.1"), "--model", str(model))
    assert proc.returncode == 2 and "quant_model_description.json" in proc.stderr


@pytest.mark.parametrize("what", ["missing", "no-config", "not-an-object"])
def test_bad_model_paths_are_usage_errors(tmp_path: Path, what: str) -> None:
    target = tmp_path / "m"
    if what == "no-config":
        target.mkdir()
    elif what == "not-an-object":
        target = tmp_path / "config.json"
        target.write_text("[1, 2]", "utf-8")
    proc = _run(tmp_path, "--model", str(target))
    assert proc.returncode == 2
    assert str(target) in proc.stderr


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    assert _run(tmp_path, "--frobnicate").returncode == 2


# -- --json and rendering ---------------------------------------------------------------------------------------------

def test_json_structure(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.9.2", "0.9.1")
    _, report = _json(site, "--model", str(_model(tmp_path, GPTQ)))
    assert report["schema_version"] == vllm.SCHEMA_VERSION == 1
    assert set(report) == {"schema_version", "ready", "counts", "versions", "published_pair", "recommended",
                           "attention", "model", "checks", "data"}
    assert set(report["versions"]) == {"vllm", "vllm_ascend", "torch", "torch_npu", "python"}
    assert sum(report["counts"].values()) == len(report["checks"])
    assert report["ready"] is (report["counts"]["error"] == 0) is False
    for c in report["checks"]:
        assert set(c) == {"id", "status", "found", "fix", "note", "source"}
        assert c["status"] in vllm.STATUSES and c["found"]
        if c["status"] == "error":
            assert c["fix"], c
    assert set(report["model"]) == {"path", "config", "architectures", "model_type", "quantization"}
    assert report["model"]["quantization"][0]["method"]["ascend"] == "no"


def test_render_colours_only_when_asked() -> None:
    report = vllm.readiness()  # this interpreter's real environment
    assert "\x1b[" not in vllm.render(report)
    assert "\x1b[" in vllm.render(report, color=True)
    assert vllm.render(report).startswith("vLLM on Ascend: ")


def test_readiness_never_imports_vllm_or_torch(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.9.1", "0.9.1")
    env = _clean_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    code = ("import sys; from ascend_compat.ecosystem import vllm; vllm.readiness(); "
            "print(sorted(m for m in ('vllm', 'vllm_ascend', 'torch', 'torch_npu') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# -- the data ---------------------------------------------------------------------------------------------------------

def test_release_versions_are_unique_sourced_and_parse() -> None:
    rows = vllm.releases()
    keys = [quantization.version_key(r["vllm_ascend"]) for r in rows]
    assert None not in keys and len(set(keys)) == len(rows)
    for r in rows:
        assert r["source"].strip(), r
        assert r["vllm"] and all(quantization.version_key(v) is not None for v in r["vllm"]), r
        for k in ("torch", "torch_npu"):
            assert quantization.version_key(r[k]) is not None, (r["vllm_ascend"], k)
        assert r["cann"] and quantization.in_spec("3.10.0", r["python"]), r["vllm_ascend"]
        assert not r["vllm_ascend"].startswith("v")


def test_table_covers_the_0_7_line_to_the_newest_release() -> None:
    versions = {r["vllm_ascend"] for r in vllm.releases()}
    assert {"0.7.1rc1", "0.7.3", "0.7.3.post1", "0.8.5rc1", "0.9.1", "0.11.0", "0.13.0", "0.18.0", "0.23.0"} <= versions
    assert vllm.release("0.9.1")["vllm"] == ["0.9.1"]
    assert vllm.release("v0.10.1rc1")["vllm"] == ["0.10.1", "0.10.1.1"]
    assert vllm.releases_for_vllm("0.9.1")[0]["vllm_ascend"] == "0.9.1"
    assert vllm._is_final(vllm.newest_final()["vllm_ascend"])


def test_every_release_has_an_attention_entry() -> None:
    table = vllm.load_table()
    for entry in table["attention"]:
        assert entry["source"].strip() and entry["engine"] and "default" in entry["backends"]
        assert all(c.startswith("vllm_ascend.") for c in entry["backends"].values())
        for spec in entry["versions"]:
            assert quantization.in_spec("0.0.0", spec) in (True, False)
    for r in vllm.releases():
        assert vllm.attention_for(r["vllm_ascend"]) is not None, r["vllm_ascend"]
    assert vllm.attention_for("0.7.3rc1")["engine"] == "V0"
    assert "dsa_v1" in vllm.attention_for("0.13.0rc3")["backends"]["compressed (mla + compressed)"]
    assert "torchair" not in vllm.attention_for("0.12.0rc1")["backends"]


def test_platform_plugin_data() -> None:
    spec = vllm.load_table()["platform_plugin"]
    assert (spec["group"], spec["name"], spec["value"]) == ("vllm.platform_plugins", "ascend", "vllm_ascend:register")
    assert spec["source"].strip()


def test_fallback_version_parser_agrees_with_packaging() -> None:
    packaging_version = pytest.importorskip("packaging.version")
    versions = sorted({v for r in vllm.releases() for v in (r["vllm_ascend"], *r["vllm"], r["torch_npu"])}
                      | {"1.0.dev1", "1.0a1", "1.0", "1.0.post1", "0.9.1+empty"})
    by_packaging = sorted(versions, key=lambda v: packaging_version.Version(v.split("+")[0]))
    by_fallback = sorted(versions, key=pep440._fallback_key)
    assert [packaging_version.Version(v.split("+")[0]) for v in by_fallback] == [
        packaging_version.Version(v.split("+")[0]) for v in by_packaging]
    specs = {s for a in vllm.load_table()["attention"] for s in a["versions"]}
    specs |= {s.versions for m in quantization.load_methods() for s in m.vllm_ascend}
    for spec in specs:
        for v in versions:
            assert pep440._fallback_in_spec(v, spec) == quantization.in_spec(v, spec), (v, spec)


def test_report_without_packaging(tmp_path: Path) -> None:
    site = _site(tmp_path, "0.9.1+empty", "0.9.1")
    env = _clean_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    code = ("import sys; sys.modules['packaging'] = None\n"
            "from ascend_compat.ecosystem import pep440, vllm\n"
            "assert pep440.SpecifierSet is None\n"
            "r = vllm.readiness()\n"
            "print(r['ready'], vllm.newest_final()['vllm_ascend'] == r['recommended']['vllm_ascend'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]
