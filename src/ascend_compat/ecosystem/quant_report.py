"""The ``ascend-compat quant`` report: each quantization method of a model (a directory, config.json, .gguf file, or a
Hugging Face hub id resolved by :mod:`ascend_compat.ecosystem.hub`), whether it runs on Ascend, and what to do
instead. The facts come from :mod:`ascend_compat.ecosystem.quantization`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from ascend_compat.ecosystem.quantization import SCHEMA_VERSION, Found, ModelError, detect, read_model

__all__ = ["SCHEMA_VERSION", "build_report", "compat_report", "render_report"]


def compat_report(path: str) -> dict[str, Any]:
    """Whether each quantization method of a model (directory, config.json, .gguf, or a Hugging Face hub id: see
    :mod:`ascend_compat.ecosystem.hub`) is usable on Ascend, through what, and the alternative: what
    ``ascend-compat quant --json`` prints. Raises ModelError for an unreadable model."""
    from ascend_compat.ecosystem import hub

    if hub.is_hub_id(path):
        return hub.quant_report(path)
    config_path, config, model_dir, files = read_model(path)
    return build_report(path, config_path, config, model_dir, files)


def build_report(model: str, config_path: Optional[str], config: Optional[dict[str, Any]], model_dir: str,
                 files: list[str], found: Optional[list[Found]] = None) -> dict[str, Any]:
    """The report for what :func:`read_model` returned (or for ``found`` methods, when given)."""
    if found is None:
        try:
            found = detect(config, model_dir or None, files)
        except ValueError as exc:
            raise ModelError(str(exc)) from exc
    rows = []
    for f in found:
        m = f.method
        row: dict[str, Any] = {"evidence": f.evidence, "quant_method": f.quant_method, "caveat": f.caveat,
                               "types": list(f.types), "inferred": f.inferred}
        if m is None:
            row.update(id=None, name=f.quant_method or "unknown", ascend="unknown", through=[], torch_npu_ops=[],
                       vllm_ascend=[], alternative="re-quantize with msModelSlim (W8A8 / W4A8 for Ascend) or "
                       "LLM-Compressor, or serve the unquantized model", note="not a method ascend-compat knows",
                       source="ascend_compat ecosystem/data/quantization.json")
        else:
            row.update(m.to_dict())
        rows.append(row)
    usable = all(r["ascend"] in ("yes", "partial") for r in rows)
    return {"schema_version": SCHEMA_VERSION, "model": model, "config": config_path, "usable": usable,
            "inferred": any(f.inferred for f in found), "methods": rows}


def render_report(report: Mapping[str, Any]) -> str:
    """Text form of :func:`compat_report`."""
    head = "usable on Ascend" if report["usable"] else "NOT usable on Ascend as is"
    if report.get("inferred"):
        head += " (INFERRED from the model id alone: its files were not read)"
    lines = [f"{report['model']}: {head}"]
    if report.get("hub", {}).get("note"):
        lines.append(f"  note: {report['hub']['note']}")
    for r in report["methods"]:
        lines.append(f"  {r['ascend']:<8} {r['name']}  ({r['evidence']})")
        if r["through"]:
            lines.append(f"           through: {', '.join(r['through'])}")
        served = ", ".join(s["versions"] + (f" (needs {s['requires']})" if s.get("requires") else "")
                           for s in r["vllm_ascend"])
        if served:
            lines.append(f"           vllm-ascend: {served}")
        if r["torch_npu_ops"]:
            lines.append(f"           torch_npu ops: {', '.join(r['torch_npu_ops'])}")
        if r["caveat"]:
            lines.append(f"           fix: {r['caveat']}")
        if r["alternative"] and r["ascend"] != "yes":
            lines.append(f"           instead: {r['alternative']}")
        if r["note"]:
            lines.append(f"           note: {r['note']}")
        lines.append(f"           source: {r['source']}")
    return "\n".join(lines)
