"""First-party detection and the extension boundary inventory on a fixture repository written for them
(``fixtures_report/kernelpkg``: its own CUDAExtension with pybind11 exports and Python call sites, a
``load()``-built extension with TORCH_LIBRARY, a CPU extension, a vendored kernel, a standalone kernel and a
first-party fork of a package the dependency table knows)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ascend_compat.migrate.extbuild import from_cmake, from_python
from ascend_compat.migrate.model import ScanResult
from ascend_compat.migrate.project import analyze
from ascend_compat.migrate.scan import check
from tests._forkserver import cli

FIXTURE = Path(__file__).parent / "fixtures_report" / "kernelpkg"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("r") / "kernelpkg"
    shutil.copytree(FIXTURE, dest)
    return dest


@pytest.fixture(scope="module")
def result(repo: Path) -> ScanResult:
    return check([str(repo)], jobs=1, use_git=False)


def test_own_packages_are_first_party_never_dependencies(result: ScanResult) -> None:
    fp = result.first_party
    assert fp is not None and fp["distributions"] == ["kernelpkg"]
    assert {"kernelpkg", "mamba_ssm"} <= set(fp["packages"])
    # `from mamba_ssm import selective_scan` names the repository's own fork, not the PyPI package.
    deps = {f.api for f in result.findings if f.category == "dependency"}
    assert "mamba-ssm" not in deps and "kernelpkg" not in deps
    assert {"causal-conv1d", "triton", "flash-attn"} <= deps
    assert [(Path(f.path).name, f.line, f.api) for f in result.first_party_dropped] == [("model.py", 4, "mamba-ssm")]


def test_every_extension_with_sources_exports_kernels_and_call_sites(result: ScanResult) -> None:
    inv = analyze(result).inventory
    by = {e.name: e for e in inv.extensions}
    assert set(by) == {"kernelpkg_cuda", "kernelpkg_cpu", "jit_ext"}
    cuda = by["kernelpkg_cuda"]
    assert (cuda.decl.kind, cuda.decl.path, cuda.decl.line) == ("CUDAExtension", "setup.py", 10)
    assert cuda.sources == ["csrc/bind.cpp", "csrc/scale_kernel.cu"] and not cuda.missing
    assert "csrc/common.cuh" in cuda.files  # reached through #include "common.cuh"
    # The commented-out m.def is not an export.
    assert [(x.name, x.line) for x in cuda.exports] == [("scale_forward", 9), ("rms_norm_fwd", 10), ("unused_op", 11)]
    assert {(k.name, k.path, k.complex) for k in cuda.kernels} == {
        ("scale_kernel", "csrc/scale_kernel.cu", False), ("rms_norm_kernel", "csrc/common.cuh", True)}
    assert [(s.path, s.line, s.name) for s in cuda.call_sites] == [
        ("kernelpkg/ops.py", 3, "import"), ("kernelpkg/ops.py", 5, "import rms_norm_fwd"),
        ("kernelpkg/ops.py", 9, "scale_forward"), ("kernelpkg/ops.py", 15, "rms_norm_fwd")]
    jit = by["jit_ext"]
    assert (jit.decl.kind, jit.sources, [x.name for x in jit.exports]) == ("load", ["csrc/jit.cu"], ["fn"])
    assert [(s.path, s.line, s.name) for s in jit.call_sites] == [("kernelpkg/jit.py", 9, "fn")]
    assert not by["kernelpkg_cpu"].cuda and [x.name for x in by["kernelpkg_cpu"].exports] == ["cpu_add"]
    # A kernel no extension compiles is still a unit of work; a vendored one is not the project's.
    assert [(k.name, k.path) for k in inv.orphan_kernels] == [("orphan_kernel", "tools/standalone.cu")]
    assert "vendored_kernel" not in json.dumps(inv.to_dict())


def test_check_json_and_sarif_carry_the_inventory(repo: Path) -> None:
    run = ["check", str(repo), "--no-progress", "--fail-on", "never"]
    as_json, as_sarif = cli(*run, "--json"), cli(*run, "--format", "sarif")
    assert (as_json.returncode, as_sarif.returncode) == (0, 0), as_json.stderr + as_sarif.stderr
    data = json.loads(as_json.stdout)
    names = [e["name"] for e in data["extensions"]["extensions"]]
    assert sorted(names) == ["jit_ext", "kernelpkg_cpu", "kernelpkg_cuda"]
    assert data["first_party"]["distributions"] == ["kernelpkg"] and data["first_party"]["dropped_findings"]
    assert data["summary"]["effort_range"] == [data["effort"]["low"], data["effort"]["high"]]
    sarif = json.loads(as_sarif.stdout)
    props = sarif["runs"][0]["properties"]
    assert [e["name"] for e in props["extensions"]["extensions"]] == names
    assert props["effort"]["low"] == data["effort"]["low"]


def test_build_declarations_read_without_running_the_build(tmp_path: Path) -> None:
    (tmp_path / "csrc").mkdir()
    for n in ("a.cu", "b.cu", "x.cpp"):
        (tmp_path / "csrc" / n).write_text("")
    setup = tmp_path / "setup.py"
    setup.write_text(
        "import glob, os\nfrom torch.utils import cpp_extension\nthis_dir = os.path.dirname(__file__)\n"
        "SRCS = [os.path.join(this_dir, 'csrc', 'x.cpp')]\nNAME = 'pkg._fast'\n"
        "exts = [cpp_extension.CUDAExtension(NAME, SRCS + glob.glob('csrc/*.cu')),\n"
        "        cpp_extension.CUDAExtension(name=f'{NAME}_v2', sources=['csrc/missing.cu'])]\n"
        "import json\ncfg = json.load(open('c.json'))\n"
        "inline = cpp_extension.load_inline(name='inl', cpp_sources='int f();', functions=['f', 'g'])\n"
    )
    decls = from_python(str(setup), setup.read_text(), str(tmp_path))
    assert [(d.name, d.qualified, d.kind, d.line) for d in decls] == [
        ("_fast", "pkg._fast", "CUDAExtension", 6), ("_fast_v2", "pkg._fast_v2", "CUDAExtension", 7),
        ("inl", "inl", "load_inline", 10)]
    assert decls[0].sources == ["csrc/x.cpp", "csrc/a.cu", "csrc/b.cu"]
    assert decls[1].sources == ["csrc/missing.cu"] and decls[2].functions == ["f", "g"]
    cmake = tmp_path / "CMakeLists.txt"
    cmake.write_text("add_library(core STATIC core.cpp)  # linked in\npybind11_add_module(_ops MODULE ops.cpp k.cu)\n"
                     "add_library(plugin SHARED plugin.cu ${EXTRA})\n")
    assert [(d.name, d.sources, d.line) for d in from_cmake(str(cmake), cmake.read_text(), str(tmp_path))] == [
        ("_ops", ["ops.cpp", "k.cu"], 2), ("plugin", ["plugin.cu"], 3)]


def test_no_setup_no_extensions(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("import json\nx = json.load(open('a'))\n")
    inv = analyze(check([str(tmp_path)], jobs=1, use_git=False)).inventory
    assert inv.extensions == [] and inv.orphan_kernels == []


def test_cmake_sources_through_variables_and_globs(tmp_path: Path) -> None:
    for rel in ("csrc/a.cu", "csrc/b.cpp", "csrc/kern/k1.cu", "csrc/kern/x/r.cu", "sub/s.cu", "csrc/kern/notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    cmake = tmp_path / "CMakeLists.txt"
    cmake.write_text(
        "project(x LANGUAGES CXX CUDA)\n"
        "# set(SRCS commented_out.cu)\n"
        "set(SRCS csrc/a.cu\n    csrc/b.cpp)  # two lines\n"
        'list(APPEND SRCS "${CMAKE_CURRENT_SOURCE_DIR}/sub/s.cu")\n'
        "file(GLOB KERNELS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/csrc/kern/*.cu)\n"
        "file(GLOB_RECURSE ALL_CU RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} csrc/kern/*.cu)\n"
        "if(WITH_CUDA)\n  add_library(x MODULE ${SRCS})\nendif()\n"
        "pybind11_add_module(flat ${KERNELS})\n"
        "pybind11_add_module(deep ${ALL_CU} ${UNDEFINED_IN_THIS_FILE})\n"
        "add_library(t SHARED csrc/a.cu)\ntarget_sources(t PRIVATE csrc/b.cpp)\n"
        "add_library(linked_in STATIC ${SRCS})\n")
    got = [(d.name, d.line, d.sources) for d in from_cmake(str(cmake), cmake.read_text(), str(tmp_path))]
    assert got == [
        ("x", 9, ["csrc/a.cu", "csrc/b.cpp", "sub/s.cu"]),
        ("flat", 11, ["csrc/kern/k1.cu"]),
        ("deep", 12, ["csrc/kern/k1.cu", "csrc/kern/x/r.cu"]),
        ("t", 13, ["csrc/a.cu", "csrc/b.cpp"]),
    ]


def test_cmake_extension_reaches_the_inventory(tmp_path: Path) -> None:
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "k.cu").write_text("__global__ void scale_kernel(float* x) { x[threadIdx.x] *= 2; }\n")
    (tmp_path / "csrc" / "bind.cpp").write_text(
        '#include <torch/extension.h>\nvoid scale(at::Tensor x);\n'
        'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n  m.def("scale", &scale);\n}\n')
    (tmp_path / "CMakeLists.txt").write_text("file(GLOB SRCS csrc/*.cu csrc/*.cpp)\npybind11_add_module(_k ${SRCS})\n")
    (tmp_path / "use.py").write_text("import _k\n\n_k.scale(None)\n")
    inv = analyze(check([str(tmp_path)], jobs=1, use_git=False)).inventory
    (ext,) = inv.extensions
    assert (ext.name, ext.sources, ext.missing) == ("_k", ["csrc/k.cu", "csrc/bind.cpp"], [])
    assert [k.name for k in ext.kernels] == ["scale_kernel"] and [x.name for x in ext.exports] == ["scale"]
    assert [(s.path, s.line, s.name) for s in ext.call_sites] == [("use.py", 1, "import"), ("use.py", 3, "scale")]
    assert inv.orphan_kernels == []


def test_cmake_scikit_build_style(tmp_path: Path) -> None:
    # The shape of sgl-kernel's CMakeLists: quoted sources with comments, sources of FetchContent repositories
    # (not this project's: left out), USE_SABI/WITH_SOABI keywords, and the module named by OUTPUT_NAME.
    cmake = tmp_path / "CMakeLists.txt"
    cmake.write_text(
        'set(FLAGS\n    "-DNDEBUG"   # a comment after a quoted word\n    # "-v"\n)\n'
        'set(SOURCES\n    "csrc/a.cu"\n    "csrc/ext.cc"\n\n    "${repo-flashinfer_SOURCE_DIR}/csrc/norm.cu"\n)\n'
        "Python_add_library(common_ops_sm90 MODULE USE_SABI ${SKBUILD_SABI_VERSION} WITH_SOABI ${SOURCES})\n"
        "target_compile_options(common_ops_sm90 PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${FLAGS} -use_fast_math>)\n"
        'set_target_properties(common_ops_sm90 PROPERTIES\n    OUTPUT_NAME "common_ops"\n'
        '    LIBRARY_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/sm90"\n)\n')
    (decl,) = from_cmake(str(cmake), cmake.read_text(), str(tmp_path))
    assert (decl.name, decl.line, decl.sources) == ("common_ops", 11, ["csrc/a.cu", "csrc/ext.cc"])
