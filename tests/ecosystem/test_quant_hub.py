"""``ascend-compat quant <hub id>`` (the README's ``quant meta-llama/Llama-3-8B-GPTQ``), without the network:
a tiny Hugging Face cache built here, ``HF_HUB_OFFLINE=1``, and an unreachable local endpoint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Optional

import pytest

from ascend_compat.ecosystem import hub
from tests._forkserver import cli
from tests.conftest import _clean_env

GPTQ = {"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}


def _quant(*args: str, cache: Path, offline: bool = True, cwd: Optional[Path] = None,
           **env: str) -> subprocess.CompletedProcess:  # fmt: skip
    full = {k: v for k, v in _clean_env().items() if not k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_"))}
    full.update(HF_HUB_CACHE=str(cache), **env)
    if offline:
        full["HF_HUB_OFFLINE"] = "1"
    return cli("quant", *args, env=full, timeout=120, cwd=cwd)


def _cache(root: Path, repo_id: str, files: dict[str, object], commit: str = "0123abcd") -> Path:
    """The layout huggingface_hub writes: models--org--name/{refs/main, snapshots/<commit>/...}."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    for name, content in files.items():
        snapshot.joinpath(name).write_text(content if isinstance(content, str) else json.dumps(content))
    return snapshot


def test_readme_gptq_id_offline_and_not_cached_is_judged_from_the_id_and_says_so(tmp_path: Path) -> None:
    proc = _quant("meta-llama/Llama-3-8B-GPTQ", cache=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "INFERRED from the model id" in proc.stdout and "offline (HF_HUB_OFFLINE)" in proc.stdout
    assert "GPTQ" in proc.stdout and "instead:" in proc.stdout
    report = json.loads(_quant("meta-llama/Llama-3-8B-GPTQ", "--json", cache=tmp_path).stdout)
    assert report["inferred"] is True and report["usable"] is False and report["config"] is None
    assert report["hub"]["source"] == "inferred" and "not in the Hugging Face cache" in report["hub"]["note"]
    (method,) = report["methods"]
    assert method["id"] == "gptq" and method["inferred"] is True and "inferred" in method["evidence"]


def test_the_cache_comes_first_and_its_files_decide_not_the_name(tmp_path: Path) -> None:
    _cache(tmp_path, "org/Tiny-AWQ", {"config.json": {"architectures": ["LlamaForCausalLM"]}})
    report = json.loads(_quant("org/Tiny-AWQ", "--json", cache=tmp_path).stdout)
    assert report["inferred"] is False and report["usable"] is True, report
    assert report["hub"]["source"] == "hf-cache" and report["config"].endswith("config.json")
    assert [m["id"] for m in report["methods"]] == ["none"]
    _cache(tmp_path, "org/tiny", {"config.json": GPTQ,
                                  "quant_model_description.json": {"model_quant_type": "W8A8"}})  # fmt: skip
    proc = _quant("org/tiny", "--json", cache=tmp_path)
    assert proc.returncode == 1
    assert {m["id"] for m in json.loads(proc.stdout)["methods"]} == {"gptq", "ascend/w8a8"}


def test_hf_home_cache_and_a_gguf_only_snapshot(tmp_path: Path) -> None:
    _cache(tmp_path / "home" / "hub", "org/model-q4", {"model.Q4_K_M.gguf": "GGUF"})
    proc = _quant("org/model-q4", "--json", cache=tmp_path / "unused", HF_HOME=str(tmp_path / "home"))
    # HF_HUB_CACHE beats HF_HOME, as in huggingface_hub: not found there, and the name says nothing.
    assert proc.returncode == 2 and "names no quantization method" in proc.stderr
    full = {k: v for k, v in _clean_env().items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    full.update(HF_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1")
    proc = cli("quant", "org/model-q4", "--json", env=full, timeout=120)
    report = json.loads(proc.stdout)
    assert report["hub"]["source"] == "hf-cache" and [m["id"] for m in report["methods"]] == ["gguf"]
    assert report["inferred"] is False


def test_offline_id_that_names_no_method_is_a_usage_error(tmp_path: Path) -> None:
    proc = _quant("meta-llama/Llama-3-8B", cache=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "offline" in proc.stderr and "names no quantization method" in proc.stderr


def test_unreachable_hub_falls_back_to_the_id_quickly(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    proc = _quant("TheBloke/Llama-2-7B-AWQ", "--json", cache=tmp_path, offline=False,
                  HF_ENDPOINT="http://127.0.0.1:9")  # nothing listens there: refused at once, no real network
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["inferred"] is True
    assert "the hub could not be read" in report["hub"]["note"] and report["methods"][0]["id"] == "awq"


def test_a_local_directory_wins_over_a_hub_id(tmp_path: Path) -> None:
    tmp_path.joinpath("org", "Tiny-GPTQ").mkdir(parents=True)
    tmp_path.joinpath("org", "Tiny-GPTQ", "config.json").write_text("{}")
    report = json.loads(_quant("org/Tiny-GPTQ", "--json", cache=tmp_path / "c", cwd=tmp_path).stdout)
    assert "hub" not in report and report["inferred"] is False and report["usable"] is True


@pytest.mark.parametrize("repo_id, method", [
    ("meta-llama/Llama-3-8B-GPTQ", "gptq"), ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "gptq"),
    ("TheBloke/Llama-2-7B-AWQ", "awq"), ("TheBloke/Llama-2-7B-GGUF", "gguf"),
    ("unsloth/llama-3-8b-bnb-4bit", "bitsandbytes-4bit"), ("org/model-bnb-8bit", "bitsandbytes-8bit"),
    ("neuralmagic/Meta-Llama-3-8B-Instruct-FP8", "fp8"), ("vllm-ascend/Qwen3-8B-W8A8", "ascend/w8a8"),
    ("meta-llama/Llama-3-8B", None), ("org/awqward-name", None),
])  # fmt: skip
def test_infer_from_id(repo_id: str, method: Optional[str]) -> None:
    found = hub.infer_from_id(repo_id)
    assert (found[0] if found else None) == method


def test_is_hub_id(tmp_path: Path) -> None:
    assert hub.is_hub_id("meta-llama/Llama-3-8B-GPTQ")
    assert not hub.is_hub_id(str(tmp_path))
    assert not hub.is_hub_id("gpt2") and not hub.is_hub_id("dir/config.json") and not hub.is_hub_id("a/b/c")
