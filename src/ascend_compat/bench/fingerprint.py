"""Where a benchmark ran: CPU, cores, load, torch, backend, device, versions (so figures can be compared)."""

from __future__ import annotations

import os
import platform
from typing import Any, Optional

from ascend_compat._dist import version_of

#: Keys every fingerprint has (tests and consumers rely on them).
KEYS = (
    "cpu_model",
    "cpu_count",
    "cpu_affinity",
    "load_avg",
    "python",
    "platform",
    "torch",
    "torch_threads",
    "torch_npu",
    "backend",
    "device",
    "simulated",
    "ascend_compat",
)


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo`` on Linux, the platform's answer elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def collect(backend: Optional[str], device: Optional[str]) -> dict[str, Any]:
    """The fingerprint as a plain dict; ``backend`` is the shim's backend name, ``device`` the timed device."""
    import torch

    from ascend_compat import __version__, simulate

    if backend is None:
        try:
            from ascend_compat import backends

            found = backends.detect()
            backend = None if found.backend is None else found.backend.name
        except Exception:  # a fingerprint never stops a benchmark
            backend = None
    try:
        affinity: Optional[int] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    try:
        load: Optional[list[float]] = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "load_avg": load,  # 1/5/15-minute load: a busy machine makes every figure noisier
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_npu": simulate.TORCH_NPU_VERSION if simulate.is_installed() else version_of("torch_npu"),
        "backend": backend,
        "device": device,
        "simulated": simulate.is_installed(),
        "ascend_compat": __version__,
    }
