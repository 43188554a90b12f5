"""The environment block of a doctor report: the facts worth pasting into a bug report."""

from __future__ import annotations

import platform
from typing import Optional, TypedDict

from ascend_compat.doctor.facts import Facts
from ascend_compat.doctor.probe import Probe
from ascend_compat.doctor.versions import info_get

__all__ = ["env_block", "environment"]

#: Variables shown in the block: prefixes, then exact names.
_PREFIXES = ("ASCEND_", "HCCL_", "ATB_", "TORCH_NPU", "PYTORCH_NPU")
_NAMES = ("CUDA_VISIBLE_DEVICES", "RANK_TABLE_FILE", "LD_LIBRARY_PATH")


class Environment(TypedDict):
    """:func:`environment`: versions and locations (None when not found) and the relevant variables."""

    ascend_compat: str
    python: str
    platform: str
    torch: Optional[str]
    torch_npu: Optional[str]
    cann_toolkit: Optional[str]
    cann_toolkit_home: Optional[str]
    cann_innerversion: Optional[str]
    nnal: Optional[str]
    driver: Optional[str]
    firmware: Optional[str]
    env: dict[str, str]


def environment(probe: Optional[Probe] = None) -> Environment:
    """The facts worth pasting into a bug report (versions, locations, relevant variables)."""
    from ascend_compat import __version__

    p = probe or Probe()
    f = Facts(p)
    tk = f.toolkit if f.toolkit_found else None
    nnal = f.nnal
    keys = sorted(k for k in p.env if k.startswith(_PREFIXES) or k in _NAMES)
    return {
        "ascend_compat": __version__,
        "python": ".".join(str(x) for x in p.python_version),
        "platform": f"{platform.system()} {p.machine}",
        "torch": f.torch,
        "torch_npu": f.torch_npu,
        "cann_toolkit": tk.version if tk else None,
        "cann_toolkit_home": str(tk.home) if tk else None,
        "cann_innerversion": tk.inner_version if tk else None,
        "nnal": nnal[1] if nnal else None,
        "driver": f.driver_version,
        "firmware": info_get(f.firmware, "Version"),
        "env": {k: p.env[k] for k in keys},
    }


def env_block(env: Environment) -> str:
    """``environment()`` as aligned ``key: value`` lines for a fenced block in an issue."""
    lines = [f"{k}: {v if v is not None else '-'}" for k, v in env.items() if k != "env"]
    lines += [f"{k}={v}" for k, v in env.get("env", {}).items()]
    return "\n".join(lines)
