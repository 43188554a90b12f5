"""Version parsing and ordering, CANN info files, and the packaged torch_npu / PyTorch / CANN matrix."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ascend_compat.doctor import checks
from ascend_compat.doctor.versions import CannVersion, PyVersion, compatible_range, info_get, parse_info, read_info

FIXTURES = Path(__file__).parent / "fixtures_doctor"
# The shared reference notes beside the checkout (../shared/reference), wherever the repository is.
REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "README.md"


# --- CANN / driver / firmware versions -------------------------------------------------------------------------

CANN_CHAIN = [
    "7.0.RC1", "7.0.0", "8.0.T5", "8.0.RC1.alpha003", "8.0.RC1", "8.0.RC2", "8.0.RC3", "8.0.RC10",
    "8.0.0.alpha001", "8.0.0.beta1", "8.0.0", "8.1.RC1", "8.2.RC1", "8.3.RC1", "8.5.0", "9.0.0", "9.1.0", "10.0.RC1",
]


def test_cann_versions_sort_as_released():
    shuffled = CANN_CHAIN[:]
    random.Random(7).shuffle(shuffled)
    assert [str(v) for v in sorted(CannVersion.parse(s) for s in shuffled)] == CANN_CHAIN


def test_release_candidates_come_before_the_release_of_the_same_series():
    assert CannVersion.parse("8.0.RC1") < CannVersion.parse("8.0.RC2") < CannVersion.parse("8.0.0")
    assert CannVersion.parse("8.0.0") < CannVersion.parse("8.1.RC1")
    assert CannVersion.parse("8.0.RC2").series == CannVersion.parse("8.0.0").series == (8, 0)


def test_driver_style_versions_lowercase_rc_and_patches():
    assert CannVersion.parse("24.1.rc2") == CannVersion.parse("24.1.RC2")
    assert CannVersion.parse("24.1.rc2") < CannVersion.parse("24.1.rc2.2") < CannVersion.parse("24.1.0")
    assert CannVersion.parse("6.3.RC3") < CannVersion.parse("6.3.RC3.1") < CannVersion.parse("6.3.0")
    assert CannVersion.parse("24.1.rc1.b030") < CannVersion.parse("24.1.rc1")
    assert CannVersion.parse("7.5.0.1.129") < CannVersion.parse("7.7.0.1.231")


def test_no_prefix_matching():
    assert CannVersion.parse("8.0.RC1") != CannVersion.parse("8.0.RC10")
    assert CannVersion.parse("8.0.RC2") < CannVersion.parse("8.0.RC10")
    assert CannVersion.parse("8.1.RC1") != CannVersion.parse("8.1.0")


@pytest.mark.parametrize("bad", ["", "8", "8.0", "8.0.X1", "latest", "8.0..1", "v8.0.0", "8.0.RC", "8.0.0.gamma1"])
def test_invalid_cann_versions_are_rejected(bad):
    with pytest.raises(ValueError, match="not a CANN version"):
        CannVersion.parse(bad)
    assert CannVersion.try_parse(bad) is None


def test_prerelease_flags():
    assert CannVersion.parse("8.0.T5").is_prerelease
    assert CannVersion.parse("8.0.RC1.alpha003").is_prerelease
    assert not CannVersion.parse("8.0.RC1").is_prerelease
    assert not CannVersion.parse("8.0.0").is_prerelease


# --- Python package versions -----------------------------------------------------------------------------------


def test_pep440_ordering_for_torch_npu_releases():
    chain = ["2.1.0.rc1", "2.1.0", "2.1.0.post4", "2.1.0.post10", "2.1.0.post17", "2.2.0", "2.10.0.post4", "2.12.0"]
    shuffled = chain[:]
    random.Random(3).shuffle(shuffled)
    assert [str(v) for v in sorted(PyVersion.parse(s) for s in shuffled)] == chain


def test_local_builds_and_cuda_detection():
    cpu = PyVersion.parse("2.13.0+cpu")
    assert (cpu.public, cpu.base, cpu.local, cpu.cuda_build) == ("2.13.0", "2.13.0", "cpu", None)
    assert PyVersion.parse("2.3.1+cu121").cuda_build == "cu121"
    assert PyVersion.parse("2.3.1+rocm6.0").cuda_build == "rocm6.0"
    assert PyVersion.parse("2.7.1.post8").base == "2.7.1"
    assert PyVersion.parse("2.1").key == PyVersion.parse("2.1.0").key
    assert PyVersion.parse("2.1.0.dev1") < PyVersion.parse("2.1.0a1") < PyVersion.parse("2.1.0")
    with pytest.raises(ValueError):
        PyVersion.parse("two.one")


# --- Info files ------------------------------------------------------------------------------------------------


def test_parse_driver_version_info():
    info = read_info(FIXTURES / "driver_version.info")
    assert info is not None
    assert info["Version"] == "24.1.rc2"
    assert info["Innerversion"] == "V100R001C18SPC001B233"
    assert info_get(info, "package_version", "Version") == "24.1.rc2"
    assert compatible_range(info["compatible_version"]) == [
        ("V100R001C15", "V100R001C15"), ("V100R001C17", "V100R001C17"), ("V100R001C18", "V100R001C18")]
    assert compatible_range(info["compatible_version_fw"]) == [("7.0.0", "7.5.99")]


def test_parse_toolkit_install_info_lowercase_keys():
    info = read_info(FIXTURES / "ascend_toolkit_install.info")
    assert info_get(info, "version") == "8.0.RC2"
    assert info_get(info, "innerversion") == "V100R001C18SPC001B200"
    assert info_get(info, "path") == "/usr/local/Ascend/ascend-toolkit/8.0.RC2/x86_64-linux"


def test_parse_nnal_colon_format():
    info = read_info(FIXTURES / "nnal_version.info")
    assert info_get(info, "Ascend-cann-atb") == "8.0.RC2"
    assert info_get(info, "Ascend-cann-atb Version") == "8.0.RC2.B030"


def test_info_keys_match_exactly_never_by_prefix():
    info = parse_info("version_dir=8.5.0\nVersion_old=1\n")
    assert info_get(info, "version") is None
    info = parse_info("# comment\n\nversion=8.5.0\nversion=9.9.9\nnot a pair\npath=/a=b\n")
    assert info == {"version": "8.5.0", "path": "/a=b"}


def test_info_file_with_a_utf8_bom(tmp_path):
    path = tmp_path / "ascend_toolkit_install.info"
    path.write_bytes(b"\xef\xbb\xbfversion=8.2.RC1\ninnerversion=V100R001C22B001\n")
    assert info_get(read_info(path), "version") == "8.2.RC1"
    assert parse_info("\ufeffVersion=24.1.rc2\n") == {"Version": "24.1.rc2"}


def test_missing_info_file_reads_as_none(tmp_path):
    assert read_info(tmp_path / "nope.info") is None
    assert info_get(None, "version") is None


# --- The version matrix ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix():
    return checks.load_matrix()


def test_matrix_rows_are_well_formed_and_sourced(matrix):
    assert matrix["schema_version"] == 1
    for row in matrix["pairs"]:
        CannVersion.parse(row["cann"])
        npu, torch = PyVersion.parse(row["torch_npu"]), PyVersion.parse(row["torch"])
        # Each torch_npu release is built for the torch release of the same number.
        assert npu.base == torch.public, row
        assert row["torch_requirement"] == {"x86_64": f"torch=={row['torch']}+cpu", "aarch64": f"torch=={row['torch']}"}
        assert row["status"] in ("active", "historical")
        assert row["source"].startswith("Ascend/pytorch COMPATIBILITY.en.md")
        assert row["pin_source"].startswith(f"Ascend/pytorch branch {row['branch']}:")
        assert row["branch"].startswith(f"v{row['torch']}-")
        if "python" in row:
            assert row["python_source"]
            assert all(p.count(".") == 1 and all(x.isdigit() for x in p.split(".")) for p in row["python"])


def test_matrix_is_sorted_and_unique(matrix):
    keys = [(CannVersion.parse(r["cann"]), PyVersion.parse(r["torch_npu"])) for r in matrix["pairs"]]
    assert keys == sorted(keys)
    assert len({(r["torch_npu"], r["cann"]) for r in matrix["pairs"]}) == len(keys)
    assert len({r["branch"] for r in matrix["pairs"]}) == len(keys)
    torches = [PyVersion.parse(e["torch"]) for e in matrix["torch_python"]]
    assert torches == sorted(torches) and len(set(torches)) == len(torches)
    assert all(e["source"] for e in matrix["torch_python"])


def test_matrix_covers_the_torch_npu_and_cann_lines(matrix):
    lines = {".".join(r["torch"].split(".")[:2]) for r in matrix["pairs"]}
    assert {f"2.{m}" for m in range(1, 13)} <= lines
    canns = {r["cann"] for r in matrix["pairs"]}
    wanted = {"8.0.RC1", "8.0.RC2", "8.0.RC3", "8.0.0", "8.1.RC1", "8.2.RC1", "8.3.RC1", "8.5.0", "9.0.0", "9.1.0"}
    assert wanted <= canns


def test_row_python_lists_agree_with_the_python_table(matrix):
    table = {e["torch"]: e["python"] for e in matrix["torch_python"]}
    for row in matrix["pairs"]:
        if "python" in row:
            assert row["python"] == table[row["torch"]]


@pytest.mark.skipif(not REFERENCE.is_file(), reason="shared reference notes not present")
def test_matrix_agrees_with_independently_collected_pairs():
    # The project's reference notes quote three pairs from COMPATIBILITY.en.md; the data must contain them.
    text = REFERENCE.read_text(encoding="utf-8")
    assert "torch-npu 2.6.0 with" in text
    assert checks.rows_for_torch_npu("2.6.0")[0]["cann"] == "8.2.RC1"
    assert [r["cann"] for r in checks.rows_for_torch_npu("2.9.0")] == ["8.5.0"]
    assert [r["cann"] for r in checks.rows_for_torch_npu("2.12.0")] == ["9.1.0"]


def test_lookup_helpers_are_exact(matrix):
    assert checks.rows_for_torch_npu("2.1.0") == [r for r in matrix["pairs"] if r["torch_npu"] == "2.1.0"]
    assert checks.rows_for_torch_npu("2.1") == checks.rows_for_torch_npu("2.1.0")  # PEP 440 equality
    assert checks.rows_for_torch_npu("2.1.0.post1") == []
    assert {r["torch"] for r in checks.rows_for_torch("2.7.1+cpu")} == {"2.7.1"}
    assert checks.python_for_torch("2.13.0+cpu") == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    assert checks.python_for_torch("1.0.0") is None
    assert json.dumps(matrix)  # plain JSON all the way down
