"""Doctor checks of the CANN software: toolkit, operator package, NNAL, the torch_npu pairing and set_env.sh."""

from __future__ import annotations

import os
from pathlib import Path

from ascend_compat.doctor.facts import Facts, ld_dirs, set_env_script
from ascend_compat.doctor.matrix import matrix_rows, rows_for_torch, rows_for_torch_npu
from ascend_compat.doctor.matrix import newest as _newest
from ascend_compat.doctor.result import Check
from ascend_compat.doctor.versions import CannVersion, PyVersion

__all__ = ["check_cann_kernels", "check_cann_nnal", "check_cann_toolkit", "check_set_env", "check_torch_npu_cann"]


def check_cann_toolkit(f: Facts) -> Check:
    title = "CANN toolkit"
    why = "The CANN toolkit provides the runtime (ACL), HCCL and operator libraries torch_npu loads at import."
    expected = _newest(rows_for_torch_npu(f.torch_npu)) if f.torch_npu else None
    if expected:
        want = f"CANN {expected['cann']} (the release torch_npu {f.torch_npu} was validated with)"
    else:
        top = _newest(matrix_rows(), "cann")
        want = "the CANN release paired with your torch_npu" + (
            f" (newest pair: CANN {top['cann']} with torch_npu {top['torch_npu']})" if top else "")
    tk = f.toolkit
    if tk is None:
        return Check("cann_toolkit", title, "error", "no CANN toolkit (looked at $ASCEND_HOME_PATH, "
                     "$ASCEND_TOOLKIT_HOME, /usr/local/Ascend/ascend-toolkit/latest, /usr/local/Ascend/cann, "
                     "~/Ascend)", why, f"Install {want} (toolkit + ops/kernels package), then source set_env.sh.")
    if not tk.home.is_dir():
        return Check("cann_toolkit", title, "error", f"{tk.missing_env_dir} does not exist", why,
                     f"Point the variable at an installed toolkit (source its set_env.sh) or install {want}.")
    details = {"home": str(tk.home), "how": tk.how, "version": tk.version, "version_file":
               str(tk.version_file) if tk.version_file else None, "innerversion": tk.inner_version}
    found = f"CANN {tk.version or '(unknown version)'} at {tk.home} ({tk.how})"
    if tk.missing_env_dir:
        return Check("cann_toolkit", title, "warn", f"{found}; but {tk.missing_env_dir} does not exist", why,
                     f"Fix or unset the variable: source {set_env_script(f)}", details)
    if tk.version is None or f.toolkit_version is None:
        return Check("cann_toolkit", title, "warn", found + " - no readable version file", why,
                     "Reinstall the toolkit; its version is normally in <arch>-linux/ascend_toolkit_install.info.",
                     details)
    return Check("cann_toolkit", title, "ok", found, why, "", details)


def check_cann_kernels(f: Facts) -> Check:
    title = "CANN operator package"
    why = ("Prebuilt operator binaries (the kernels / ops package) must match the toolkit; without them operators "
           "are compiled at first use (slow) or are missing.")
    if not f.toolkit_found:
        return Check("cann_kernels", title, "skip", "no CANN toolkit", why)
    k = f.kernels
    if k is None:
        return Check("cann_kernels", title, "warn", "no operator package found next to the toolkit", why,
                     "Install the Ascend-cann-kernels-<chip> (CANN 8.5+: Ascend-cann-<chip>-ops) package of the same "
                     "version as the toolkit.")
    path, version = k
    tv = f.toolkit_version
    kv = CannVersion.try_parse(version)
    if tv is not None and kv is not None and kv != tv:
        return Check("cann_kernels", title, "warn", f"operator package {version} but toolkit {tv}", why,
                     f"Install the operator package for CANN {tv}.", {"file": path, "version": version})
    return Check("cann_kernels", title, "ok", f"operator package {version or '(version unknown)'}", why, "",
                 {"file": path, "version": version})


def check_cann_nnal(f: Facts) -> Check:
    title = "CANN NNAL (ATB)"
    why = "NNAL's ATB library backs fused transformer operators used by vllm-ascend, MindIE and some torch_npu ops."
    n = f.nnal
    if n is None:
        return Check("cann_nnal", title, "skip", "NNAL not installed (optional)", why,
                     "Only if you need ATB: install Ascend-cann-nnal of the toolkit's version and source "
                     "/usr/local/Ascend/nnal/atb/set_env.sh.")
    path, version = n
    details = {"path": str(path), "version": version}
    tv = f.toolkit_version
    nv = CannVersion.try_parse(version)
    if nv is None:
        return Check("cann_nnal", title, "warn", f"NNAL at {path} without a readable version.info", why,
                     "Reinstall NNAL.", details)
    if tv is not None and nv != tv:
        return Check("cann_nnal", title, "warn", f"NNAL {version} but toolkit {tv}", why,
                     f"Install NNAL {tv} (NNAL must match the toolkit release).", details)
    if not f.p.env.get("ATB_HOME_PATH"):
        return Check("cann_nnal", title, "warn", f"NNAL {version} at {path}, but ATB_HOME_PATH is not set", why,
                     f"source {path.parent / 'set_env.sh'}", details)
    return Check("cann_nnal", title, "ok", f"NNAL {version} at {path}", why, "", details)


def check_torch_npu_cann(f: Facts) -> Check:
    title = "torch_npu and CANN pairing"
    why = ("Each torch_npu release is validated with one CANN release; an older CANN lacks APIs torch_npu calls "
           "(undefined symbols, missing operators), a newer one is untested.")
    if f.torch_npu is None:
        return Check("torch_npu_cann", title, "skip", "torch_npu not installed", why)
    tv = f.toolkit_version
    if tv is None:
        return Check("torch_npu_cann", title, "skip", "CANN version unknown", why)
    rows = rows_for_torch_npu(f.torch_npu)
    torch_npu = PyVersion.try_parse(f.torch_npu)
    line_rows = rows_for_torch(torch_npu.base) if torch_npu else []
    for_my_cann = [r for r in line_rows if CannVersion.parse(r["cann"]) == tv]
    alt = _newest(for_my_cann)
    alt_fix = f"pip install torch-npu=={alt['torch_npu']} (its release for CANN {tv})" if alt else ""
    details = {"torch_npu": f.torch_npu, "cann": str(tv), "paired_cann": sorted({r["cann"] for r in rows})}
    if not rows:
        if alt:
            return Check("torch_npu_cann", title, "warn", f"torch_npu {f.torch_npu} is not in the matrix; CANN {tv}",
                         why, alt_fix, details)
        return Check("torch_npu_cann", title, "warn", f"torch_npu {f.torch_npu} / CANN {tv}: no published pairing",
                     why, "Use a combination from Ascend/pytorch COMPATIBILITY.en.md.", details)
    paired = [CannVersion.parse(r["cann"]) for r in rows]
    if tv in paired:
        return Check("torch_npu_cann", title, "ok", f"torch_npu {f.torch_npu} with CANN {tv} (official pair)", why,
                     "", details)
    base = next((c for c in paired if _is_patch_of(tv, c)), None)
    if base is not None:
        return Check("torch_npu_cann", title, "ok", f"torch_npu {f.torch_npu} with CANN {tv} (a patch release of its "
                     f"official pair CANN {base})", why, "", details)
    want = max(paired)
    if tv < min(paired):
        return Check("torch_npu_cann", title, "error",
                     f"CANN {tv} is older than the CANN {want} torch_npu {f.torch_npu} was built for", why,
                     f"{alt_fix}; or install CANN {want}." if alt else f"Install CANN {want}.", details)
    return Check("torch_npu_cann", title, "warn",
                 f"torch_npu {f.torch_npu} was validated with CANN {want}, found CANN {tv}", why,
                 f"{alt_fix}." if alt else f"Install CANN {want}, or the torch_npu release paired with CANN {tv}.",
                 details)


def _is_patch_of(version: CannVersion, release: CannVersion) -> bool:
    """``8.2.RC1.1`` is a patch of ``8.2.RC1`` (same release, extra trailing numbers); nothing is a patch of itself."""
    extra, base_extra = version.key[5], release.key[5]
    return (version.key[:5] == release.key[:5] and len(extra) > len(base_extra)
            and extra[:len(base_extra)] == base_extra)



def _same_dir(a: str, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(str(b))
    except OSError:
        return False


def check_set_env(f: Facts) -> Check:
    title = "CANN environment (set_env.sh)"
    why = ("set_env.sh exports ASCEND_HOME_PATH, ASCEND_OPP_PATH and puts the toolkit's lib64 on LD_LIBRARY_PATH; "
           "without it `import torch_npu` fails to find libhccl.so / libascendcl.so or the operator packages.")
    if not f.toolkit_found or f.toolkit is None:
        return Check("set_env", title, "skip", "no CANN toolkit", why)
    env = f.p.env
    problems = []
    home = env.get("ASCEND_HOME_PATH")
    if not home:
        problems.append("ASCEND_HOME_PATH is not set")
    elif not Path(home).is_dir():
        problems.append(f"ASCEND_HOME_PATH={home} does not exist")
    opp = env.get("ASCEND_OPP_PATH")
    if not opp:
        problems.append("ASCEND_OPP_PATH is not set")
    elif not Path(opp).is_dir():
        problems.append(f"ASCEND_OPP_PATH={opp} does not exist")
    lib64 = f.toolkit.home / "lib64"
    if not any(_same_dir(d, lib64) for d in ld_dirs(f)):
        problems.append(f"LD_LIBRARY_PATH does not contain {lib64}")
    details = {k: env.get(k) for k in ("ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_TOOLKIT_HOME")}
    if problems:
        return Check("set_env", title, "error", "; ".join(problems), why,
                     f"source {set_env_script(f)}  (add it to ~/.bashrc or the container entrypoint)", details)
    return Check("set_env", title, "ok", "ASCEND_HOME_PATH, ASCEND_OPP_PATH and LD_LIBRARY_PATH are set", why, "",
                 details)
