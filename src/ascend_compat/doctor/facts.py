"""What is installed, looked up once per doctor run: :class:`Facts` answers the checks' questions from a probe.

Layouts understood (all documented by Huawei):

* CANN up to 8.3: ``/usr/local/Ascend/ascend-toolkit/latest`` (a link to ``<version>/``) with
  ``<arch>-linux/ascend_toolkit_install.info`` (``version=8.0.RC2``, ``innerversion=V100R001C18...``),
  ``runtime/version.info`` (``Version=...``), ``lib64/`` and ``opp/``; ``ascend-toolkit/set_env.sh``.
* CANN 8.5 and later: ``/usr/local/Ascend/cann-<version>`` (``/usr/local/Ascend/cann`` links to it) with the same
  ``<arch>-linux/ascend_toolkit_install.info`` and ``set_env.sh`` inside; operator packages write
  ``<arch>-linux/ascend_ops_install.info``.
* Non-root installs: the same under ``$HOME/Ascend``.
* NNAL (ATB): ``/usr/local/Ascend/nnal/atb/latest/version.info`` (``Ascend-cann-atb : 8.2.RC2``),
  ``atb/cxx_abi_{0,1}/lib/libatb.so``; ``nnal/atb/set_env.sh`` exports ``ATB_HOME_PATH``.
* Driver and firmware: ``/usr/local/Ascend/driver/version.info`` (``Version=24.1.rc2``, ``package_version=...``,
  ``compatible_version=[V100R001C15],...``, ``compatible_version_fw=[7.0.0,7.2.99]``), ``driver/lib64/driver/
  libascend_hal.so``, ``/usr/local/Ascend/firmware/version.info`` (``Version=7.7.0.1.231``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ascend_compat.doctor.npu_smi import NpuSmiReport, parse_npu_smi_info
from ascend_compat.doctor.probe import Probe
from ascend_compat.doctor.versions import CannVersion, info_get, read_info

__all__ = ["ASCEND", "Facts", "Toolkit", "ld_dirs", "nnal_set_env", "set_env_script"]

#: Where Huawei's installers put everything, relative to the probe's root.
ASCEND = "usr/local/Ascend"


@dataclass(frozen=True)
class Toolkit:
    """The CANN toolkit found (or the directory a variable names that does not exist: see ``missing_env_dir``)."""

    home: Path
    how: str
    version: Optional[str]
    version_file: Optional[Path]
    inner_version: Optional[str]
    missing_env_dir: Optional[str] = None  # "ASCEND_HOME_PATH=/x" when a variable points nowhere



class Facts:
    """Lazily computed facts about the machine shared by the checks (each is looked up once)."""

    def __init__(self, probe: Probe) -> None:
        self.p = probe

    # --- Python packages ---------------------------------------------------------------------------------------
    @functools.cached_property
    def torch(self) -> Optional[str]:
        return self.p.package_version("torch")

    @functools.cached_property
    def torch_npu(self) -> Optional[str]:
        return self.p.package_version("torch_npu", "torch-npu")

    # --- CANN --------------------------------------------------------------------------------------------------
    def _toolkit_candidates(self) -> list[tuple[Path, str]]:
        out: list[tuple[Path, str]] = []
        for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
            value = self.p.env.get(var)
            if value:
                out.append((Path(value), f"${var}"))
        out.append((self.p.at(f"{ASCEND}/ascend-toolkit/latest"), "default location"))
        out.append((self.p.at(f"{ASCEND}/cann"), "default location (CANN 8.5+)"))
        home = self.p.env.get("HOME")
        if home:
            out.append((Path(home) / "Ascend/ascend-toolkit/latest", "non-root install location"))
            out.append((Path(home) / "Ascend/cann", "non-root install location (CANN 8.5+)"))
        return out

    def _toolkit_version(self, home: Path) -> tuple[Optional[str], Optional[Path], Optional[str]]:
        files = [home / f"{self.p.machine}-linux" / "ascend_toolkit_install.info"]
        try:
            files += sorted(p for p in home.glob("*-linux/ascend_toolkit_install.info") if p not in files)
        except OSError:
            pass
        for path in files:
            info = read_info(path)
            version = info_get(info, "version")
            if version:
                return version, path, info_get(info, "innerversion")
        # Older trees carry only per-component files; runtime's Version is the release number.
        for rel in ("runtime/version.info", "compiler/version.info"):
            info = read_info(home / rel)
            version = info_get(info, "Version")
            if version and CannVersion.try_parse(version):
                return version, home / rel, info_get(info, "innerversion")
        return None, None, None

    @functools.cached_property
    def toolkit(self) -> Optional[Toolkit]:
        missing = None
        for path, how in self._toolkit_candidates():
            if not path.is_dir():
                if how.startswith("$") and missing is None:
                    missing = f"{how[1:]}={path}"
                continue
            version, vfile, inner = self._toolkit_version(path)
            return Toolkit(path, how, version, vfile, inner, missing)
        if missing:
            return Toolkit(Path(missing.split("=", 1)[1]), "", None, None, None, missing)
        return None

    @property
    def toolkit_found(self) -> bool:
        return self.toolkit is not None and self.toolkit.home.is_dir()

    @functools.cached_property
    def toolkit_version(self) -> Optional[CannVersion]:
        return CannVersion.try_parse(self.toolkit.version) if self.toolkit_found and self.toolkit else None

    @functools.cached_property
    def kernels(self) -> Optional[tuple[str, Optional[str]]]:
        """(file, version) of the operator binary package (kernels / ops), or None."""
        if not self.toolkit_found or self.toolkit is None:
            return None
        home = self.toolkit.home
        files = [*sorted(home.glob("*-linux/ascend_ops_install.info")), home / "opp_kernel/version.info"]
        for path in files:
            info = read_info(path)
            if info is not None:
                return str(path), info_get(info, "version", "Version")
        return None

    @functools.cached_property
    def nnal(self) -> Optional[tuple[Path, Optional[str]]]:
        """(NNAL ATB directory, version) or None."""
        candidates = []
        atb_home = self.p.env.get("ATB_HOME_PATH")
        if atb_home:
            # ATB_HOME_PATH is .../nnal/atb/latest/atb/cxx_abi_N; version.info lives two levels up.
            candidates.append(Path(atb_home).parent.parent)
        candidates.append(self.p.at(f"{ASCEND}/nnal/atb/latest"))
        home = self.p.env.get("HOME")
        if home:
            candidates.append(Path(home) / "Ascend/nnal/atb/latest")
        for path in candidates:
            if path.is_dir():
                return path, info_get(read_info(path / "version.info"), "Ascend-cann-atb")
        return None

    @functools.cached_property
    def driver(self) -> Optional[dict[str, str]]:
        return read_info(self.p.at(f"{ASCEND}/driver/version.info"))

    @functools.cached_property
    def driver_version(self) -> Optional[str]:
        # package_version is the HDK release; some driver builds put a component number in Version.
        return info_get(self.driver, "package_version", "Version")

    @functools.cached_property
    def firmware(self) -> Optional[dict[str, str]]:
        return read_info(self.p.at(f"{ASCEND}/firmware/version.info"))

    @property
    def npu_machine(self) -> bool:
        """Signs that this is (meant to be) an NPU machine: a driver, a toolkit or torch_npu."""
        return self.driver is not None or self.toolkit_found or self.torch_npu is not None

    # --- npu-smi -----------------------------------------------------------------------------------------------
    @functools.cached_property
    def npu_smi_path(self) -> Optional[str]:
        found = self.p.which("npu-smi")
        if found:
            return found
        for rel in ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi", f"/{ASCEND}/driver/tools/npu-smi"):
            path = self.p.at(rel)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
        return None

    @functools.cached_property
    def npu_smi(self) -> Optional[tuple[int, str, NpuSmiReport]]:
        if not self.npu_smi_path:
            return None
        code, out = self.p.run([self.npu_smi_path, "info"], self.p.npu_smi_timeout)
        return code, out, parse_npu_smi_info(out) if code == 0 else NpuSmiReport(None, [])


def set_env_script(f: Facts) -> str:
    """The set_env.sh a user should source for the toolkit that was found (or the default one)."""
    tk = f.toolkit
    if tk is not None and tk.home.is_dir():
        for candidate in (tk.home / "set_env.sh", tk.home.parent / "set_env.sh"):
            if candidate.is_file():
                return str(candidate)
    return "/usr/local/Ascend/ascend-toolkit/set_env.sh (CANN 8.5+: /usr/local/Ascend/cann/set_env.sh)"


def nnal_set_env(f: Facts) -> str:
    """The NNAL set_env.sh: NNAL installs nnal/atb/<version>/ with a ``latest`` link, set_env.sh next to them."""
    return str(f.nnal[0].parent / "set_env.sh") if f.nnal else "/usr/local/Ascend/nnal/atb/set_env.sh"


def ld_dirs(f: Facts) -> list[str]:
    """The directories of the probed LD_LIBRARY_PATH, in order."""
    return [d for d in f.p.env.get("LD_LIBRARY_PATH", "").split(":") if d]
