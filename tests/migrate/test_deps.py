"""Dependency manifests, imports and the dependency data (fixtures: ``<manifest>`` + ``<manifest>.expected``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ascend_compat.migrate import deps
from ascend_compat.migrate.model import DIFFICULTIES, RULES, FileFailed, FileScanned

FIXTURES = Path(__file__).parent / "fixtures" / "deps"
CASES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and Path(f"{p}.expected").is_file())
DEP_CODES = {"AC701", "AC702", "AC703", "AC704", "AC705", "AC706"}


def _scan(path: Path) -> list[str]:
    text = path.read_text("utf-8")
    if path.name == "setup.py":
        findings = deps.scan_setup_py(str(path), text)
    else:
        result = deps.scan_manifest(str(path), text)
        assert isinstance(result, FileScanned) and result.language == "deps"
        assert result.lines == len(text.splitlines())
        findings = result.findings
    return [f"{f.line}:{f.col} {f.code} {f.api}" for f in findings]


def _expected(path: Path) -> list[str]:
    return [ln.strip() for ln in Path(f"{path}.expected").read_text().splitlines() if ln.strip()]


def test_every_fixture_has_an_expected_file() -> None:
    manifests = [p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".expected"]
    assert sorted(manifests) == CASES and len(CASES) >= 9


@pytest.mark.parametrize("case", CASES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture(case: Path) -> None:
    assert case.name == "setup.py" or deps.is_manifest(str(case))
    assert _scan(case) == _expected(case)


def test_every_dependency_rule_is_exercised() -> None:
    codes = {ln.split()[1] for c in CASES for ln in _expected(c)}
    assert codes == DEP_CODES


def test_dependency_rules_are_registered() -> None:
    rules = {code: r for code, r in RULES.items() if r.language == "deps"}
    assert set(rules) == DEP_CODES
    for rule in rules.values():
        assert rule.category == "dependency" and not rule.fixable
    assert RULES["AC701"].level == "error" and RULES["AC703"].shim_handles


@pytest.mark.parametrize("name", ["pyproject.toml", "Pipfile"])
def test_invalid_toml_fails_cleanly(name: str) -> None:
    result = deps.scan_manifest(name, '[project]\ndependencies = ["flash-attn",\n')
    assert isinstance(result, FileFailed)
    assert result.language == "deps" and result.lines == 2 and "invalid TOML" in result.error


def test_unknown_packages_give_no_finding() -> None:
    text = "numpy>=1.24\nrequests[socks]==2.31 ; python_version >= '3.8'\nmy-internal-lib @ file:///srv/lib\n"
    assert deps.scan_manifest("requirements.txt", text).findings == []
    toml = '[project]\nname = "x"\ndependencies = ["numpy", "einops>=0.7"]\n'
    assert deps.scan_manifest("pyproject.toml", toml).findings == []
    assert deps.scan_setup_py("setup.py", 'from setuptools import setup\nsetup(install_requires=["numpy"])\n') == []


def test_packages_fine_on_the_npu_give_no_finding() -> None:
    text = "torch==2.1.0\ntorchvision\ntransformers>=4.40\naccelerate~=0.30\ndeepspeed>=0.14\npeft\nnumba\n"
    assert deps.scan_manifest("requirements.txt", text).findings == []


@pytest.mark.parametrize("spec,flagged", [
    ("transformers==4.31.0", True),
    ("transformers<4.32", True),
    ("transformers==4.2.*", True),
    ("transformers~=4.31", False),  # >=4.31, <5 admits 4.32
    ("transformers>=4.0", False),
    ("transformers==4.32.0", False),
    ("transformers", False),
])
def test_version_floor(spec: str, flagged: bool) -> None:
    codes = [f.code for f in deps.scan_manifest("requirements.txt", spec + "\n").findings]
    assert codes == (["AC704"] if flagged else [])


def test_crlf_and_continuation_lines_keep_line_numbers() -> None:
    text = "# gpu\r\nxformers \\\r\n  ==0.0.23\r\nnumpy\r\n    pynvml\r\n"
    found = [(f.line, f.col, f.code) for f in deps.scan_manifest("requirements.txt", text).findings]
    assert found == [(2, 1, "AC702"), (5, 5, "AC702")]


def test_findings_carry_the_entry_data() -> None:
    (f,) = deps.scan_manifest("requirements.txt", "vllm==0.4.0\n").findings
    data = f.to_dict()
    assert data["category"] == "dependency" and data["level"] == "warning" and not data["fixable"]
    assert "vllm-ascend" in data["alternative"] and data["end_col"] == len("vllm==0.4.0") + 1
    assert data["effort_days"] == RULES["AC702"].effort_days


def test_setup_py_that_does_not_parse_gives_nothing() -> None:
    assert deps.scan_setup_py("setup.py", "setup(install_requires=['flash-attn'\n") == []


@pytest.mark.parametrize("path,expected", [
    ("requirements.txt", True),
    ("requirements-dev.txt", True),
    ("dev-requirements.txt", True),
    ("requirements_gpu.in", True),
    ("proj/requirements/cuda.txt", True),
    ("constraints.txt", True),
    ("proj/pyproject.toml", True),
    ("setup.cfg", True),
    ("Pipfile", True),
    ("environment.yml", True),
    ("environment-gpu.yaml", True),
    ("setup.py", False),
    ("notes.txt", False),
    ("Pipfile.lock", False),
    ("docs/conf.yaml", False),
])
def test_is_manifest(path: str, expected: bool) -> None:
    assert deps.is_manifest(path) is expected


def test_normalize() -> None:
    assert deps.normalize("Flash_Attn") == "flash-attn"
    assert deps.normalize("nvidia.ml__py") == "nvidia-ml-py"


def test_lookup_exact_alias_and_longest_prefix() -> None:
    assert deps.lookup("Flash_Attn").name == "flash-attn"
    assert deps.lookup("nvidia-ml-py").name == "pynvml"  # an alias beats the nvidia- family
    assert deps.lookup("nvidia-dali-cuda110").name == "nvidia-dali"  # the longer prefix wins
    assert deps.lookup("nvidia-cusparse-cu12").name == "nvidia-*"
    assert deps.lookup("cuda-python").name == "cuda-python" and deps.lookup("cuda-nvrtc").name == "cuda-*"
    assert deps.lookup("numpy") is None


def test_imports_map_to_packages() -> None:
    assert deps.lookup_import("flash_attn.flash_attn_interface").name == "flash-attn"
    assert deps.lookup_import("nvidia.dali.fn").name == "nvidia-dali"
    assert deps.lookup_import("numba").name == "numba" and deps.lookup_import("numba.cuda").name == "numba-cuda"
    assert deps.lookup_import("numpy") is None


@pytest.mark.parametrize("module,code", [
    ("flash_attn", "AC703"),
    ("flash_attn.layers.rotary", "AC703"),
    ("flash_attn.modules.mha", "AC702"),  # not in the drop-in
    ("flash_attn.ops.triton.layer_norm", "AC702"),
    ("xformers.ops", "AC702"),
    ("triton", "AC702"),
    ("pynvml", "AC702"),
    ("cupy", "AC701"),
    ("numba.cuda", "AC701"),
    ("nvidia", "AC706"),
    ("numba", None),  # the CPU JIT works; numba.cuda kernels are the Python scanner's business
    ("transformers", None),  # native NPU support: the manifest says which version is needed
    ("torch", None),
    ("os", None),
])
def test_import_finding(module: str, code: str | None) -> None:
    f = deps.import_finding("a.py", module, 3, 5)
    if code is None:
        assert f is None
    else:
        assert f is not None and (f.code, f.line, f.col) == (code, 3, 5)
        assert f.api == deps.lookup_import(module).name and module in f.message
        assert f.to_dict()["alternative"] and not f.is_fixable


# -- the data file ------------------------------------------------------------------------------------------------

ENTRIES = deps.all_dependencies()


def test_data_covers_the_packages_the_issue_names() -> None:
    names = {e.name for e in ENTRIES}
    for name in ("flash-attn", "xformers", "apex", "bitsandbytes", "triton", "deepspeed", "vllm", "transformer-engine",
                 "cupy", "tensorrt", "pynvml", "mmcv", "mmcv-full", "nvidia-*", "cuda-python", "pycuda", "numba",
                 "cudf", "onnxruntime-gpu", "tensorflow-gpu", "jax", "torch-tensorrt", "faiss-gpu", "nvidia-dali",
                 "megatron-core", "torchvision", "torchaudio", "accelerate", "transformers", "peft", "causal-conv1d",
                 "mamba-ssm", "liger-kernel", "unsloth", "auto-gptq", "autoawq"):
        assert name in names
    assert deps.lookup("flash-attn").status == "shim"  # ascend_compat.ecosystem.flash_attn
    assert deps.lookup("vllm").alternative.startswith("vllm-ascend")


def test_every_entry_is_sourced_and_valid() -> None:
    for e in ENTRIES:
        assert e.source.strip() and e.note.strip(), e.name
        assert e.status in deps.STATUSES, e.name
        assert e.difficulty in DIFFICULTIES and e.effort_days >= 0, e.name
        if e.status in ("alternative", "shim", "unsupported"):
            assert e.alternative.strip(), e.name
        if e.min_version or e.npu_setup:
            assert e.status == "native_npu", e.name
        if e.min_version:
            assert all(p.isdigit() for p in e.min_version.split(".")), e.name
        if e.cuda_extras:
            assert deps.lookup(e.extras_as.rstrip("*")) is not None, e.name
            assert all(x == deps.normalize(x) for x in e.cuda_extras), e.name


def test_names_are_normalized_and_unique() -> None:
    names = []
    for e in ENTRIES:
        if e.name.endswith("*"):
            assert e.name[:-1] in e.prefixes, e.name  # a family entry is named by its prefix
        else:
            assert e.name == deps.normalize(e.name), e.name
        names += [e.name, *e.aliases]
        assert all(a == deps.normalize(a) for a in e.aliases), e.name
        assert all(p == deps.normalize(p) for p in e.prefixes), e.name
    assert len(names) == len(set(names))
    prefixes = [p for e in ENTRIES for p in e.prefixes]
    assert len(prefixes) == len(set(prefixes))


def test_import_names_are_unique_across_entries() -> None:
    imports = [i for e in ENTRIES for i in e.imports]
    assert len(imports) == len(set(imports))
    assert all(i.replace(".", "").replace("_", "").isalnum() for i in imports)


def test_dep_info_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ENTRIES[0].status = "works"  # type: ignore[misc]
