"""What ascend-compat does for each CUDA-bound library here, and what the library already does itself."""

from __future__ import annotations

from typing import Any

from ascend_compat._dist import version_of
from ascend_compat.ecosystem import patching

# Import name -> distribution name of the libraries the ecosystem layer knows.
LIBRARIES = {
    "flash_attn": "flash-attn",
    "transformers": "transformers",
    "accelerate": "accelerate",
    "deepspeed": "deepspeed",
    "vllm": "vllm",
    "vllm_ascend": "vllm-ascend",
    "triton": "triton",
}


def _native(name: str) -> list[str]:
    if name == "transformers":
        from ascend_compat.ecosystem import transformers

        return transformers.natively_handled()
    if name == "deepspeed":
        from ascend_compat.ecosystem import deepspeed

        return deepspeed.natively_handled()
    if name == "accelerate" and version_of("accelerate"):
        return ["checks the NPU before CUDA and picks hccl (huggingface/accelerate#3020)"]
    if name == "vllm_ascend" and version_of("vllm-ascend"):
        return ["vLLM's Ascend platform plugin (see `ascend-compat vllm` for the readiness report)"]
    return []


def report() -> list[dict[str, Any]]:
    """One row per library: installed version, native NPU support, our patches (documented) and their state."""
    patching._load_builtin()
    from ascend_compat.ecosystem import flash_attn_provider

    status = patching.status()
    rows = []
    for name, dist in LIBRARIES.items():
        row: dict[str, Any] = {
            "library": name,
            "version": version_of(dist),
            "native": _native(name),
            "patches": [{**p.to_dict(), "state": status.get(p.name, "inactive")} for p in patching.PATCHES
                        if p.library == dist],
        }  # fmt: skip
        if name == "flash_attn":
            row["drop_in"] = status.get(patching.DROP_IN, "inactive (the shim is not active)")
            if flash_attn_provider.is_provided():
                row["version"] = flash_attn_provider.shadowed_distribution()
                row["shadowed"] = row["version"] is not None
        if name == "triton":
            try:
                from ascend_compat.ecosystem import triton
            except ImportError:
                pass
            else:
                row["triton"] = triton.detect()
                # triton-ascend installs the ``triton`` package under its own distribution name.
                row["version"] = row["version"] or row["triton"]["distributions"].get("triton-ascend")
        rows.append(row)
    return rows


def render(rows: list[dict[str, Any]]) -> list[str]:
    """Text lines for ``ascend-compat info``."""
    lines = ["libraries:"]
    for row in rows:
        lines.append(f"  {row['library']}: {row['version'] or 'not installed'}")
        if "drop_in" in row:
            lines.append(f"    drop-in: {row['drop_in']}")
        for note in row["native"]:
            lines.append(f"    handled by the library: {note}")
        for p in row["patches"]:
            lines.append(f"    patch {p['name']}: {p['state']}")
        if "triton" in row:
            if row["triton"].get("summary") and row["triton"].get("status") != "not-installed":
                lines.append(f"    {row['triton']['summary']}")
            if row["triton"].get("advice"):
                lines.append(f"    {row['triton']['advice']}")
    return lines
