"""Doctor checks of the hardware side: driver, firmware, the shared libraries torch_npu loads, and npu-smi."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from ascend_compat.doctor.facts import ASCEND, Facts, ld_dirs, nnal_set_env, set_env_script
from ascend_compat.doctor.result import Check
from ascend_compat.doctor.versions import CannVersion, compatible_range, info_get

__all__ = ["HBM_BUSY_FRACTION", "LIBRARIES", "check_driver", "check_firmware", "check_libraries", "check_npu_smi"]

#: HBM already held by other processes above this share makes an out-of-memory likely.
HBM_BUSY_FRACTION = 0.5


def check_driver(f: Facts) -> Check:
    title = "NPU driver"
    why = "The driver (libascend_hal.so, /dev/davinci*) is what the CANN runtime talks to; CANN lists the driver " \
          "releases it works with."
    path = f.p.at(f"{ASCEND}/driver/version.info")
    if f.driver is None:
        return Check("driver", title, "error", f"no driver ({path} missing)", why,
                     "Install the Ascend HDK npu-driver for your card (host), or mount /usr/local/Ascend/driver "
                     "into the container.")
    version = f.driver_version
    details = {"version": version, "file": str(path), "compatible_version": info_get(f.driver, "compatible_version")}
    found = f"driver {version or '(unknown version)'}"
    if CannVersion.try_parse(version) is None:
        return Check("driver", title, "warn", f"{found}: {path} has no readable Version", why,
                     "The file is damaged or not the driver's: reinstall the Ascend HDK npu-driver package "
                     "(`npu-smi info` also prints the driver version).", details)
    inner = f.toolkit.inner_version if f.toolkit_found and f.toolkit else None
    compat = [a for a, _ in compatible_range(info_get(f.driver, "compatible_version"))]
    m = re.match(r"(V\d+R\d+C\d+)", inner or "")
    if m and compat:
        cann_line = m.group(1)
        details["cann_line"] = cann_line
        if cann_line not in compat:
            return Check("driver", title, "warn",
                         f"{found} does not list CANN line {cann_line} (toolkit innerversion {inner}) among "
                         f"compatible versions {', '.join(compat)}", why,
                         "Upgrade the driver and firmware to the HDK release recommended for your CANN version.",
                         details)
        found += f" (compatible with the toolkit's {cann_line})"
    return Check("driver", title, "ok", found, why, "", details)


def check_firmware(f: Facts) -> Check:
    title = "NPU firmware"
    why = "Firmware must be within the range the driver declares (compatible_version_fw), or devices fail to start."
    path = f.p.at(f"{ASCEND}/firmware/version.info")
    if f.firmware is None:
        status = "warn" if f.driver is not None else "skip"
        return Check("firmware", title, status, f"no firmware version file ({path})", why,
                     "Containers usually lack it (check on the host); on a host install the npu-firmware package.")
    version = info_get(f.firmware, "Version")
    details: dict[str, Any] = {"version": version, "file": str(path)}
    fw = CannVersion.try_parse(version)
    ranges = compatible_range(info_get(f.driver, "compatible_version_fw"))
    if fw is not None and ranges:
        ok = False
        for lo, hi in ranges:
            lo_v, hi_v = CannVersion.try_parse(lo), CannVersion.try_parse(hi.rstrip("."))
            if lo_v and hi_v and lo_v.key[:4] <= fw.key[:4] <= hi_v.key[:4]:
                ok = True
        details["driver_accepts"] = [list(r) for r in ranges]
        if not ok:
            return Check("firmware", title, "error",
                         f"firmware {version} is outside the driver's range "
                         f"{', '.join(f'[{a}, {b}]' for a, b in ranges)}", why,
                         "Install the firmware from the same HDK release as the driver, then reboot.", details)
        return Check("firmware", title, "ok", f"firmware {version} (within the driver's range)", why, "", details)
    if fw is None:  # an unreadable version cannot be checked against the driver's range
        return Check("firmware", title, "warn", f"firmware {version or '(unknown version)'}: {path} has no readable "
                     "Version", why, "Reinstall the npu-firmware package of the driver's HDK release.", details)
    return Check("firmware", title, "ok", f"firmware {version}", why, "", details)



#: Libraries torch_npu needs, and where the installers put them (relative to the toolkit, driver or NNAL).
LIBRARIES = (
    ("libascendcl.so", "toolkit", "lib64"),
    ("libhccl.so", "toolkit", "lib64"),
    ("libascend_hal.so", "driver", "lib64/driver"),
    ("libatb.so", "nnal", "atb/cxx_abi_*/lib"),
)


def check_libraries(f: Facts) -> Check:
    title = "Shared libraries"
    why = "torch_npu links these at import; one that cannot be loaded makes `import torch_npu` fail."
    if not f.toolkit_found and f.driver is None:
        return Check("libraries", title, "skip", "neither CANN nor the driver is installed", why)
    results: dict[str, str] = {}
    missing: list[str] = []
    fixes: list[str] = []
    wanted: list[tuple[str, str, str, Optional[Path]]] = []
    for name, owner, rel in LIBRARIES:
        if owner == "nnal" and f.nnal is None:
            continue
        where: Optional[Path] = None
        for d in ld_dirs(f):
            if (Path(d) / name).is_file():
                where = Path(d) / name
                break
        wanted.append((name, owner, rel, where))
    # One child process loads them all, in torch_npu's order (a crash there is reported, not suffered).
    loaded = f.p.load_libraries([str(where) if where else name for name, _, _, where in wanted])
    for name, owner, rel, where in wanted:
        error = loaded.get(str(where) if where else name, "not tried (the loader stopped early)")
        if error is None:
            results[name] = f"loaded ({where or 'system search path'})"
            continue
        results[name] = error
        crash = re.search(r"killed the process with (\S+)|did not finish", error)
        missing.append(name + (f" ({crash.group(1) or 'hangs'})" if crash else ""))
        expected = _library_home(f, owner, rel, name)
        if where is not None and crash:
            fixes.append(f"{name} at {where} {error}: reinstall its package; check that LD_LIBRARY_PATH does not mix "
                         "two CANN versions")
        elif where is not None:
            fixes.append(f"{name} at {where} does not load ({error}): reinstall its package or add its dependencies "
                         "to LD_LIBRARY_PATH")
        elif expected is not None:
            fixes.append(f"{name} exists at {expected} but is not on LD_LIBRARY_PATH: "
                         + ("export LD_LIBRARY_PATH=" + str(expected.parent) + ":$LD_LIBRARY_PATH" if owner == "driver"
                            else f"source {set_env_script(f) if owner == 'toolkit' else nnal_set_env(f)}"))
        elif "killed the process" in error or "did not finish" in error:
            fixes.append(f"{name} (found on the system search path) {error}: reinstall its package")
        else:
            fixes.append(f"{name} is not installed: install the {owner} package")
    if missing:
        return Check("libraries", title, "error", f"cannot load {', '.join(missing)}", why, "; ".join(fixes), results)
    return Check("libraries", title, "ok", f"loaded {', '.join(results)}", why, "", results)



def _library_home(f: Facts, owner: str, rel: str, name: str) -> Optional[Path]:
    base: Optional[Path] = None
    if owner == "toolkit" and f.toolkit_found and f.toolkit:
        base = f.toolkit.home
    elif owner == "driver":
        base = f.p.at(f"{ASCEND}/driver")
    elif owner == "nnal" and f.nnal:
        base = f.nnal[0]
    if base is None:
        return None
    hits = sorted(base.glob(f"{rel}/{name}"))
    return hits[0] if hits else None


def check_npu_smi(f: Facts) -> Check:
    title = "npu-smi"
    why = "npu-smi talks to the driver directly: if it cannot list healthy chips, no framework can use them."
    if f.npu_smi_path is None:
        status = "error" if f.driver is not None else "skip"
        return Check("npu_smi", title, status, "npu-smi not found on PATH", why,
                     "It ships with the driver (/usr/local/sbin/npu-smi); in containers mount it from the host.")
    assert f.npu_smi is not None
    code, out, report = f.npu_smi
    tail = out.strip().splitlines()[-1] if out.strip() else ""
    garbled = out.count("\ufffd")  # bytes that were not UTF-8 (see _run)
    if garbled and not report.chips:
        return Check("npu_smi", title, "error",
                     f"`npu-smi info` (exit {code}) printed unreadable output ({garbled} byte(s) that are not UTF-8 "
                     "text)", why,
                     f"Run `{f.npu_smi_path} info` by hand: a corrupt or wrong-architecture npu-smi, or a driver "
                     "that does not match the card, prints garbage; reinstall the driver package that ships it.",
                     {"path": f.npu_smi_path, "output_start": out[:200]})
    if code != 0:
        return Check("npu_smi", title, "error", f"`npu-smi info` failed (exit {code}): {tail}", why,
                     "Check that the driver is loaded (lsmod | grep drv_), that /dev/davinci* are visible (docker "
                     "--device) and that the user is in the HwHiAiUser group.", {"path": f.npu_smi_path})
    chips = report.chips
    details: dict[str, Any] = {"path": f.npu_smi_path, "version": report.version,
                               "chips": [c.__dict__ for c in chips]}
    if not chips:
        return Check("npu_smi", title, "error", "`npu-smi info` lists no NPU", why,
                     "Check the card is seated and the driver matches it (dmesg | grep -i davinci).", details)
    names = sorted({c.name for c in chips})
    unhealthy = [c for c in chips if c.health.upper() != "OK"]
    busy = [c for c in chips if c.memory_total_mb and c.memory_used_mb is not None
            and c.memory_used_mb / c.memory_total_mb > HBM_BUSY_FRACTION]
    npus = sorted({c.npu for c in chips})
    found = f"{len(npus)} NPU(s), {len(chips)} chip(s): {', '.join(names)}"
    if unhealthy:
        worst = "error" if any(c.health.upper() not in ("WARNING",) for c in unhealthy) else "warn"
        return Check("npu_smi", title, worst,
                     found + "; unhealthy: " + ", ".join(f"NPU {c.npu} chip {c.chip} {c.health}" for c in unhealthy),
                     why, "Look at `npu-smi info -t health -i <npu>` for the alarm code; a reset or RMA may be needed.",
                     details)
    if busy:
        return Check("npu_smi", title, "warn",
                     found + "; memory already in use: " + ", ".join(
                         f"NPU {c.npu} {c.memory_used_mb}/{c.memory_total_mb} MB" for c in busy), why,
                     "Another process holds device memory (npu-smi info shows it); stop it or pick other devices "
                     "with ASCEND_RT_VISIBLE_DEVICES.", details)
    return Check("npu_smi", title, "ok", found + ", all health OK", why, "", details)

