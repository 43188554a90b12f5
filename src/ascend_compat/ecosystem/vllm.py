"""vLLM on Ascend readiness: is the installed vllm / vllm-ascend pair one vllm-ascend publishes, with the torch and
torch_npu it names; can vLLM find the Ascend platform plugin; which attention backend it will use; and, for a model,
does vllm-ascend serve its quantization.

Facts come from ``data/vllm_ascend.json`` (vllm-ascend's release compatibility matrix and platform code, each row
with its source) and ``data/quantization.json`` (see :mod:`ascend_compat.ecosystem.quantization`). Nothing here
imports vllm, vllm_ascend or torch: versions and entry points are read from installed distributions' metadata,
so the report works where vLLM would crash or is absent.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from typing import Any, Optional

from ascend_compat._dist import version_of
from ascend_compat._style import paint
from ascend_compat.ecosystem import quantization
from ascend_compat.ecosystem.quantization import ModelError, read_model
from ascend_compat.ecosystem.vllm_checks import (
    ERROR,
    OK,
    SKIP,
    STATUSES,
    WARN,
    Check,
    _package_checks,
    _pair_check,
    _plugin_check,
    _python_check,
    _torch_checks,
    platform_entry_points,
)
from ascend_compat.ecosystem.vllm_data import (
    AttentionEra,
    Release,
    _table_range,
    attention_for,
    load_table,
    newest_final,
    release,
    releases,
    releases_for_vllm,
)
from ascend_compat.ecosystem.vllm_data import _is_final as _is_final  # tests use it from here

__all__ = ["STATUSES", "AttentionEra", "Check", "ModelError", "Release", "attention_for", "exit_code",
           "installed_versions", "load_table", "newest_final", "platform_entry_points", "readiness", "release",
           "releases", "releases_for_vllm", "render"]

SCHEMA_VERSION = 1


# -- what is installed ------------------------------------------------------------------------------------------------


def installed_versions() -> dict[str, Optional[str]]:
    """Versions of vllm, vllm-ascend, torch, torch_npu (None: not installed) and of this Python."""
    return {
        "vllm": version_of("vllm"),
        "vllm_ascend": version_of("vllm-ascend"),
        "torch": version_of("torch"),
        "torch_npu": version_of("torch_npu"),
        "python": platform.python_version(),
    }


# -- checks of the attention backend and of a model (the installation checks are in vllm_checks) ----------------------

def _attention_kind(config: Optional[Mapping[str, Any]]) -> str:
    """Which backend key applies to a model: vLLM takes DeepSeek-style latent attention (MLA) from a
    ``kv_lora_rank`` in the config, and its sparse variant from an ``index_topk`` (DeepSeek V3.2)."""
    if not isinstance(config, Mapping):
        return "default"
    inner = config.get("text_config")
    text: Mapping[str, Any] = inner if isinstance(inner, Mapping) else config
    if text.get("kv_lora_rank") is None:
        return "default"
    return "sparse (mla + sparse)" if text.get("index_topk") is not None else "mla"


def _attention_check(v: Mapping[str, Optional[str]], config: Optional[Mapping[str, Any]],
                     row: Optional[Release]) -> tuple[Check, Optional[dict[str, Any]]]:
    va = v["vllm_ascend"]
    if not va:
        return Check("attention", SKIP, "vllm-ascend not installed"), None
    era = attention_for(va)
    if era is None:
        return Check("attention", WARN, f"unknown (vllm-ascend {va} is not a release version)",
                     fix="see vllm_ascend/platform.py (get_attn_backend_cls) of your build"), None
    kind = _attention_kind(config)
    backends = era["backends"]
    name = kind if kind in backends else "default"
    module, cls = backends[name].rsplit(".", 1)
    found = f"{cls} ({module}; {name} backend; engine: {era['engine']})"
    notes = []
    if era.get("engine_env"):
        notes.append(era["engine_env"])
    if era.get("graph_mode"):
        notes.append("graph mode: " + era["graph_mode"])
    others = [f"{k}: {c.removeprefix('vllm_ascend.')}" for k, c in backends.items() if k != name]
    if others:
        notes.append("others: " + ", ".join(others))
    if row is None:
        notes.append("from the newest entry that covers this version; the release is newer than ascend-compat's data")
    return Check("attention", OK, found, note="; ".join(notes), source=era["source"]), {**era, "selected": name}


def _quant_check(f: quantization.Found, va: Optional[str]) -> Check:
    m = f.method
    if m is None:
        accepted = quantization.platform_methods(va) if va else None
        status = ERROR if accepted is not None and f.quant_method not in accepted else WARN
        fix = (f"vLLM on the NPU accepts only {', '.join(accepted)} with vllm-ascend {va}" if accepted
               else "re-quantize with msModelSlim or LLM-Compressor, or serve the unquantized model")
        return Check("quantization", status, f"{f.quant_method or 'unknown'}: not a method ascend-compat knows "
                     f"({f.evidence})", fix=fix, source="ascend_compat ecosystem/data/quantization.json")
    found = f"{m.name} ({f.evidence})"
    spans = " or ".join(s.versions for s in m.vllm_ascend)
    if m.id == "none":
        return Check("quantization", OK, f"not quantized ({f.evidence})", source=m.source)
    if not va:
        status = ERROR if not m.vllm_ascend else (WARN if m.ascend == "partial" else OK)
        # Each release span keeps its limit (hardware, a required package), as the installed-release path does:
        # "serves it" alone reads as "install that release" where only some chips or setups get it.
        limits = [(f"{s.versions}: " if len(m.vllm_ascend) > 1 else "") + s.note.rstrip(".")
                  for s in m.vllm_ascend if s.note]
        note = "; ".join([f"vllm-ascend {spans} serves it", *limits]) if m.vllm_ascend else ""
        return Check("quantization", status, found, fix="" if status == OK else m.alternative, note=note,
                     source=m.source)
    sup = m.support_for(va)
    if sup is None:
        why = f"not served by vllm-ascend {va}" + (f" (served by {spans})" if m.vllm_ascend else "")
        fix = m.alternative or f"use a vllm-ascend release in {spans}"
        if m.vllm_ascend and m.alternative:
            fix = f"use a vllm-ascend release in {spans}, or {m.alternative}"
        return Check("quantization", ERROR, f"{found}: {why}", fix=fix, note=m.note, source=m.source)
    notes = [n.rstrip(".") for n in (sup.note, m.note) if n]
    if m.id.startswith("ascend"):
        flag = quantization.ascend_flag(va)
        notes.append(f"serve it with {flag}" if flag else "vllm-ascend detects it (no --quantization flag needed)")
    if sup.requires and version_of(sup.requires) is None:
        return Check("quantization", ERROR, f"{found}: vllm-ascend {va} serves it through {sup.requires}, which is "
                     "not installed", fix=f"pip install {sup.requires}", note="; ".join(notes), source=m.source)
    if f.caveat:
        return Check("quantization", WARN, found, fix=f.caveat, note="; ".join(notes), source=m.source)
    status = WARN if (sup.note or m.ascend == "partial") else OK
    return Check("quantization", status, found, fix=m.alternative if status == WARN else "", note="; ".join(notes),
                 source=m.source)


def _model_checks(model: str, v: Mapping[str, Optional[str]]) -> tuple[list[Check], dict[str, Any], Optional[dict]]:
    config_path, config, model_dir, files = read_model(model)
    try:
        found = quantization.detect(config, model_dir or None, files)
    except ValueError as exc:
        raise ModelError(str(exc)) from exc
    cfg = config or {}
    named = cfg.get("architectures")
    archs: list[Any] = named if isinstance(named, list) else []
    arch_text = ", ".join(map(str, archs)) or "none named"
    if config_path:
        what = f"{config_path}: {arch_text}" + (f" ({cfg['model_type']})" if cfg.get("model_type") else "")
    else:
        what = f"{model}: GGUF weights, no config.json"
    checks = [Check("model", OK, what, note="architecture not checked: vllm-ascend lists supported models by name "
                    "(docs/source/user_guide/support_matrix/supported_models.md)")]
    checks += [_quant_check(f, v["vllm_ascend"]) for f in found]
    info = {
        "path": model, "config": config_path, "architectures": archs, "model_type": cfg.get("model_type"),
        "quantization": [{"evidence": f.evidence, "quant_method": f.quant_method, "caveat": f.caveat,
                          "types": list(f.types), "method": f.method.to_dict() if f.method else None} for f in found],
    }  # fmt: skip
    return checks, info, config


# -- the report -------------------------------------------------------------------------------------------------------

def readiness(model: Optional[str] = None) -> dict[str, Any]:
    """The readiness report as a plain dict (what ``ascend-compat vllm --json`` prints). ``model``: a model
    directory, its config.json or a .gguf file. Raises ModelError when ``model`` cannot be read."""
    v = installed_versions()
    model_checks: list[Check] = []
    model_info = config = None
    if model is not None:
        # First: a bad --model is a usage error, reported alone.
        model_checks, model_info, config = _model_checks(model, v)
    row = release(v["vllm_ascend"]) if v["vllm_ascend"] else None
    attention, era = _attention_check(v, config, row)
    checks = [
        *_package_checks(v, row), *_torch_checks(v, row), _python_check(v, row), _pair_check(v, row),
        _plugin_check(v), attention, *model_checks,
    ]
    counts = {s: sum(c.status == s for c in checks) for s in STATUSES}
    return {
        "schema_version": SCHEMA_VERSION,
        "ready": counts[ERROR] == 0,
        "counts": counts,
        "versions": v,
        "published_pair": row,
        "recommended": newest_final(),
        "attention": era,
        "model": model_info,
        "checks": [c.__dict__ for c in checks],
        "data": {"vllm_ascend_releases": _table_range(), "source": "vllm-project/vllm-ascend release compatibility "
                 "matrix (docs/source/community/versioning_policy.md)"},
    }


def exit_code(report: Mapping[str, Any]) -> int:
    """0 when ready (no check is an error), 1 otherwise."""
    return 0 if report["ready"] else 1


def render(report: Mapping[str, Any], color: bool = False) -> str:
    """Human-readable form of :func:`readiness`'s result (ANSI colour only when ``color``)."""
    counts = report["counts"]
    parts = [f"{counts[s]} {'error' if s == ERROR else 'warning'}{'s' if counts[s] != 1 else ''}"
             for s in (ERROR, WARN) if counts[s]]
    state = "ready" if report["ready"] else "not ready"
    head = f"vLLM on Ascend: {state}" + (f" ({', '.join(parts)})" if parts else "")
    lines = [paint(head, OK if report["ready"] else ERROR, color), ""]
    width = max(len(c["id"]) for c in report["checks"])
    pad = " " * (2 + 5 + 2 + width + 2)
    for c in report["checks"]:
        lines.append(f"  {paint(c['status'].ljust(5), c['status'], color)}  {c['id'].ljust(width)}  {c['found']}")
        if c["fix"] and c["status"] in (WARN, ERROR):
            lines.append(f"{pad}fix: {c['fix']}")
        if c["note"]:
            lines.append(paint(f"{pad}note: {c['note']}", "dim", color))
    lines += ["", paint(f"data: vllm-ascend releases {report['data']['vllm_ascend_releases']} "
                         "(vllm-ascend's release compatibility matrix)", "dim", color)]
    return "\n".join(lines)
