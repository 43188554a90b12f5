"""How many CPUs this process may really use: its affinity mask and its cgroup CPU quota (v2 ``cpu.max``, v1
``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``). A CI container often sees every core of the host but is allowed a
fraction of them; one test worker per visible core would then oversubscribe it."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Optional

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
#: Set to a number, the worker count ``-n auto`` uses, as pytest-xdist's own hook honours it.
OVERRIDE = "PYTEST_XDIST_AUTO_NUM_WORKERS"


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _levels(mount: Path, rel: str) -> Iterator[Path]:
    """The process's cgroup directory under ``mount`` and each ancestor up to the mount (each may set a quota);
    just the mount when the directory is not there (a cgroup namespace shows the process at its root)."""
    here = mount / rel.strip("/")
    if not here.is_dir():
        yield mount
        return
    while True:
        yield here
        if here == mount:
            return
        here = here.parent


def _v2_quota(directory: Path) -> Optional[float]:
    """``cpu.max`` is "QUOTA PERIOD" or "max PERIOD" (no limit)."""
    text = _read(directory / "cpu.max")
    parts = text.split() if text else []
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _v1_quota(directory: Path) -> Optional[float]:
    """``cpu.cfs_quota_us`` is -1 when there is no limit."""
    quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
    try:
        q, p = int(quota or ""), int(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> Optional[float]:
    """The CPUs the process's cgroup quota allows (the tightest along its path, v2 or v1), or None without one."""
    limits: list[float] = []
    for line in (_read(proc_cgroup) or "").splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, rel = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # v2 (unified): mounted at the root, or at unified/ (hybrid)
            checks = [(mount, _v2_quota) for mount in (root, root / "unified")]
        elif "cpu" in controllers.split(","):  # v1: mounted as cpu, or cpu,cpuacct (named after its controllers)
            checks = [(mount, _v1_quota) for mount in dict.fromkeys((root / controllers, root / "cpu"))]
        else:
            continue
        for mount, quota_of in checks:
            if mount.is_dir():
                limits += [q for q in map(quota_of, _levels(mount, rel)) if q is not None]
    return min(limits) if limits else None


def affinity_cpus() -> int:
    """The CPUs the scheduler lets this process run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_count(cap: int = 4, environ: Mapping[str, str] = os.environ, root: Path = CGROUP_ROOT,
                 proc_cgroup: Path = PROC_CGROUP, cpus: Optional[int] = None) -> int:
    """``min(cap, affinity CPUs, ceil(cgroup quota))``, at least 1; a number in ``PYTEST_XDIST_AUTO_NUM_WORKERS``
    wins (anything else there is warned about and ignored, as pytest-xdist does)."""
    text = environ.get(OVERRIDE, "").strip()
    if text:
        try:
            return int(text)
        except ValueError:
            warnings.warn(f"{OVERRIDE} is not a number: {text!r}; ignoring it", stacklevel=2)
    n = affinity_cpus() if cpus is None else cpus
    quota = cgroup_cpu_limit(root, proc_cgroup)
    if quota is not None:
        n = min(n, math.ceil(quota))
    return max(1, min(cap, n))
