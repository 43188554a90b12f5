"""What ascend-compat sees on this machine: backends, the chosen one and why, versions. Changes nothing."""

from __future__ import annotations

import platform
import sys
from typing import Any, Optional

from ascend_compat._dist import version_of

SCHEMA_VERSION = 1


def collect(backend: Optional[str] = None) -> dict[str, Any]:
    """Detection report as a plain dict (what ``ascend-compat info --json`` prints)."""
    from ascend_compat import __version__, backends, settings, simulate

    if settings.SIMULATE.is_set():
        simulate.install_from_env()
    import torch

    found = backends.detect(backend)
    rows = []
    for b in backends.all_backends():
        installed = b.installed()
        rows.append(
            {
                "name": b.name,
                "device_type": b.device_type,
                "adapter_module": b.adapter_module,
                "collective_backend": b.collective_backend,
                "visible_devices_env": b.visible_devices_env,
                "installed": installed,
                "available": bool(installed and b.available()),
                "display_name": b.label(),
                "description": b.label(),  # the former key
            }
        )
    from ascend_compat import cuda_shim
    from ascend_compat.ecosystem import libraries

    return {
        "schema_version": SCHEMA_VERSION,
        "chosen": None if found.backend is None else found.backend.name,
        "reason": found.reason,
        "native_cuda": found.native_cuda,
        "shim_active": cuda_shim.is_activated(),
        "simulated": simulate.is_installed(),
        "backends": rows,
        "versions": {
            "ascend_compat": __version__,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torch_npu": version_of("torch_npu"),
            "transformers": version_of("transformers"),
            "accelerate": version_of("accelerate"),
        },
        "libraries": libraries.report(),
        "platform": f"{platform.system()} {platform.machine()}",
        "executable": sys.executable,
    }


def render(data: dict[str, Any]) -> str:
    """Human-readable form of :func:`collect`'s result."""
    lines = [
        f"chosen backend: {data['chosen'] or 'none (shim inactive)'} - {data['reason']}",
        f"simulated NPU: {'yes' if data['simulated'] else 'no'}",
        "",
        f"{'backend':8} {'installed':>9} {'available':>9}  collective  visible-devices variable",
    ]
    for b in data["backends"]:
        lines.append(
            f"{b['name']:8} {'yes' if b['installed'] else 'no':>9} {'yes' if b['available'] else 'no':>9}  "
            f"{b['collective_backend']:10}  {b['visible_devices_env'] or '-'}"
        )
    lines.append("")
    lines.extend(f"{k}: {v or 'not installed'}" for k, v in data["versions"].items())
    from ascend_compat.ecosystem import libraries

    lines.append("")
    lines.extend(libraries.render(data["libraries"]))
    return "\n".join(lines)


def patches() -> dict[str, Any]:
    """Every patch the shim can apply, as documented data (what ``ascend-compat info --patches --json`` prints):
    the core torch patches and the library patches, each with what, why, versions tested and upstream issue."""
    from ascend_compat.cuda_shim.core_patches import CORE_PATCHES
    from ascend_compat.ecosystem.patching import PATCHES

    return {
        "schema_version": SCHEMA_VERSION,
        "core": [p.to_dict() for p in CORE_PATCHES],
        "library": [{**p.to_dict(), "backends": _library_backends(p)} for p in PATCHES],
    }


def _library_backends(patch: Any) -> list[str]:
    from ascend_compat.ecosystem import patching

    known = {patching.only_on_npu: ["npu"], patching.only_on_cpu_fallback: ["cpu fallback"]}
    return known.get(patch.when, ["see `when`"]) if callable(patch.when) else ["see `when`"]


def render_patches(data: dict[str, Any]) -> str:
    """Human-readable form of :func:`patches`."""
    lines = [f"core torch patches ({len(data['core'])}):"]
    for p in data["core"]:
        lines += [f"  {p['name']}  [{', '.join(p['backends'])}; tested: {', '.join(p['tested'])}]",
                  f"    patches: {p['patches']}", f"    why: {p['why']}"]  # fmt: skip
        if p["upstream"]:
            lines.append(f"    upstream: {p['upstream']}")
    lines += ["", f"library patches ({len(data['library'])}), applied when their library is imported:"]
    for p in data["library"]:
        lines += [f"  {p['name']}  [{', '.join(p['backends'])}; tested: {', '.join(p['tested'])}]",
                  f"    patches: {p['module']}: {p['how']}", f"    why: {p['why']}", f"    upstream: {p['upstream']}"]
    return "\n".join(lines)
