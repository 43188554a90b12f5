"""`ascend-compat doctor`: the checks on fake CANN install trees, fake `npu-smi` executables, and this machine.

Fake trees follow the documented layouts (ascend-toolkit/<version> with a `latest` link for CANN <= 8.3,
cann-<version> with a `cann` link for 8.5+, driver/ and firmware/ version.info, nnal/atb/latest). Package versions
are injected through the Probe (in-process) or through `.dist-info` directories on PYTHONPATH (subprocesses).
"""

from __future__ import annotations

import _ctypes
import json
import os
import shutil
import stat
import subprocess
import sys
from collections import namedtuple
from pathlib import Path
from typing import Optional

import pytest

from ascend_compat.cli.doctor import render
from ascend_compat.doctor import checks
from ascend_compat.doctor.checks import Probe, parse_npu_smi_info, run_checks

FIXTURES = Path(__file__).parent / "fixtures_doctor"
ASCEND = "usr/local/Ascend"
Usage = namedtuple("Usage", "total used free")
GiB = 1 << 30
#: A real shared library to stand in for CANN's (dlopen only needs a valid ELF of this machine).
REAL_SO = Path(_ctypes.__file__)


# --- fake machines ---------------------------------------------------------------------------------------------


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_toolkit(root: Path, version: str, layout: str = "legacy", inner: str = "V100R001C18SPC001B200",
                 kernels: bool = True, libs: str = "real") -> Path:
    """A CANN toolkit tree; returns its home (what set_env.sh exports as ASCEND_HOME_PATH)."""
    base = root / ASCEND
    if layout == "legacy":
        home = base / "ascend-toolkit" / version
        link = base / "ascend-toolkit" / "latest"
        write(base / "ascend-toolkit" / "set_env.sh", "export ASCEND_HOME_PATH=...\n")
    else:
        home = base / f"cann-{version}"
        link = base / "cann"
        write(home / "set_env.sh", "export ASCEND_HOME_PATH=...\n")
    write(home / "x86_64-linux" / "ascend_toolkit_install.info",
          f"package_name=Ascend-cann-toolkit\nversion={version}\ninnerversion={inner}\narch=x86_64\nos=linux\n"
          f"path={home}/x86_64-linux\n")
    write(home / "runtime" / "version.info", f"Version={version}\n")
    (home / "opp").mkdir(parents=True, exist_ok=True)
    if kernels:
        if layout == "legacy":
            write(home / "opp_kernel" / "version.info", f"Version={version}\n")
        else:
            write(home / "x86_64-linux" / "ascend_ops_install.info", f"package_name=Ascend-cann-910b-ops\n"
                                                                     f"version={version}\n")
    for name in ("libascendcl.so", "libhccl.so"):
        target = home / "lib64" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if libs == "real":
            shutil.copy(REAL_SO, target)
        elif libs == "broken":
            target.write_bytes(b"not an ELF file")
    link.symlink_to(home.name, target_is_directory=True)
    return link


def make_driver(root: Path, version: str = "24.1.rc2", compat: str = "[V100R001C15],[V100R001C17],[V100R001C18]",
                fw_range: str = "[7.0.0,7.5.99]") -> Path:
    write(root / ASCEND / "driver" / "version.info",
          f"Version={version}\nascendhal_version=7.35.19\nInnerversion=V100R001C18SPC001B233\n"
          f"compatible_version={compat}\ncompatible_version_fw={fw_range}\npackage_version={version}\n")
    hal = root / ASCEND / "driver" / "lib64" / "driver" / "libascend_hal.so"
    hal.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(REAL_SO, hal)
    return hal.parent


def make_firmware(root: Path, version: str = "7.5.0.1.129") -> None:
    write(root / ASCEND / "firmware" / "version.info", f"Version={version}\nfirmware_version=1.0\n")


def make_nnal(root: Path, version: str) -> Path:
    latest = root / ASCEND / "nnal" / "atb" / "latest"
    write(latest / "version.info", f"    Ascend-cann-atb : {version}\n    Ascend-cann-atb Version : {version}.B030\n")
    lib = latest / "atb" / "cxx_abi_0" / "lib" / "libatb.so"
    lib.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(REAL_SO, lib)
    return latest / "atb" / "cxx_abi_0"


def fake_npu_smi(bin_dir: Path, output: str, code: int = 0) -> Path:
    """An `npu-smi` that prints ``output`` for `npu-smi info` and exits with ``code``."""
    data = write(bin_dir / "npu-smi.out", output)
    script = write(bin_dir / "npu-smi", f'#!/bin/sh\n[ "$1" = info ] || exit 2\ncat "{data}"\nexit {code}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def sourced_env(toolkit: Path, driver_lib: Optional[Path] = None, **extra: str) -> dict[str, str]:
    """The variables set_env.sh exports for ``toolkit``."""
    ld = [str(toolkit / "lib64")] + ([str(driver_lib)] if driver_lib else [])
    env = {"ASCEND_HOME_PATH": str(toolkit), "ASCEND_TOOLKIT_HOME": str(toolkit),
           "ASCEND_OPP_PATH": str(toolkit / "opp"), "LD_LIBRARY_PATH": ":".join(ld)}
    env.update(extra)
    return env


def probe(root: Path, env: dict[str, str], torch: Optional[str] = "2.1.0+cpu",
          torch_npu: Optional[str] = "2.1.0.post6", free: int = 100 * GiB, **kw) -> Probe:
    env = {"PATH": str(root / "bin"), "HOME": str(root / "home"), **env}
    versions = {"torch": torch, "torch_npu": torch_npu}
    kw.setdefault("dist_version", lambda name: versions.get(name.replace("-", "_")))
    return Probe(root=root, env=env, machine="x86_64", python_version=(3, 10, 12),
                 disk_usage=lambda path: Usage(500 * GiB, 500 * GiB - free, free), **kw)


def by_id(results: list[checks.Check]) -> dict[str, checks.Check]:
    ids = [c.id for c in results]
    assert len(ids) == len(set(ids))
    return {c.id: c for c in results}


def _machine(tmp_path, npu_smi_output: str):
    """A host with CANN 8.0.RC2 sourced, its driver and firmware, and ``npu-smi`` printing the named fixture."""
    toolkit = make_toolkit(tmp_path, "8.0.RC2")
    driver_lib = make_driver(tmp_path)
    make_firmware(tmp_path)
    fake_npu_smi(tmp_path / "bin", (FIXTURES / npu_smi_output).read_text())
    return tmp_path, sourced_env(toolkit, driver_lib)


@pytest.fixture
def healthy(tmp_path):
    """An Atlas A2 host with CANN 8.0.RC2 sourced, torch_npu 2.1.0.post6 (its official pair) and 8 healthy NPUs."""
    return _machine(tmp_path, "npu_smi_info_910b.txt")


# --- a healthy machine -----------------------------------------------------------------------------------------


def test_healthy_machine_passes_every_check(healthy):
    root, env = healthy
    results = by_id(run_checks(probe(root, env), full=True))
    assert results.pop("cann_nnal").status == "skip"  # optional, not installed
    assert {k: c.status for k, c in results.items() if c.status != "ok"} == {}
    assert results["cann_toolkit"].details["version"] == "8.0.RC2"
    assert results["torch_npu_cann"].found == "torch_npu 2.1.0.post6 with CANN 8.0.RC2 (official pair)"
    assert "V100R001C18" in results["driver"].found
    assert results["npu_smi"].found.startswith("8 NPU(s), 8 chip(s): 910B3")
    assert results["libraries"].details["libascendcl.so"].startswith("loaded")


def test_quick_run_leaves_out_the_slow_checks(healthy):
    root, env = healthy
    ids = {c.id for c in run_checks(probe(root, env))}
    assert "libraries" not in ids and "npu_smi" not in ids
    assert {"python", "torch", "torch_npu", "cann_toolkit", "driver", "set_env", "hccl_timeout"} <= ids


def test_every_problem_says_what_why_and_fix(tmp_path):
    make_driver(tmp_path)
    env = {"ASCEND_RT_VISIBLE_DEVICES": "3,1", "HCCL_CONNECT_TIMEOUT": "abc"}
    for c in run_checks(probe(tmp_path, env, torch="2.1.0+cu121", free=GiB // 2), full=True):
        assert c.status in checks.STATUSES
        assert c.found and c.title
        if c.status in ("warn", "error"):
            assert c.why and c.fix, c


# --- CANN layouts and versions ---------------------------------------------------------------------------------


def test_cann_85_layout_found_at_default_location_without_set_env(tmp_path):
    make_toolkit(tmp_path, "8.5.0", layout="cann85")
    results = by_id(run_checks(probe(tmp_path, {}, torch="2.9.0+cpu", torch_npu="2.9.0")))
    tk = results["cann_toolkit"]
    assert tk.status == "ok" and tk.details["version"] == "8.5.0" and tk.details["how"].startswith("default")
    assert results["cann_kernels"].status == "ok"
    assert results["torch_npu_cann"].status == "ok"
    env_check = results["set_env"]
    assert env_check.status == "error"
    assert "ASCEND_HOME_PATH is not set" in env_check.found
    assert env_check.fix.startswith(f"source {tmp_path / ASCEND / 'cann' / 'set_env.sh'}")  # the documented link


def test_no_cann_is_an_error_and_dependent_checks_skip(tmp_path):
    results = by_id(run_checks(probe(tmp_path, {}), full=True))
    assert results["cann_toolkit"].status == "error"
    assert "CANN 8.0.RC2" in results["cann_toolkit"].fix  # what torch_npu 2.1.0.post6 was validated with
    for skipped in ("cann_kernels", "torch_npu_cann", "set_env", "libraries", "firmware", "npu_smi"):
        assert results[skipped].status == "skip", skipped
    assert results["driver"].status == "error"


def test_ascend_home_path_pointing_nowhere(tmp_path):
    results = by_id(run_checks(probe(tmp_path, {"ASCEND_HOME_PATH": str(tmp_path / "gone")})))
    assert results["cann_toolkit"].status == "error"
    assert f"ASCEND_HOME_PATH={tmp_path / 'gone'} does not exist" in results["cann_toolkit"].found


def test_missing_operator_package_and_mismatched_nnal(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.0.RC2", kernels=False)
    atb = make_nnal(tmp_path, "8.0.RC1")
    results = by_id(run_checks(probe(tmp_path, sourced_env(toolkit, ATB_HOME_PATH=str(atb)))))
    assert results["cann_kernels"].status == "warn"
    assert results["cann_nnal"].status == "warn"
    assert results["cann_nnal"].found == "NNAL 8.0.RC1 but toolkit 8.0.RC2"


def test_nnal_without_its_set_env(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.0.RC2")
    make_nnal(tmp_path, "8.0.RC2")
    driver_lib = make_driver(tmp_path)
    results = by_id(run_checks(probe(tmp_path, sourced_env(toolkit, driver_lib)), full=True))
    assert results["cann_nnal"].status == "warn"
    assert results["cann_nnal"].fix == f"source {tmp_path / ASCEND / 'nnal' / 'atb' / 'set_env.sh'}"
    assert results["libraries"].found == "cannot load libatb.so"
    assert f"source {tmp_path / ASCEND / 'nnal' / 'atb' / 'set_env.sh'}" in results["libraries"].fix


def test_matching_nnal_is_ok_and_adds_libatb(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.0.RC2")
    atb = make_nnal(tmp_path, "8.0.RC2")
    driver_lib = make_driver(tmp_path)
    env = sourced_env(toolkit, driver_lib, ATB_HOME_PATH=str(atb))
    env["LD_LIBRARY_PATH"] += f":{atb / 'lib'}"
    results = by_id(run_checks(probe(tmp_path, env), full=True))
    assert results["cann_nnal"].status == "ok"
    assert results["libraries"].status == "ok"
    assert "libatb.so" in results["libraries"].details


# --- torch, torch_npu and their pairing ------------------------------------------------------------------------


def test_cuda_torch_on_an_npu_machine_is_an_error(healthy):
    root, env = healthy
    result = by_id(run_checks(probe(root, env, torch="2.1.0+cu121")))["torch"]
    assert result.status == "error"
    assert "cu121" in result.found
    assert "torch==2.1.0+cpu" in result.fix and "download.pytorch.org/whl/cpu" in result.fix


def test_cuda_torch_without_any_ascend_software_is_only_a_warning(tmp_path):
    result = by_id(run_checks(probe(tmp_path, {}, torch="2.3.1+cu121", torch_npu=None)))["torch"]
    assert result.status == "warn"


def test_torch_npu_needs_its_exact_torch(healthy):
    root, env = healthy
    result = by_id(run_checks(probe(root, env, torch="2.2.0+cpu")))["torch_npu"]
    assert result.status == "error"
    assert "requires torch 2.1.0; torch is 2.2.0+cpu" in result.found
    assert "torch==2.1.0+cpu" in result.fix


def test_torch_npu_missing_suggests_the_release_for_installed_torch(tmp_path):
    result = by_id(run_checks(probe(tmp_path, {}, torch="2.6.0+cpu", torch_npu=None)))["torch_npu"]
    assert result.status == "error"
    assert result.fix.startswith("pip install torch-npu==2.6.0.post5")  # the newest 2.6.0 release (CANN 8.5.0)


@pytest.mark.parametrize(
    ("cann", "status", "fix_part"),
    [
        ("8.0.RC2", "ok", ""),
        ("8.0.RC1", "error", "torch-npu==2.1.0.post4"),  # older CANN than torch_npu was built for
        ("8.1.RC1", "warn", "torch-npu==2.1.0.post12"),  # newer CANN: untested; the line has a release for it
        ("8.0.RC10", "warn", "Install CANN 8.0.RC2"),  # no prefix matching: RC10 is not RC1
        ("8.0.RC2.1", "ok", ""),  # a patch release of the official pair
        ("8.0.RC2.1.2", "ok", ""),
    ],
)
def test_torch_npu_cann_pairing(tmp_path, cann, status, fix_part):
    toolkit = make_toolkit(tmp_path, cann)
    result = by_id(run_checks(probe(tmp_path, sourced_env(toolkit))))["torch_npu_cann"]
    assert result.status == status, result
    assert fix_part in result.fix


def test_cann_patch_release_of_the_validated_one_is_ok(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.2.RC1.1")
    result = by_id(run_checks(probe(tmp_path, sourced_env(toolkit), torch="2.6.0+cpu", torch_npu="2.6.0")))
    pairing = result["torch_npu_cann"]
    assert pairing.status == "ok", pairing
    assert "patch release of its official pair CANN 8.2.RC1" in pairing.found
    # The patch is of the release, not of every release of its series.
    toolkit = make_toolkit(tmp_path / "other", "8.2.RC2.1")
    result = by_id(run_checks(probe(tmp_path / "other", sourced_env(toolkit), torch="2.6.0+cpu", torch_npu="2.6.0")))
    assert result["torch_npu_cann"].status == "warn"


def test_older_cann_fix_names_the_release_once(tmp_path):
    # torch_npu 2.9.0 has one pair (CANN 8.5.0) and no release of its line for 8.3.RC1.
    toolkit = make_toolkit(tmp_path, "8.3.RC1")
    result = by_id(run_checks(probe(tmp_path, sourced_env(toolkit), torch="2.9.0+cpu", torch_npu="2.9.0")))
    pairing = result["torch_npu_cann"]
    assert pairing.status == "error", pairing
    assert pairing.fix == "Install CANN 8.5.0."


def test_torch_npu_release_not_in_matrix(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.0.RC2")
    results = by_id(run_checks(probe(tmp_path, sourced_env(toolkit), torch_npu="2.1.0.post99")))
    assert results["torch_npu"].status == "warn"
    assert results["torch_npu_cann"].status == "warn"
    assert "torch-npu==2.1.0.post6" in results["torch_npu_cann"].fix


def test_python_outside_the_published_range_warns(tmp_path):
    p = probe(tmp_path, {}, torch="2.2.0+cpu", torch_npu="2.2.0")
    p.python_version = (3, 12, 1)
    result = by_id(run_checks(p))["python"]
    assert result.status == "warn"
    assert "3.8, 3.9, 3.10" in result.found


# --- driver, firmware ------------------------------------------------------------------------------------------


def test_driver_that_does_not_list_the_cann_line(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.0.RC2", inner="V100R001C18SPC001B200")
    make_driver(tmp_path, compat="[V100R001C13],[V100R001C15]")
    result = by_id(run_checks(probe(tmp_path, sourced_env(toolkit))))["driver"]
    assert result.status == "warn"
    assert "V100R001C18" in result.found and "V100R001C13, V100R001C15" in result.found


def test_driver_compat_tokens_match_exactly(tmp_path):
    # V100R001C1 is a prefix of V100R001C18 but a different release line.
    toolkit = make_toolkit(tmp_path, "8.0.RC2", inner="V100R001C1SPC001B200")
    make_driver(tmp_path, compat="[V100R001C18]")
    assert by_id(run_checks(probe(tmp_path, sourced_env(toolkit))))["driver"].status == "warn"


@pytest.mark.parametrize("content", ["\x00\x01garbage\n", "Version=not-a-version\n", ""])
def test_unreadable_driver_version_file_warns(tmp_path, content):
    write(tmp_path / ASCEND / "driver" / "version.info", content)
    result = by_id(run_checks(probe(tmp_path, {})))["driver"]
    assert result.status == "warn", result
    assert "no readable Version" in result.found and "reinstall" in result.fix


@pytest.mark.parametrize(("fw", "status"), [("7.5.0.1.129", "ok"), ("7.0.0.5.242", "ok"), ("7.7.0.1.231", "error"),
                                            ("6.4.12.1.241", "error")])
def test_firmware_within_driver_range(tmp_path, fw, status):
    make_driver(tmp_path, fw_range="[7.0.0,7.5.99]")
    make_firmware(tmp_path, fw)
    assert by_id(run_checks(probe(tmp_path, {})))["firmware"].status == status


def test_unreadable_firmware_version_warns(tmp_path):
    make_driver(tmp_path, fw_range="[7.0.0,7.5.99]")
    write(tmp_path / ASCEND / "firmware" / "version.info", "Version=garbage\n")
    result = by_id(run_checks(probe(tmp_path, {})))["firmware"]
    assert result.status == "warn" and "no readable Version" in result.found, result


# --- environment, libraries ------------------------------------------------------------------------------------


def test_set_env_not_sourced_names_each_missing_piece(healthy):
    root, env = healthy
    del env["ASCEND_OPP_PATH"]
    env["LD_LIBRARY_PATH"] = "/usr/lib"
    result = by_id(run_checks(probe(root, env)))["set_env"]
    assert result.status == "error"
    assert "ASCEND_OPP_PATH is not set" in result.found and "LD_LIBRARY_PATH does not contain" in result.found
    assert result.fix.startswith(f"source {root / ASCEND / 'ascend-toolkit' / 'set_env.sh'}")


def test_library_not_on_ld_library_path(healthy):
    root, env = healthy
    env["LD_LIBRARY_PATH"] = env["LD_LIBRARY_PATH"].split(":")[1]  # only the driver directory
    result = by_id(run_checks(probe(root, env), full=True))["libraries"]
    assert result.status == "error"
    assert result.found == "cannot load libascendcl.so, libhccl.so"
    assert "exists at" in result.fix and "set_env.sh" in result.fix


def test_library_that_exists_but_does_not_load(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.0.RC2", libs="broken")
    driver_lib = make_driver(tmp_path)
    result = by_id(run_checks(probe(tmp_path, sourced_env(toolkit, driver_lib)), full=True))["libraries"]
    assert result.status == "error"
    assert "libascendcl.so" in result.found
    assert "does not load" in result.fix
    assert result.details["libascend_hal.so"].startswith("loaded")


def test_missing_driver_library_names_the_driver_directory(healthy):
    root, env = healthy
    env["LD_LIBRARY_PATH"] = env["LD_LIBRARY_PATH"].split(":")[0]
    result = by_id(run_checks(probe(root, env), full=True))["libraries"]
    assert result.found == "cannot load libascend_hal.so"
    assert str(root / ASCEND / "driver" / "lib64" / "driver") in result.fix


def compile_library(path: Path, body: str) -> Path:
    """A real shared library whose constructor runs ``body`` (C), built with the system C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a misbehaving shared library")
    source = write(path.with_suffix(".c"), "#include <stdlib.h>\n#include <unistd.h>\n"
                   f"__attribute__((constructor)) static void init(void) {{ {body} }}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(path), str(source)], check=True, capture_output=True)
    return path


def test_library_whose_constructor_aborts_is_reported_not_suffered(tmp_path):
    toolkit = make_toolkit(tmp_path, "8.0.RC2")
    compile_library(tmp_path / "build" / "libascendcl.so", "abort();")
    shutil.copy(tmp_path / "build" / "libascendcl.so", toolkit / "lib64" / "libascendcl.so")
    driver_lib = make_driver(tmp_path)
    # In this process: without the loader subprocess the abort would end the test run here.
    result = by_id(run_checks(probe(tmp_path, sourced_env(toolkit, driver_lib)), full=True))["libraries"]
    assert result.status == "error"
    assert result.found == "cannot load libascendcl.so (SIGABRT)"
    assert "SIGABRT" in result.details["libascendcl.so"]
    assert str(toolkit / "lib64" / "libascendcl.so") in result.fix
    # The libraries after the crashing one are still tried.
    assert result.details["libhccl.so"].startswith("loaded") and result.details["libascend_hal.so"].startswith("loaded")


@pytest.mark.slow
def test_library_loader_survives_crashes_and_hangs(tmp_path):
    crash = compile_library(tmp_path / "libcrash.so", "abort();")
    hang = compile_library(tmp_path / "libhang.so", "sleep(600);")
    results = checks._load_libraries([str(crash), str(REAL_SO), str(hang), str(tmp_path / "missing.so")], timeout=3)
    assert "SIGABRT" in results[str(crash)]
    assert results[str(REAL_SO)] is None
    assert "did not finish within 3 s" in results[str(hang)]
    assert "missing.so" in results[str(tmp_path / "missing.so")]  # the loader's own message


# --- npu-smi ---------------------------------------------------------------------------------------------------


def test_parse_recorded_npu_smi_output():
    report = parse_npu_smi_info((FIXTURES / "npu_smi_info_910b.txt").read_text())
    assert report.version == "24.1.rc2"
    assert [c.npu for c in report.chips] == list(range(8))
    assert {c.name for c in report.chips} == {"910B3"}
    assert report.chips[2].bus_id == "0000:81:00.0"
    assert (report.chips[0].memory_used_mb, report.chips[0].memory_total_mb, report.chips[0].memory_kind) == (
        3300, 65536, "HBM")


def test_parse_atlas_a3_npu_smi_output():
    # A3 / 910C: two chips per card, and the chip row carries a second id ("Chip Phy-ID").
    report = parse_npu_smi_info((FIXTURES / "npu_smi_info_a3.txt").read_text())
    assert report.version == "25.2.rc1"
    assert [(c.npu, c.chip, c.phy_id) for c in report.chips] == [(n, c, 2 * n + c) for n in range(4) for c in (0, 1)]
    assert report.chips[3].bus_id == "0000:9B:00.0"
    assert (report.chips[3].memory_used_mb, report.chips[3].memory_total_mb) == (3366, 65536)
    # The A2 layout has no second id.
    assert parse_npu_smi_info((FIXTURES / "npu_smi_info_910b.txt").read_text()).chips[0].phy_id is None


@pytest.fixture
def atlas_a3(tmp_path):
    return _machine(tmp_path, "npu_smi_info_a3.txt")


def test_atlas_a3_machine_lists_its_npus_and_chips(atlas_a3):
    root, env = atlas_a3
    result = by_id(run_checks(probe(root, env), full=True))["npu_smi"]
    assert result.status == "ok", result
    assert result.found == "4 NPU(s), 8 chip(s): Ascend910, all health OK"


@pytest.mark.parametrize(("ids", "status"), [("5", "ok"), ("0,7", "ok"), ("6,8", "error")])
def test_visible_devices_count_chips_not_cards(atlas_a3, ids, status):
    # The runtime's logical device ids are per chip: 4 A3 cards are devices 0-7.
    root, env = atlas_a3
    result = by_id(run_checks(probe(root, {**env, "ASCEND_RT_VISIBLE_DEVICES": ids}), full=True))["visible_devices"]
    assert result.status == status, result
    if status == "error":
        assert "npu-smi lists 8 chip(s)" in result.found and "below 8" in result.fix


def test_npu_smi_printing_bytes_that_are_not_utf8(tmp_path):
    make_driver(tmp_path)
    script = fake_npu_smi(tmp_path / "bin", "")
    (tmp_path / "bin" / "npu-smi.out").write_bytes(b"\xff\xfe\x80garbage \xc3(\n")
    result = by_id(run_checks(probe(tmp_path, {}), full=True))["npu_smi"]
    assert result.status == "error", result
    assert "unreadable output" in result.found and "4 byte(s)" in result.found
    assert str(script) in result.fix


def test_unhealthy_chip_is_an_error(tmp_path):
    make_driver(tmp_path)
    fake_npu_smi(tmp_path / "bin", (FIXTURES / "npu_smi_info_alarm.txt").read_text())
    result = by_id(run_checks(probe(tmp_path, {}), full=True))["npu_smi"]
    assert result.status == "error"
    assert "NPU 1 chip 0 Alarm" in result.found


def test_device_memory_taken_by_another_process_warns(tmp_path):
    make_driver(tmp_path)
    text = (FIXTURES / "npu_smi_info_alarm.txt").read_text().replace("Alarm", "OK   ")
    fake_npu_smi(tmp_path / "bin", text)
    result = by_id(run_checks(probe(tmp_path, {}), full=True))["npu_smi"]
    assert result.status == "warn"
    assert "NPU 0 60210/65536 MB" in result.found


def test_failing_npu_smi_reports_its_message(tmp_path):
    make_driver(tmp_path)
    fake_npu_smi(tmp_path / "bin", "dcmi module initialize failed. ret is -8005\n", code=255)
    result = by_id(run_checks(probe(tmp_path, {}), full=True))["npu_smi"]
    assert result.status == "error"
    assert "exit 255" in result.found and "ret is -8005" in result.found


def test_npu_smi_absent_with_a_driver_is_an_error(tmp_path):
    make_driver(tmp_path)
    assert by_id(run_checks(probe(tmp_path, {}), full=True))["npu_smi"].status == "error"


# --- variables, disk -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "status", "fix_part"),
    [
        ({}, "ok", ""),
        ({"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, "ok", ""),
        ({"ASCEND_RT_VISIBLE_DEVICES": "2,0"}, "warn", "ASCEND_RT_VISIBLE_DEVICES=0,2"),
        ({"ASCEND_RT_VISIBLE_DEVICES": "0,0"}, "error", "ASCEND_RT_VISIBLE_DEVICES=0"),
        ({"ASCEND_RT_VISIBLE_DEVICES": "npu0"}, "error", "comma-separated"),
        ({"CUDA_VISIBLE_DEVICES": "1,2"}, "warn", "export ASCEND_RT_VISIBLE_DEVICES=1,2"),
        ({"ASCEND_RT_VISIBLE_DEVICES": "0,9"}, "error", "below 8"),  # npu-smi lists 8
        ({"ASCEND_RT_VISIBLE_DEVICES": ""}, "warn", "unset ASCEND_RT_VISIBLE_DEVICES"),  # no device visible
        ({"ASCEND_RT_VISIBLE_DEVICES": " "}, "warn", "unset ASCEND_RT_VISIBLE_DEVICES"),
        ({"ASCEND_RT_VISIBLE_DEVICES": "\u0663"}, "error", "comma-separated"),  # ARABIC-INDIC DIGIT THREE
        ({"ASCEND_RT_VISIBLE_DEVICES": "0,\uff11"}, "error", "comma-separated"),  # FULLWIDTH DIGIT ONE
    ],
)
def test_visible_devices(healthy, env, status, fix_part):
    root, base = healthy
    result = by_id(run_checks(probe(root, {**base, **env}), full=True))["visible_devices"]
    assert result.status == status, result
    assert fix_part in result.fix


@pytest.mark.parametrize(
    ("env", "status"),
    [({}, "ok"), ({"HCCL_CONNECT_TIMEOUT": "1200"}, "ok"), ({"HCCL_CONNECT_TIMEOUT": "12oo"}, "error"),
     ({"HCCL_CONNECT_TIMEOUT": "\u0661\u0662\u0660\u0660"}, "error"),
     ({"HCCL_CONNECT_TIMEOUT": "60"}, "warn"), ({"HCCL_CONNECT_TIMEOUT": "9000"}, "warn"),
     ({"RANK_TABLE_FILE": "/etc/rank.json"}, "warn"),
     ({"RANK_TABLE_FILE": "/etc/rank.json", "HCCL_CONNECT_TIMEOUT": "200"}, "warn"),
     ({"RANK_TABLE_FILE": "/etc/rank.json", "HCCL_CONNECT_TIMEOUT": "600"}, "ok")],
)
def test_hccl_connect_timeout(tmp_path, env, status):
    assert by_id(run_checks(probe(tmp_path, env)))["hccl_timeout"].status == status


@pytest.mark.parametrize(("free", "status"), [(100 * GiB, "ok"), (3 * GiB, "warn"), (GiB // 4, "error")])
def test_kernel_cache_disk_space(tmp_path, free, status):
    cache = tmp_path / "cache"
    cache.mkdir()
    result = by_id(run_checks(probe(tmp_path, {"ASCEND_CACHE_PATH": str(cache / "not-yet")}, free=free)))
    assert result["disk_cache"].status == status
    assert result["disk_cache"].details["path"] == str(cache)  # the nearest existing directory


def test_one_broken_check_does_not_stop_the_others(healthy):
    root, env = healthy

    def broken(name):  # a fault: package metadata that raises
        raise RuntimeError("corrupt METADATA")

    results = by_id(run_checks(probe(root, env, dist_version=broken)))
    assert results["torch"].status == "error" and "corrupt METADATA" in results["torch"].found
    assert results["torch"].found.startswith("the check itself failed")
    assert results["driver"].status == results["set_env"].status == results["hccl_timeout"].status == "ok"
    assert len(results) == len(checks.CHECKS) - 2


def test_render_colours_only_when_asked(healthy):
    root, env = healthy
    p = probe(root, env)
    results = run_checks(p)
    environment = checks.environment(p)
    assert "\033[" in render(results, environment, color=True)
    plain = render(results, environment, color=False)
    assert "\033[" not in plain
    assert "```text\n" in plain and "cann_toolkit: 8.0.RC2" in plain


# --- the CLI in subprocesses -----------------------------------------------------------------------------------


def fake_site(path: Path, **dists: str) -> Path:
    """Installed-package metadata (``name-version.dist-info``) that importlib.metadata finds first on sys.path."""
    for name, version in dists.items():
        write(path / f"{name}-{version}.dist-info" / "METADATA",
              f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return path


def doctor(*args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "HCCL_", "ATB_"))
                or k == "ASCEND_COMPAT_CACHE_DIR"}
    full_env.pop("CUDA_VISIBLE_DEVICES", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "ascend_compat", "doctor", *args], capture_output=True, text=True,
                          env=full_env, timeout=120)


@pytest.mark.skipif(Path("/usr/local/Ascend").exists(), reason="this machine has Ascend software installed")
def test_cli_on_this_machine_without_cann_exits_1():
    proc = doctor("--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema_version"] == 1 and doc["exit_code"] == 1
    results = {c["id"]: c for c in doc["checks"]}
    assert results["cann_toolkit"]["status"] == "error"
    assert doc["summary"]["error"] == sum(c["status"] == "error" for c in doc["checks"]) >= 1
    assert all(set(c) >= {"id", "status", "found", "why", "fix"} for c in doc["checks"])
    text = doctor(env={"NO_COLOR": "1"})
    assert text.returncode == 1
    assert "ERROR CANN toolkit" in text.stdout and "fix: " in text.stdout and "\033[" not in text.stdout


def test_cli_healthy_fake_machine_exits_0_and_strict_fails_on_warnings(tmp_path):
    toolkit = make_toolkit(tmp_path, "9.1.0", layout="cann85")
    driver_lib = make_driver(tmp_path)
    make_firmware(tmp_path)
    fake_npu_smi(tmp_path / "bin", (FIXTURES / "npu_smi_info_910b.txt").read_text())
    site = fake_site(tmp_path / "site", torch="2.12.0+cpu", torch_npu="2.12.0")
    env = sourced_env(toolkit, driver_lib, PYTHONPATH=f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                      HOME=str(tmp_path), PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    proc = doctor("--root", str(tmp_path), "--json", "--full", env=env)
    doc = json.loads(proc.stdout)
    statuses = {c["id"]: c["status"] for c in doc["checks"]}
    assert proc.returncode == 0, statuses
    assert doc["environment"]["torch_npu"] == "2.12.0" and doc["environment"]["cann_toolkit"] == "9.1.0"
    assert statuses["torch_npu_cann"] == statuses["npu_smi"] == statuses["libraries"] == "ok"
    # A warning alone exits 0, and 1 under --strict.
    env["HCCL_CONNECT_TIMEOUT"] = "60"
    assert doctor("--root", str(tmp_path), env=env).returncode == 0
    assert doctor("--root", str(tmp_path), "--strict", env=env).returncode == 1
    block = doctor("--root", str(tmp_path), "--env-block", env=env)
    assert block.returncode == 0
    assert block.stdout.startswith("```text\n") and block.stdout.rstrip().endswith("```")
    assert "HCCL_CONNECT_TIMEOUT=60" in block.stdout and "cann_toolkit: 9.1.0" in block.stdout
