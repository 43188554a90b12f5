"""Doctor checks of the process environment: visible devices, HCCL's connect timeout, the kernel cache's disk."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from ascend_compat.doctor.facts import Facts
from ascend_compat.doctor.result import Check

__all__ = ["DISK_ERROR_BYTES", "DISK_WARN_BYTES", "HCCL_CONNECT_TIMEOUT_RANGE", "HCCL_RANK_TABLE_MIN_TIMEOUT",
           "check_disk_cache", "check_hccl_timeout", "check_visible_devices"]

#: Documented range of HCCL_CONNECT_TIMEOUT in seconds (CANN HCCL user guide); 120 is the default.
HCCL_CONNECT_TIMEOUT_RANGE = (120, 7200)
#: torch_npu warns below this when process groups are built from a RANK_TABLE_FILE (ProcessGroupHCCL.cpp).
HCCL_RANK_TABLE_MIN_TIMEOUT = 300
#: Free space under the kernel cache: compiled operators and graph caches take gigabytes on real models.
DISK_WARN_BYTES = 5 << 30
DISK_ERROR_BYTES = 1 << 30


def check_visible_devices(f: Facts) -> Check:
    title = "Visible devices"
    why = ("Ascend selects devices with ASCEND_RT_VISIBLE_DEVICES (comma-separated ascending logical device ids, "
           "one per chip: an Atlas A3 / 910C or 300I Duo card has two); CUDA_VISIBLE_DEVICES is ignored by the NPU "
           "runtime.")
    env = f.p.env
    ascend = env.get("ASCEND_RT_VISIBLE_DEVICES")
    cuda = env.get("CUDA_VISIBLE_DEVICES")
    if ascend is None:
        if cuda is not None and f.npu_machine:
            return Check("visible_devices", title, "warn",
                         f"CUDA_VISIBLE_DEVICES={cuda} is set but ASCEND_RT_VISIBLE_DEVICES is not", why,
                         f"export ASCEND_RT_VISIBLE_DEVICES={cuda}  (or run under `ascend-compat run`, which "
                         "translates it)")
        return Check("visible_devices", title, "ok", "ASCEND_RT_VISIBLE_DEVICES not set (all devices visible)", why)
    if not ascend.strip():
        return Check("visible_devices", title, "warn", "ASCEND_RT_VISIBLE_DEVICES is set but empty: no device is "
                     "visible", why, "unset ASCEND_RT_VISIBLE_DEVICES (all devices visible) or list ids, e.g. "
                     "export ASCEND_RT_VISIBLE_DEVICES=0,1")
    parts = [s.strip() for s in ascend.split(",")]
    # ASCII digits only: int() also reads other scripts' digits ("\u0663"), which the runtime does not.
    if not all(re.fullmatch(r"[0-9]+", s) for s in parts):
        return Check("visible_devices", title, "error", f"ASCEND_RT_VISIBLE_DEVICES={ascend!r} is not a list of ids",
                     why, "Use comma-separated integers, e.g. ASCEND_RT_VISIBLE_DEVICES=0,1")
    ids = [int(s) for s in parts]
    if len(set(ids)) != len(ids):
        return Check("visible_devices", title, "error", f"ASCEND_RT_VISIBLE_DEVICES={ascend} repeats an id", why,
                     f"export ASCEND_RT_VISIBLE_DEVICES={','.join(str(i) for i in sorted(set(ids)))}")
    smi = f.npu_smi if "npu_smi" in f.__dict__ else None  # only when --full already ran npu-smi
    if smi and smi[0] == 0 and smi[2].chips:
        count = len(smi[2].chips)  # logical device ids count chips, not cards
        bad = [i for i in ids if i >= count]
        if bad:
            return Check("visible_devices", title, "error",
                         f"ASCEND_RT_VISIBLE_DEVICES={ascend} names device(s) {bad}; npu-smi lists {count} chip(s)",
                         why, f"Use ids below {count}.")
    if ids != sorted(ids):
        return Check("visible_devices", title, "warn", f"ASCEND_RT_VISIBLE_DEVICES={ascend} is not ascending", why,
                     f"export ASCEND_RT_VISIBLE_DEVICES={','.join(str(i) for i in sorted(ids))}")
    extra = f"; CUDA_VISIBLE_DEVICES={cuda} (ignored by the NPU runtime)" if cuda is not None else ""
    return Check("visible_devices", title, "ok", f"ASCEND_RT_VISIBLE_DEVICES={ascend}{extra}", why)


def check_hccl_timeout(f: Facts) -> Check:
    title = "HCCL_CONNECT_TIMEOUT"
    lo, hi = HCCL_CONNECT_TIMEOUT_RANGE
    why = (f"Seconds HCCL waits for all ranks to connect (default {lo}, documented range {lo}-{hi}); too short and "
           "large jobs fail at init with a timeout, non-numbers are read as 0.")
    env = f.p.env
    raw = env.get("HCCL_CONNECT_TIMEOUT")
    rank_table = env.get("RANK_TABLE_FILE")
    if raw is None:
        if rank_table:
            return Check("hccl_timeout", title, "warn", f"not set (default {lo} s) with RANK_TABLE_FILE", why,
                         f"export HCCL_CONNECT_TIMEOUT={HCCL_RANK_TABLE_MIN_TIMEOUT}  (torch_npu recommends >= "
                         f"{HCCL_RANK_TABLE_MIN_TIMEOUT} s with a rank table)")
        return Check("hccl_timeout", title, "ok", f"not set (default {lo} s)", why)
    if not re.fullmatch(r"\s*[0-9]+\s*", raw):
        return Check("hccl_timeout", title, "error", f"HCCL_CONNECT_TIMEOUT={raw!r} is not a whole number of seconds",
                     why, f"export HCCL_CONNECT_TIMEOUT={lo}  (or larger for many nodes)")
    value = int(raw)
    if not lo <= value <= hi:
        return Check("hccl_timeout", title, "warn", f"HCCL_CONNECT_TIMEOUT={value} is outside {lo}-{hi}", why,
                     f"export HCCL_CONNECT_TIMEOUT={min(max(value, lo), hi)}")
    if rank_table and value < HCCL_RANK_TABLE_MIN_TIMEOUT:
        return Check("hccl_timeout", title, "warn", f"HCCL_CONNECT_TIMEOUT={value} with RANK_TABLE_FILE", why,
                     f"export HCCL_CONNECT_TIMEOUT={HCCL_RANK_TABLE_MIN_TIMEOUT}")
    return Check("hccl_timeout", title, "ok", f"HCCL_CONNECT_TIMEOUT={value}", why)


def _existing_ancestor(path: Path) -> Optional[Path]:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return None


def check_disk_cache(f: Facts) -> Check:
    title = "Kernel cache disk space"
    why = ("CANN compiles operators and graphs into a cache (ASCEND_CACHE_PATH, default under the home directory); "
           "a full disk makes compilation fail with obscure errors.")
    env = f.p.env
    raw = env.get("ASCEND_CACHE_PATH") or env.get("HOME") or "~"
    how = "ASCEND_CACHE_PATH" if env.get("ASCEND_CACHE_PATH") else "home directory"
    target = _existing_ancestor(Path(os.path.expanduser(raw)))
    if target is None:
        return Check("disk_cache", title, "skip", f"{raw} does not exist", why)
    try:
        usage = f.p.disk_usage(str(target))
    except OSError as exc:
        return Check("disk_cache", title, "skip", f"cannot stat {target}: {exc}", why)
    free_gib = usage.free / (1 << 30)
    details = {"path": str(target), "free_bytes": int(usage.free), "total_bytes": int(usage.total), "from": how}
    found = f"{free_gib:.1f} GiB free at {target} ({how})"
    if usage.free < DISK_ERROR_BYTES:
        status = "error"
    elif usage.free < DISK_WARN_BYTES:
        status = "warn"
    else:
        return Check("disk_cache", title, "ok", found, why, "", details)
    return Check("disk_cache", title, status, found, why,
                 "Free space, or export ASCEND_CACHE_PATH=<dir on a larger disk>.", details)
