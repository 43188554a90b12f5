"""The C/C++/CUDA scanner on its fixture corpus (TorchFix style: ``case.cu`` + ``case.cu.expected``) and its data."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import pytest

from ascend_compat.migrate import cxx
from ascend_compat.migrate.cxx import CXX_SUFFIXES, FAMILIES, MATCHES, RUNTIME_CATEGORIES, api_entries, scan_cxx
from ascend_compat.migrate.model import CATEGORIES, DIFFICULTIES, RULES, FileScanned, FileSkipped

FIXTURES = Path(__file__).parent / "fixtures" / "cxx"
CASES = sorted(p for p in FIXTURES.iterdir() if p.name.endswith(CXX_SUFFIXES))
CXX_RULES = {rule.code: rule for rule in cxx.CXX_RULES}


def _scan(path: Path) -> FileScanned:
    result = scan_cxx(str(path), path.read_text("utf-8"))
    assert isinstance(result, FileScanned), result
    return result


def _found(path: Path) -> list[str]:
    return [f"{f.line}:{f.col} {f.code}" for f in _scan(path).findings]


def _expected(path: Path) -> list[str]:
    return [ln.strip() for ln in Path(f"{path}.expected").read_text().splitlines() if ln.strip()]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_fixture(case: Path) -> None:
    assert _found(case) == _expected(case)


def test_every_fixture_has_its_expectations() -> None:
    assert len(CASES) >= 10
    for case in CASES:
        assert Path(f"{case}.expected").is_file(), case


def test_every_cxx_rule_has_a_fixture() -> None:
    covered = {x.split()[1] for c in CASES for x in _expected(c)}
    assert set(CXX_RULES) - covered == set()


def test_rules_are_registered_cxx_rules_in_their_code_range() -> None:
    assert CXX_RULES
    for code, rule in CXX_RULES.items():
        assert RULES[code] is rule and rule.language == "cxx"
        assert "AC601" <= code <= "AC699"
        assert rule.category in CATEGORIES and not rule.fixable and rule.effort_days > 0


@pytest.mark.parametrize("name", ["negatives.cpp", "plain.cpp", "empty.cu"])
def test_quiet_files(name: str) -> None:
    # Comments, strings, user functions that only look like CUDA names, host asm, plain C++.
    assert _found(FIXTURES / name) == []


def test_findings_carry_the_mapping() -> None:
    code = "void f(float* p, size_t n) {\n  cudaMalloc(&p, n);\n  cudaMallocAsync(&p, n, 0);\n}\n"
    result = scan_cxx("f.cu", code)
    assert isinstance(result, FileScanned) and result.lines == 4 and result.language == "cxx"
    malloc, malloc_async = result.findings
    d = malloc.to_dict()
    assert (d["code"], d["api"], d["line"], d["col"]) == ("AC601", "cudaMalloc", 2, 3)
    assert d["alternative"].startswith("aclrtMalloc") and "aclrtMalloc" in d["message"]
    assert not d["fixable"] and d["effort_days"] == CXX_RULES["AC601"].effort_days
    assert (d["end_line"], d["end_col"]) == (2, len("  cudaMalloc(&p, n)") + 1)
    assert malloc_async.alternative is not None and malloc_async.alternative.startswith("no direct counterpart")


def test_kernel_and_launch_name_the_kernel() -> None:
    code = "__global__ void axpy(float* y) {}\nvoid run(float* y) { axpy<<<1, 64>>>(y); }\n"
    kernel, launch = scan_cxx("k.cu", code).findings  # type: ignore[union-attr]
    assert kernel.code == "AC609" and "axpy" in kernel.message and kernel.effective_level == "error"
    assert launch.code == "AC610" and "axpy" in launch.message and "ACLRT_LAUNCH_KERNEL" in launch.message


def test_hard_entries_raise_the_level() -> None:
    (finding,) = scan_cxx("g.cpp", "void f() { cudnnRNNForward(h); }\n").findings  # type: ignore[union-attr]
    assert finding.code == "AC604" and finding.effective_level == "error"


def test_library_types_count_once_per_file() -> None:
    code = "cutlass::half_t a;\ncutlass::half_t b;\nvoid f() { thrust::sort(x); thrust::sort(y); }\n"
    found = [(f.code, f.api) for f in scan_cxx("t.cu", code).findings]  # type: ignore[union-attr]
    assert found == [("AC608", "cutlass::half_t"), ("AC607", "thrust::sort"), ("AC607", "thrust::sort")]


def test_macro_body_positions_map_back_to_the_file() -> None:
    code = "#define CHECK(x) \\\n  do { if ((x) != 0) puts(cudaGetErrorString(x)); } while (0)\n"
    (finding,) = scan_cxx("m.cu", code).findings  # type: ignore[union-attr]
    assert (finding.line, finding.col) == (2, code.splitlines()[1].index("cudaGetErrorString") + 1)


def test_non_ascii_columns_are_characters() -> None:
    (finding,) = scan_cxx("u.cu", 'auto s = "日本"; int r = cudaFree(p);\n').findings  # type: ignore[union-attr]
    assert finding.col == len('auto s = "日本"; int r = ') + 1


def test_byte_order_mark_and_crlf() -> None:
    text = "\ufeff#include <cuda.h>\r\n#define FREE(x) \\\r\n  cudaFree(x)\r\n"
    found = [(f.line, f.col, f.code) for f in scan_cxx("b.cu", text).findings]  # type: ignore[union-attr]
    assert found == [(1, 10, "AC613"), (3, 3, "AC601")]


def test_skipped_without_tree_sitter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cxx, "_grammar", lambda: None)
    result = scan_cxx("k.cu", "__global__ void k() {}\n")
    assert isinstance(result, FileSkipped)
    assert (result.path, result.language, result.reason) == ("k.cu", "cxx", cxx.SKIP_REASON)
    assert "NOT ANALYSED" in result.reason and "pip install" in result.reason


def test_tree_sitter_is_a_dependency() -> None:
    # A newcomer who installs only `ascend-compat` gets the C/C++/CUDA parser (issue 21).
    import tomllib

    with open(os.path.join(os.path.dirname(__file__), "..", "..", "pyproject.toml"), "rb") as fh:
        deps = tomllib.load(fh)["project"]["dependencies"]
    assert any(d.startswith("tree-sitter>=") for d in deps) and any(d.startswith("tree-sitter-cuda") for d in deps)


def test_driver_rule_only_fires_on_driver_api_names() -> None:
    # apex names its own device helpers cuWelfordOnlineSum, cuLoadWriteStridedInputs...: not the driver API.
    code = (
        "template <typename T> __device__ void cuWelfordOnlineSum(T x, T* mu) { *mu += x; }\n"
        "__device__ void cuChanOnlineSum(float a) {}\n"
        "__global__ void k(float* mu) { cuWelfordOnlineSum(1.0f, mu); cuChanOnlineSum(2.0f);\n"
        "  cuLoadWriteStridedInputs(); }\n"
        "void host() { cuCtxSynchronize(); cuMemAllocAsync(nullptr, 4, nullptr); cuGraphLaunch(nullptr, nullptr); }\n"
    )
    found = [(f.line, f.api) for f in scan_cxx("ln.cu", code).findings if f.code == "AC602"]  # type: ignore[union-attr]
    assert found == [(5, "cuCtxSynchronize"), (5, "cuMemAllocAsync"), (5, "cuGraphLaunch")]


# --- the mapping data ---------------------------------------------------------------------------------------


def _raw_entries() -> list[dict]:
    text = (resources.files("ascend_compat.migrate") / "data" / "cuda_cxx_apis.json").read_text("utf-8")
    return json.loads(text)["entries"]


def test_data_entries_are_complete_and_valid() -> None:
    entries = _raw_entries()
    assert len(entries) == len(api_entries()) > 200
    for e in entries:
        assert set(e) <= {"name", "match", "ascend", "family", "difficulty", "category", "note", "source"}, e
        assert e["name"] and isinstance(e["source"], str) and len(e["source"]) > 10, e
        assert e["family"] in FAMILIES, e
        assert e["difficulty"] in DIFFICULTIES, e
        assert e["match"] in MATCHES, e
        assert e["ascend"] is None or (isinstance(e["ascend"], str) and e["ascend"]), e
        if e["ascend"] is None:
            assert e.get("note"), f"{e['name']}: an entry without a counterpart says what to do instead"
        if e["family"] == "runtime":
            assert e.get("category") in RUNTIME_CATEGORIES, e
        else:
            assert "category" not in e, e


def test_data_names_are_unique() -> None:
    names = [e["name"] for e in _raw_entries()]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_every_entry_maps_to_a_cxx_rule() -> None:
    for entry in api_entries():
        assert entry.code in CXX_RULES, entry


@pytest.mark.parametrize(("cuda", "ascend"), [
    ("cudaMalloc", "aclrtMalloc"), ("cudaMemcpyAsync", "aclrtMemcpyAsync"), ("cudaStreamSynchronize",
    "aclrtSynchronizeStream"), ("cudaSetDevice", "aclrtSetDevice"), ("ncclAllReduce", "HcclAllReduce"),
    ("ncclCommInitRank", "HcclCommInitRootInfo"), ("getCurrentCUDAStream", "c10_npu::getCurrentNPUStream"),
    ("CUDAGuard", "c10_npu::NPUGuard"), ("nccl.h", "hccl/hccl.h"), ("cuda_runtime.h", "acl/acl.h"),
])
def test_key_counterparts(cuda: str, ascend: str) -> None:
    by_name = {e.name: e for e in api_entries()}
    assert by_name[cuda].ascend == ascend
