"""Doctor checks of the Python side: the interpreter, torch and torch_npu, against the version matrix."""

from __future__ import annotations

from typing import Optional

from ascend_compat.doctor.facts import Facts
from ascend_compat.doctor.matrix import matrix_rows, python_for_torch, rows_for_torch, rows_for_torch_npu
from ascend_compat.doctor.matrix import newest as _newest
from ascend_compat.doctor.result import Check
from ascend_compat.doctor.versions import PyVersion

__all__ = ["check_python", "check_torch", "check_torch_npu"]


def check_python(f: Facts) -> Check:
    v = f.p.python_version
    found = f"Python {v[0]}.{v[1]}.{v[2]}"
    why = "torch and torch_npu publish wheels for a few Python versions per release only."
    if (v[0], v[1]) < (3, 8):
        return Check("python", "Python", "error", found, why, "Use Python 3.9 or newer (3.10/3.11 suit most lines).")
    torch = f.torch
    allowed = python_for_torch(torch) if torch else None
    mine = f"{v[0]}.{v[1]}"
    if allowed is None:
        return Check("python", "Python", "ok", found, why, "", {"published_for_torch": None})
    if mine in allowed:
        return Check("python", "Python", "ok", f"{found} (torch {torch} lists {', '.join(allowed)})", why, "",
                     {"published_for_torch": allowed})
    return Check(
        "python", "Python", "warn",
        f"{found}; torch_npu with torch {torch} is published for Python {', '.join(allowed)}",
        why + " pip finds no torch_npu wheel for this Python, or an untested one.",
        f"Create an environment with Python {allowed[-1]} (or {allowed[0]}) for this torch line.",
        {"published_for_torch": allowed},
    )


def check_torch(f: Facts) -> Check:
    title = "PyTorch"
    why = ("torch_npu is built against one exact torch release, and on x86_64 against its CPU build "
           "(torch==X+cpu); a CUDA build carries CUDA libraries torch_npu never uses and can clash with it.")
    raw = f.torch
    if raw is None:
        return Check("torch", title, "error", "torch is not installed", why,
                     _torch_install_hint(f, None))
    v = PyVersion.try_parse(raw)
    if v is None:
        return Check("torch", title, "warn", f"torch {raw} (unparseable version)", why, "Reinstall torch from pypi.")
    details = {"version": raw, "build": v.local or None}
    if v.cuda_build:
        status = "error" if f.npu_machine else "warn"
        machine = "this NPU machine" if f.npu_machine else "an NPU machine"
        return Check("torch", title, status, f"torch {raw} is a {v.cuda_build} (GPU) build", why,
                     f"On {machine} install the CPU build torch_npu pins: {_torch_install_hint(f, v.public)}", details)
    return Check("torch", title, "ok", f"torch {raw}" + (" (CPU build)" if v.local == "cpu" else ""), why, "", details)


def _torch_install_hint(f: Facts, torch_public: Optional[str]) -> str:
    rows = rows_for_torch_npu(f.torch_npu) if f.torch_npu else (rows_for_torch(torch_public) if torch_public else [])
    row = _newest(rows) or _newest(matrix_rows(), key="cann")
    assert row is not None
    arch = "x86_64" if f.p.machine in ("x86_64", "AMD64") else "aarch64"
    req = row["torch_requirement"][arch]
    index = " --index-url https://download.pytorch.org/whl/cpu" if arch == "x86_64" else ""
    return f"pip install '{req}'{index}"


def check_torch_npu(f: Facts) -> Check:
    title = "torch_npu"
    why = "torch_npu is the PyTorch backend for Ascend; each release requires exactly one torch release."
    raw = f.torch_npu
    if raw is None:
        newest = _newest(rows_for_torch(f.torch), "cann") if f.torch else None
        if newest:
            fix = (f"pip install torch-npu=={newest['torch_npu']}  (the release for torch {newest['torch']}, "
                   f"paired with CANN {newest['cann']})")
        else:
            top = _newest(matrix_rows(), "cann")
            assert top is not None
            arch = "x86_64" if f.p.machine in ("x86_64", "AMD64") else "aarch64"
            fix = (f"torch {f.torch or '(none)'} has no torch_npu release; the newest pair is torch_npu "
                   f"{top['torch_npu']} + CANN {top['cann']}: pip install '{top['torch_requirement'][arch]}' "
                   f"torch-npu=={top['torch_npu']}"
                   + (" --extra-index-url https://download.pytorch.org/whl/cpu" if arch == "x86_64" else ""))
        return Check("torch_npu", title, "error", "torch_npu is not installed", why, fix)
    rows = rows_for_torch_npu(raw)
    v = PyVersion.try_parse(raw)
    torch = PyVersion.try_parse(f.torch) if f.torch else None
    if v is None:
        return Check("torch_npu", title, "warn", f"torch_npu {raw} (unparseable version)", why, "Reinstall torch_npu.")
    needed = rows[0]["torch"] if rows else v.base
    details = {"version": raw, "in_matrix": bool(rows), "requires_torch": needed}
    if torch is None:
        return Check("torch_npu", title, "error", f"torch_npu {raw}, but torch is missing", why,
                     _torch_install_hint(f, needed), details)
    if PyVersion.parse(torch.public).key != PyVersion.parse(needed).key:
        return Check("torch_npu", title, "error", f"torch_npu {raw} requires torch {needed}; torch is {f.torch}", why,
                     f"{_torch_install_hint(f, needed)}  (or install the torch_npu release built for torch "
                     f"{torch.public})", details)
    if not rows:
        return Check("torch_npu", title, "warn", f"torch_npu {raw} with torch {f.torch} (release not in the version "
                     "matrix: a development or newer build)", why,
                     "Prefer a release listed in Ascend/pytorch COMPATIBILITY.en.md.", details)
    return Check("torch_npu", title, "ok", f"torch_npu {raw} with torch {f.torch}", why, "", details)

