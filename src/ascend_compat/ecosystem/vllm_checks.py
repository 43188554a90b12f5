"""The installation checks of the vLLM readiness report (:mod:`ascend_compat.ecosystem.vllm`): vllm and
vllm-ascend installed, torch / torch_npu / Python as the published pair names them, the pair itself, and vLLM's
Ascend platform plugin. Each returns :class:`Check` values; nothing here imports vllm, vllm_ascend or torch.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from ascend_compat import settings
from ascend_compat.ecosystem.pep440 import in_spec, public_version, version_key
from ascend_compat.ecosystem.vllm_data import Release, _table_range, load_table, newest_final, releases_for_vllm

OK, WARN, ERROR, SKIP = "ok", "warn", "error", "skip"
STATUSES = (OK, WARN, ERROR, SKIP)


@dataclass
class Check:
    """One line of the report: what was looked at, how it stands, what was found and what to do."""

    id: str
    status: str  # one of STATUSES
    found: str
    fix: str = ""  # what to do about a warn / error
    note: str = ""  # more about what was found (no action needed)
    source: str = ""  # where the fact the status rests on comes from


def platform_entry_points(group: str) -> list[dict[str, str]]:
    """The entry points of ``group`` (name, value, distribution), read from metadata without loading them."""
    try:
        eps = importlib.metadata.entry_points(group=group)
    except TypeError:  # Python 3.9: entry_points() takes no arguments
        eps = importlib.metadata.entry_points().get(group, [])  # type: ignore[attr-defined,arg-type,unused-ignore]
    out = []
    for ep in eps:
        dist = getattr(ep, "dist", None)
        out.append({"name": ep.name, "value": ep.value, "distribution": dist.metadata["Name"] if dist else ""})
    return out


def _install_line(row: Release) -> str:
    cmds = load_table()["install"]["commands"]
    line = ", then ".join(c.format(vllm=row["vllm"][0], vllm_ascend=row["vllm_ascend"]) for c in cmds)
    return (f"{line} (CANN {row['cann']}, torch {row['torch']}, torch_npu {row['torch_npu']}; "
            f"{load_table()['install']['docs']})")


def _same(a: Optional[str], b: str) -> bool:
    return a is not None and version_key(a) is not None and version_key(a) == version_key(b)


def _release_tuple(text: str) -> tuple[int, ...]:
    key = version_key(text)
    rel = getattr(key, "release", None)
    if rel is None:  # the fallback key: (release padded with zeros, ...)
        rel = key[0] if key else ()
    rel = tuple(rel)
    while len(rel) > 1 and rel[-1] == 0:
        rel = rel[:-1]
    return rel


def _package_checks(v: Mapping[str, Optional[str]], row: Optional[Release]) -> list[Check]:
    src = row["source"] if row else load_table()["install"]["source"]
    vllm, va = v["vllm"], v["vllm_ascend"]
    checks = []
    if vllm:
        checks.append(Check("vllm", OK, vllm))
    elif va:
        want = row["vllm"][0] if row else public_version(va)
        checks.append(Check("vllm", ERROR, "not installed", fix=f"pip install vllm=={want} (the vLLM that vllm-ascend "
                            f"{va} is published with)", source=src))
    else:
        checks.append(Check("vllm", ERROR, "not installed", fix="install it together with vllm-ascend (next line)",
                            source=src))
    if va:
        checks.append(Check("vllm-ascend", OK, va))
    else:
        paired = releases_for_vllm(vllm) if vllm else []
        if paired:
            fix = f"pip install vllm-ascend=={paired[0]['vllm_ascend']} (published for vllm {vllm})"
        elif vllm:
            fix = (f"no vllm-ascend release is published for vllm {vllm}; install a published pair: "
                   + _install_line(newest_final()))
        else:
            fix = "install the newest published pair: " + _install_line(newest_final())
        what = "not installed: vLLM has no Ascend platform without it" if vllm else "not installed (nor is vllm)"
        checks.append(Check("vllm-ascend", ERROR, what, fix=fix, source=src))
    return checks


def _torch_checks(v: Mapping[str, Optional[str]], row: Optional[Release]) -> list[Check]:
    torch, npu, va = v["torch"], v["torch_npu"], v["vllm_ascend"]
    src = row["source"] if row else ""
    checks = []
    if not torch:
        status = ERROR if va else SKIP
        fix = f"pip install torch=={row['torch']}" if row else ("install the torch your torch_npu release pins" if va
                                                                 else "")
        checks.append(Check("torch", status, "not installed", fix=fix, source=src))
    elif row and not _same(torch, row["torch"]):
        checks.append(Check("torch", WARN, f"{torch}; vllm-ascend {row['vllm_ascend']} is published with torch "
                            f"{row['torch']}", fix=f"pip install torch=={row['torch']} (the CPU build: torch_npu "
                            "runs on it)", source=src))
    else:
        checks.append(Check("torch", OK if va else SKIP, torch + (" (as published)" if row else ""), source=src))
    if not npu:
        checks.append(Check("torch_npu", ERROR if va else SKIP, "not installed" + (": vllm-ascend needs it" if va
                            else ""), fix=f"pip install torch-npu=={row['torch_npu']}" if row else "", source=src))
    elif torch and _release_tuple(npu) != _release_tuple(torch):
        # torch_npu X.Y.Z is built against torch X.Y.Z exactly (it pins it); anything else fails on import.
        checks.append(Check("torch_npu", ERROR, f"{npu} needs torch {'.'.join(map(str, _release_tuple(npu)))}, "
                            f"found torch {torch}", fix="install the torch version torch_npu pins (or the "
                            "torch_npu release built for your torch)",
                            source="Ascend/pytorch README (each torch_npu release is built for one torch version)"))
    elif row and not _same(npu, row["torch_npu"]):
        checks.append(Check("torch_npu", WARN, f"{npu}; vllm-ascend {row['vllm_ascend']} is published with torch_npu "
                            f"{row['torch_npu']}", fix=f"pip install torch-npu=={row['torch_npu']}", source=src))
    else:
        checks.append(Check("torch_npu", OK if va else SKIP, npu + (" (as published)" if row else ""), source=src))
    return checks


def _python_check(v: Mapping[str, Optional[str]], row: Optional[Release]) -> Check:
    py = v["python"] or ""
    if row is None:
        return Check("python", SKIP, py)
    if in_spec(py, row["python"]):
        return Check("python", OK, f"{py} (vllm-ascend {row['vllm_ascend']} supports Python {row['python']})",
                     source=row["source"])
    return Check("python", WARN, f"{py}; vllm-ascend {row['vllm_ascend']} supports Python {row['python']}",
                 fix=f"use a Python in {row['python']}", source=row["source"])


def _pair_check(v: Mapping[str, Optional[str]], row: Optional[Release]) -> Check:
    vllm, va = v["vllm"], v["vllm_ascend"]
    if not (vllm and va):
        return Check("pair", SKIP, "needs both vllm and vllm-ascend")
    if row is not None:
        if any(_same(vllm, x) for x in row["vllm"]):
            note = f"published with CANN {row['cann']} (the CANN toolkit on the host is not checked)"
            if row.get("note"):
                note += "; " + row["note"]
            return Check("pair", OK, f"vllm-ascend {va} + vllm {vllm}: a published pair", note=note,
                         source=row["source"])
        others = releases_for_vllm(vllm)
        fix = f"pip install vllm=={row['vllm'][0]}"
        if others:
            fix += f", or vllm-ascend=={others[0]['vllm_ascend']} (published for vllm {vllm})"
        return Check("pair", ERROR, f"vllm-ascend {va} is published for vllm {' / '.join(row['vllm'])}, found vllm "
                     f"{vllm}", fix=fix, source=row["source"])
    key = version_key(va)
    src = "vllm-project/vllm-ascend docs/source/community/versioning_policy.md"
    if key is None or "dev" in va or "+" in va:
        return Check("pair", WARN, f"vllm-ascend {va} is a development build: the matrix covers releases only",
                     fix="for a main-branch build use the vLLM commit in vllm-ascend's "
                     ".github/vllm-main-verified.commit", source=src)
    same = _release_tuple(vllm) == _release_tuple(va)
    return Check("pair", WARN, f"vllm-ascend {va} is not in ascend-compat's table ({_table_range()})",
                 note="vllm has the same version number, as vllm-ascend asks" if same else "",
                 fix="check vllm-ascend's release compatibility matrix (versioning policy) for the vLLM it pairs with",
                 source=src)


def _plugin_check(v: Mapping[str, Optional[str]]) -> Check:
    spec = load_table()["platform_plugin"]
    eps = platform_entry_points(spec["group"])
    ours = [e for e in eps if e["name"] == spec["name"]]
    others = ", ".join(f"{e['name']} = {e['value']}" for e in eps if e["name"] != spec["name"])
    note = f"other platform plugins: {others}" if others else ""
    va = v["vllm_ascend"]
    allowed = settings.VLLM_PLUGINS.raw()  # vLLM reads it as is: an empty value allows no plugin
    if not va:
        if ours:
            return Check("platform-plugin", WARN, f"{spec['group']} has {ours[0]['name']} = {ours[0]['value']} but "
                         "no vllm-ascend distribution is installed", note=note, source=spec["source"])
        return Check("platform-plugin", SKIP, "vllm-ascend not installed", note=note, source=spec["source"])
    if not ours:
        return Check("platform-plugin", ERROR, f"vllm-ascend {va} registers no {spec['group']} entry point "
                     f"'{spec['name']}': vLLM will not find the NPU platform",
                     fix=f"reinstall it (pip install --force-reinstall --no-deps vllm-ascend=={va}, or pip install -e "
                     ". in a source checkout: a checkout on PYTHONPATH registers nothing)", note=note,
                     source=spec["source"])
    ep = ours[0]
    if allowed is not None and spec["name"] not in [x.strip() for x in allowed.split(",")]:
        return Check("platform-plugin", ERROR, f"{spec['env']}={allowed} leaves out '{spec['name']}': vLLM skips the "
                     "Ascend platform", fix=f"add {spec['name']} to {spec['env']}, or unset it", note=note,
                     source=spec["source"])
    found = f"{spec['group']}: {ep['name']} = {ep['value']}"
    if ep["value"].replace(" ", "") != spec["value"]:
        return Check("platform-plugin", WARN, found + f" (vllm-ascend registers {spec['value']})", note=note,
                     fix="reinstall vllm-ascend", source=spec["source"])
    return Check("platform-plugin", OK, found, note=note, source=spec["source"])
