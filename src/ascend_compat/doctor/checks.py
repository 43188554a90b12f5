"""Environment checks for an Ascend machine: what is installed, whether the pieces fit together, and how to fix it.

Every check returns a :class:`Check` value (never raises): what was found, why it matters and the fix. Nothing here
imports torch or torch_npu (their versions come from package metadata), so the doctor works where they are broken.

All outside inputs go through a :class:`Probe` (a root directory standing for ``/``, the environment mapping with its
PATH, the machine name, the package-version lookup, the library loader, the command runner and the disk-usage call),
so tests build fake CANN trees and fake ``npu-smi`` scripts and run the real checks on them.

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
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Optional

from ascend_compat._dist import version_of
from ascend_compat.doctor.versions import CannVersion, PyVersion, compatible_range, info_get, read_info

STATUSES = ("ok", "warn", "error", "skip")
#: Documented range of HCCL_CONNECT_TIMEOUT in seconds (CANN HCCL user guide); 120 is the default.
HCCL_CONNECT_TIMEOUT_RANGE = (120, 7200)
#: torch_npu warns below this when process groups are built from a RANK_TABLE_FILE (ProcessGroupHCCL.cpp).
HCCL_RANK_TABLE_MIN_TIMEOUT = 300
#: Free space under the kernel cache: compiled operators and graph caches take gigabytes on real models.
DISK_WARN_BYTES = 5 << 30
DISK_ERROR_BYTES = 1 << 30
#: HBM already held by other processes above this share makes an out-of-memory likely.
HBM_BUSY_FRACTION = 0.5
ASCEND = "usr/local/Ascend"


@dataclass(frozen=True)
class Check:
    """One finding: ``status`` is ok, warn, error or skip (not applicable, or needs a check that failed first)."""

    id: str
    title: str
    status: str
    found: str
    why: str = ""
    fix: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "found": self.found,
            "why": self.why,
            "fix": self.fix,
            "details": self.details,
        }


# ---------------------------------------------------------------------------------------------------------------
# Probe: everything that touches the machine


def _run(argv: list[str], timeout: float) -> tuple[int, str]:
    """Run ``argv``; (exit status, stdout+stderr). A command that cannot start or hangs reports -1 and why.

    Output is decoded as UTF-8 with undecodable bytes replaced (U+FFFD): a tool printing binary or another encoding
    must give a readable finding, not an exception.
    """
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:g} s"
    except OSError as exc:
        return -1, str(exc)
    return proc.returncode, (proc.stdout or b"").decode("utf-8", "replace") + (proc.stderr or b"").decode(
        "utf-8", "replace")


#: Seconds the library-loading subprocess may take (a constructor that hangs must not hang the doctor).
LIBRARY_LOAD_TIMEOUT = 30.0

# Runs in a fresh interpreter: loads each library given on the command line in order, printing one JSON line
# before (so a crash names the library it happened in) and one after each load.
_LOAD_SCRIPT = """
import ctypes, json, sys
for path in sys.argv[1:]:
    print(json.dumps(["start", path]), flush=True)
    try:
        ctypes.CDLL(path)
        error = None
    except OSError as exc:
        error = str(exc)
    print(json.dumps(["done", path, error]), flush=True)
"""


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _load_libraries(paths: list[str], timeout: float = LIBRARY_LOAD_TIMEOUT) -> dict[str, Optional[str]]:
    """dlopen each of ``paths`` (in order, in one child process); per path None on success or why it failed.

    Loading runs in a subprocess because a library's constructor can abort or segfault, which would kill the doctor.
    When the child dies in a library, that library gets the error (with the signal) and the rest are tried again in
    a new child, so one crashing library never hides the state of the others.
    """
    results: dict[str, Optional[str]] = {}
    todo = list(dict.fromkeys(paths))
    while todo:
        try:
            proc = subprocess.run([sys.executable, "-I", "-S", "-c", _LOAD_SCRIPT, *todo], capture_output=True,
                                  timeout=timeout, check=False)
            out, code, timed_out = proc.stdout, proc.returncode, False
        except subprocess.TimeoutExpired as exc:
            out, code, timed_out = exc.stdout or b"", None, True
        except OSError as exc:
            for path in todo:
                results[path] = f"could not start a process to load it: {exc}"
            break
        current: Optional[str] = None
        for line in out.decode("utf-8", "replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a library's constructor may print to stdout
            if isinstance(record, list) and record[:1] == ["start"] and len(record) == 2:
                current = record[1]
            elif isinstance(record, list) and record[:1] == ["done"] and len(record) == 3:
                results[record[1]] = record[2]
                current = None
        if current is None:
            if code == 0:
                break
            # The child died before loading anything (or between libraries): report it on all that are left.
            why = "timed out" if timed_out else f"the loader process exited with {code}"
            for path in todo:
                results.setdefault(path, why)
            break
        if timed_out:
            results[current] = f"loading it did not finish within {timeout:g} s (a constructor hangs)"
        elif code is not None and code < 0:
            results[current] = (f"loading it killed the process with {_signal_name(code)} (a constructor in it or "
                                "in a dependency crashed)")
        else:
            results[current] = f"loading it ended the process with exit status {code}"
        left = [p for p in todo if p not in results]
        if len(left) == len(todo):  # no progress (a library printed look-alike lines): do not loop forever
            for path in left:
                results[path] = f"the loader process exited with {code}"
            break
        todo = left
    return results


@dataclass
class Probe:
    """The machine as the checks see it. Defaults are this process's machine; tests inject their own."""

    root: Path = Path("/")
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    machine: str = field(default_factory=platform.machine)
    python_version: tuple[int, int, int] = field(default_factory=lambda: tuple(sys.version_info[:3]))  # type: ignore[assignment]
    dist_version: Callable[[str], Optional[str]] = version_of
    load_libraries: Callable[[list[str]], dict[str, Optional[str]]] = _load_libraries
    run: Callable[[list[str], float], tuple[int, str]] = _run
    disk_usage: Callable[[str], Any] = shutil.disk_usage
    npu_smi_timeout: float = 20.0

    def at(self, absolute: str) -> Path:
        """A system path (``/usr/local/Ascend/...``) under :attr:`root`."""
        return Path(self.root) / absolute.lstrip("/")

    def which(self, command: str) -> Optional[str]:
        return shutil.which(command, path=self.env.get("PATH", ""))

    def package_version(self, *names: str) -> Optional[str]:
        for name in names:
            version = self.dist_version(name)
            if version:
                return version
        return None


# ---------------------------------------------------------------------------------------------------------------
# The version matrix


@functools.lru_cache(maxsize=1)
def load_matrix() -> dict[str, Any]:
    """The packaged torch_npu / PyTorch / CANN support matrix (``data/version_matrix.json``)."""
    text = resources.files("ascend_compat.doctor").joinpath("data/version_matrix.json").read_text(encoding="utf-8")
    return json.loads(text)


def matrix_rows() -> list[dict[str, Any]]:
    return list(load_matrix()["pairs"])


def rows_for_torch_npu(version: str) -> list[dict[str, Any]]:
    """Rows whose torch_npu release is exactly ``version`` (PEP 440 equality, local part ignored)."""
    want = PyVersion.try_parse(version)
    if want is None:
        return []
    out = []
    for row in matrix_rows():
        have = PyVersion.parse(row["torch_npu"])
        if have.key == want.key:
            out.append(row)
    return out


def rows_for_torch(version: str) -> list[dict[str, Any]]:
    """Rows built for exactly this torch release (``2.7.1+cpu`` -> rows with torch 2.7.1)."""
    want = PyVersion.try_parse(version)
    if want is None:
        return []
    return [row for row in matrix_rows() if PyVersion.parse(row["torch"]).key == PyVersion.parse(want.public).key]


def python_for_torch(version: str) -> Optional[list[str]]:
    """Python versions torch_npu publishes wheels for with this torch release; None when the matrix has no entry."""
    want = PyVersion.try_parse(version)
    if want is None:
        return None
    for entry in load_matrix()["torch_python"]:
        if PyVersion.parse(entry["torch"]).key == PyVersion.parse(want.public).key:
            return list(entry["python"])
    return None


def _newest(rows: list[dict[str, Any]], key: str = "torch_npu") -> Optional[dict[str, Any]]:
    if not rows:
        return None
    if key == "cann":
        return max(rows, key=lambda r: (CannVersion.parse(r["cann"]), PyVersion.parse(r["torch_npu"])))
    return max(rows, key=lambda r: PyVersion.parse(r[key]))


# ---------------------------------------------------------------------------------------------------------------
# What is installed (computed once per run)


@dataclass(frozen=True)
class Toolkit:
    home: Path
    how: str
    version: Optional[str]
    version_file: Optional[Path]
    inner_version: Optional[str]
    missing_env_dir: Optional[str] = None  # "ASCEND_HOME_PATH=/x" when a variable points nowhere


@dataclass(frozen=True)
class NpuChip:
    npu: int
    chip: int
    name: str
    health: str
    bus_id: str
    memory_used_mb: Optional[int]
    memory_total_mb: Optional[int]
    memory_kind: str
    #: Second number of the chip row where there is one: ``Phy-ID`` on Atlas A3 (910C), ``Device`` on 300I Duo.
    phy_id: Optional[int] = None


@dataclass(frozen=True)
class NpuSmiReport:
    version: Optional[str]
    chips: list[NpuChip]


def parse_npu_smi_info(text: str) -> NpuSmiReport:
    """Parse the table ``npu-smi info`` prints (device rows come in pairs: NPU/name/health, then chip/bus/usage).

    The chip row starts with the chip number (Atlas A2: ``| 0 | 0000:C1:00.0 |``) or, on Atlas A3 / 910C and
    300I Duo, with the chip number and a second id (``| 1  3 | 0000:9B:00.0 |``, header ``Chip Phy-ID`` or
    ``Chip Device``); there every chip is a device of its own. Only the first table is read; the process table after
    it is ignored. Memory is the last ``used / total`` pair of the second row, which is HBM on training chips and
    DDR on inference chips (the header says which).
    """
    version = None
    chips: list[NpuChip] = []
    memory_kind = "memory"
    pending: Optional[tuple[int, str, str]] = None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", line)
        if m:
            version = m.group(1)
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if "Process id" in line or "Process name" in line:
            break  # the process table follows the device table
        if "HBM-Usage" in line:
            memory_kind = "HBM"
        first = re.fullmatch(r"(\d+)\s+(\S+)", cells[0])
        if first and len(cells) >= 2 and re.fullmatch(r"[A-Za-z]+", cells[1] or ""):
            pending = (int(first.group(1)), first.group(2), cells[1])
            continue
        chip_ids = re.fullmatch(r"([0-9]+)(?:\s+([0-9]+))?", cells[0])
        if pending and chip_ids and len(cells) >= 3:
            pairs = re.findall(r"(\d+)\s*/\s*(\d+)", cells[2])
            used, total = (int(pairs[-1][0]), int(pairs[-1][1])) if pairs else (None, None)
            npu, name, health = pending
            phy = int(chip_ids.group(2)) if chip_ids.group(2) is not None else None
            chips.append(NpuChip(npu, int(chip_ids.group(1)), name, health, cells[1], used, total, memory_kind, phy))
            pending = None
    return NpuSmiReport(version, chips)


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


# ---------------------------------------------------------------------------------------------------------------
# The checks


def _set_env_script(f: Facts) -> str:
    """The set_env.sh a user should source for the toolkit that was found (or the default one)."""
    tk = f.toolkit
    if tk is not None and tk.home.is_dir():
        for candidate in (tk.home / "set_env.sh", tk.home.parent / "set_env.sh"):
            if candidate.is_file():
                return str(candidate)
    return "/usr/local/Ascend/ascend-toolkit/set_env.sh (CANN 8.5+: /usr/local/Ascend/cann/set_env.sh)"


def check_python(f: Facts) -> Check:
    v = f.p.python_version
    found = f"Python {v[0]}.{v[1]}.{v[2]}"
    why = "torch and torch_npu publish wheels for a few Python versions per release only."
    if (v[0], v[1]) < (3, 8):
        return Check("python", "Python", "error", found, why, "Use Python 3.9 or newer (3.10/3.11 suit most lines).")
    torch = f.torch
    allowed = python_for_torch(torch) if torch else None
    mine = f"{v[0]}.{v[1]}"
    if allowed is None:
        return Check("python", "Python", "ok", found, why, "", {"published_for_torch": None})
    if mine in allowed:
        return Check("python", "Python", "ok", f"{found} (torch {torch} lists {', '.join(allowed)})", why, "",
                     {"published_for_torch": allowed})
    return Check(
        "python", "Python", "warn",
        f"{found}; torch_npu with torch {torch} is published for Python {', '.join(allowed)}",
        why + " pip finds no torch_npu wheel for this Python, or an untested one.",
        f"Create an environment with Python {allowed[-1]} (or {allowed[0]}) for this torch line.",
        {"published_for_torch": allowed},
    )


def check_torch(f: Facts) -> Check:
    title = "PyTorch"
    why = ("torch_npu is built against one exact torch release, and on x86_64 against its CPU build "
           "(torch==X+cpu); a CUDA build carries CUDA libraries torch_npu never uses and can clash with it.")
    raw = f.torch
    if raw is None:
        return Check("torch", title, "error", "torch is not installed", why,
                     _torch_install_hint(f, None))
    v = PyVersion.try_parse(raw)
    if v is None:
        return Check("torch", title, "warn", f"torch {raw} (unparseable version)", why, "Reinstall torch from pypi.")
    details = {"version": raw, "build": v.local or None}
    if v.cuda_build:
        status = "error" if f.npu_machine else "warn"
        machine = "this NPU machine" if f.npu_machine else "an NPU machine"
        return Check("torch", title, status, f"torch {raw} is a {v.cuda_build} (GPU) build", why,
                     f"On {machine} install the CPU build torch_npu pins: {_torch_install_hint(f, v.public)}", details)
    return Check("torch", title, "ok", f"torch {raw}" + (" (CPU build)" if v.local == "cpu" else ""), why, "", details)


def _torch_install_hint(f: Facts, torch_public: Optional[str]) -> str:
    rows = rows_for_torch_npu(f.torch_npu) if f.torch_npu else (rows_for_torch(torch_public) if torch_public else [])
    row = _newest(rows) or _newest(matrix_rows(), key="cann")
    assert row is not None
    arch = "x86_64" if f.p.machine in ("x86_64", "AMD64") else "aarch64"
    req = row["torch_requirement"][arch]
    index = " --index-url https://download.pytorch.org/whl/cpu" if arch == "x86_64" else ""
    return f"pip install '{req}'{index}"


def check_torch_npu(f: Facts) -> Check:
    title = "torch_npu"
    why = "torch_npu is the PyTorch backend for Ascend; each release requires exactly one torch release."
    raw = f.torch_npu
    if raw is None:
        newest = _newest(rows_for_torch(f.torch), "cann") if f.torch else None
        if newest:
            fix = (f"pip install torch-npu=={newest['torch_npu']}  (the release for torch {newest['torch']}, "
                   f"paired with CANN {newest['cann']})")
        else:
            top = _newest(matrix_rows(), "cann")
            assert top is not None
            arch = "x86_64" if f.p.machine in ("x86_64", "AMD64") else "aarch64"
            fix = (f"torch {f.torch or '(none)'} has no torch_npu release; the newest pair is torch_npu "
                   f"{top['torch_npu']} + CANN {top['cann']}: pip install '{top['torch_requirement'][arch]}' "
                   f"torch-npu=={top['torch_npu']}"
                   + (" --extra-index-url https://download.pytorch.org/whl/cpu" if arch == "x86_64" else ""))
        return Check("torch_npu", title, "error", "torch_npu is not installed", why, fix)
    rows = rows_for_torch_npu(raw)
    v = PyVersion.try_parse(raw)
    torch = PyVersion.try_parse(f.torch) if f.torch else None
    if v is None:
        return Check("torch_npu", title, "warn", f"torch_npu {raw} (unparseable version)", why, "Reinstall torch_npu.")
    needed = rows[0]["torch"] if rows else v.base
    details = {"version": raw, "in_matrix": bool(rows), "requires_torch": needed}
    if torch is None:
        return Check("torch_npu", title, "error", f"torch_npu {raw}, but torch is missing", why,
                     _torch_install_hint(f, needed), details)
    if PyVersion.parse(torch.public).key != PyVersion.parse(needed).key:
        return Check("torch_npu", title, "error", f"torch_npu {raw} requires torch {needed}; torch is {f.torch}", why,
                     f"{_torch_install_hint(f, needed)}  (or install the torch_npu release built for torch "
                     f"{torch.public})", details)
    if not rows:
        return Check("torch_npu", title, "warn", f"torch_npu {raw} with torch {f.torch} (release not in the version "
                     "matrix: a development or newer build)", why,
                     "Prefer a release listed in Ascend/pytorch COMPATIBILITY.en.md.", details)
    return Check("torch_npu", title, "ok", f"torch_npu {raw} with torch {f.torch}", why, "", details)


def check_cann_toolkit(f: Facts) -> Check:
    title = "CANN toolkit"
    why = "The CANN toolkit provides the runtime (ACL), HCCL and operator libraries torch_npu loads at import."
    expected = _newest(rows_for_torch_npu(f.torch_npu)) if f.torch_npu else None
    if expected:
        want = f"CANN {expected['cann']} (the release torch_npu {f.torch_npu} was validated with)"
    else:
        top = _newest(matrix_rows(), "cann")
        want = "the CANN release paired with your torch_npu" + (
            f" (newest pair: CANN {top['cann']} with torch_npu {top['torch_npu']})" if top else "")
    tk = f.toolkit
    if tk is None:
        return Check("cann_toolkit", title, "error", "no CANN toolkit (looked at $ASCEND_HOME_PATH, "
                     "$ASCEND_TOOLKIT_HOME, /usr/local/Ascend/ascend-toolkit/latest, /usr/local/Ascend/cann, "
                     "~/Ascend)", why, f"Install {want} (toolkit + ops/kernels package), then source set_env.sh.")
    if not tk.home.is_dir():
        return Check("cann_toolkit", title, "error", f"{tk.missing_env_dir} does not exist", why,
                     f"Point the variable at an installed toolkit (source its set_env.sh) or install {want}.")
    details = {"home": str(tk.home), "how": tk.how, "version": tk.version, "version_file":
               str(tk.version_file) if tk.version_file else None, "innerversion": tk.inner_version}
    found = f"CANN {tk.version or '(unknown version)'} at {tk.home} ({tk.how})"
    if tk.missing_env_dir:
        return Check("cann_toolkit", title, "warn", f"{found}; but {tk.missing_env_dir} does not exist", why,
                     f"Fix or unset the variable: source {_set_env_script(f)}", details)
    if tk.version is None or f.toolkit_version is None:
        return Check("cann_toolkit", title, "warn", found + " - no readable version file", why,
                     "Reinstall the toolkit; its version is normally in <arch>-linux/ascend_toolkit_install.info.",
                     details)
    return Check("cann_toolkit", title, "ok", found, why, "", details)


def check_cann_kernels(f: Facts) -> Check:
    title = "CANN operator package"
    why = ("Prebuilt operator binaries (the kernels / ops package) must match the toolkit; without them operators "
           "are compiled at first use (slow) or are missing.")
    if not f.toolkit_found:
        return Check("cann_kernels", title, "skip", "no CANN toolkit", why)
    k = f.kernels
    if k is None:
        return Check("cann_kernels", title, "warn", "no operator package found next to the toolkit", why,
                     "Install the Ascend-cann-kernels-<chip> (CANN 8.5+: Ascend-cann-<chip>-ops) package of the same "
                     "version as the toolkit.")
    path, version = k
    tv = f.toolkit_version
    kv = CannVersion.try_parse(version)
    if tv is not None and kv is not None and kv != tv:
        return Check("cann_kernels", title, "warn", f"operator package {version} but toolkit {tv}", why,
                     f"Install the operator package for CANN {tv}.", {"file": path, "version": version})
    return Check("cann_kernels", title, "ok", f"operator package {version or '(version unknown)'}", why, "",
                 {"file": path, "version": version})


def check_cann_nnal(f: Facts) -> Check:
    title = "CANN NNAL (ATB)"
    why = "NNAL's ATB library backs fused transformer operators used by vllm-ascend, MindIE and some torch_npu ops."
    n = f.nnal
    if n is None:
        return Check("cann_nnal", title, "skip", "NNAL not installed (optional)", why,
                     "Only if you need ATB: install Ascend-cann-nnal of the toolkit's version and source "
                     "/usr/local/Ascend/nnal/atb/set_env.sh.")
    path, version = n
    details = {"path": str(path), "version": version}
    tv = f.toolkit_version
    nv = CannVersion.try_parse(version)
    if nv is None:
        return Check("cann_nnal", title, "warn", f"NNAL at {path} without a readable version.info", why,
                     "Reinstall NNAL.", details)
    if tv is not None and nv != tv:
        return Check("cann_nnal", title, "warn", f"NNAL {version} but toolkit {tv}", why,
                     f"Install NNAL {tv} (NNAL must match the toolkit release).", details)
    if not f.p.env.get("ATB_HOME_PATH"):
        return Check("cann_nnal", title, "warn", f"NNAL {version} at {path}, but ATB_HOME_PATH is not set", why,
                     f"source {path.parent / 'set_env.sh'}", details)
    return Check("cann_nnal", title, "ok", f"NNAL {version} at {path}", why, "", details)


def check_torch_npu_cann(f: Facts) -> Check:
    title = "torch_npu and CANN pairing"
    why = ("Each torch_npu release is validated with one CANN release; an older CANN lacks APIs torch_npu calls "
           "(undefined symbols, missing operators), a newer one is untested.")
    if f.torch_npu is None:
        return Check("torch_npu_cann", title, "skip", "torch_npu not installed", why)
    tv = f.toolkit_version
    if tv is None:
        return Check("torch_npu_cann", title, "skip", "CANN version unknown", why)
    rows = rows_for_torch_npu(f.torch_npu)
    torch_npu = PyVersion.try_parse(f.torch_npu)
    line_rows = rows_for_torch(torch_npu.base) if torch_npu else []
    for_my_cann = [r for r in line_rows if CannVersion.parse(r["cann"]) == tv]
    alt = _newest(for_my_cann)
    alt_fix = f"pip install torch-npu=={alt['torch_npu']} (its release for CANN {tv})" if alt else ""
    details = {"torch_npu": f.torch_npu, "cann": str(tv), "paired_cann": sorted({r["cann"] for r in rows})}
    if not rows:
        if alt:
            return Check("torch_npu_cann", title, "warn", f"torch_npu {f.torch_npu} is not in the matrix; CANN {tv}",
                         why, alt_fix, details)
        return Check("torch_npu_cann", title, "warn", f"torch_npu {f.torch_npu} / CANN {tv}: no published pairing",
                     why, "Use a combination from Ascend/pytorch COMPATIBILITY.en.md.", details)
    paired = [CannVersion.parse(r["cann"]) for r in rows]
    if tv in paired:
        return Check("torch_npu_cann", title, "ok", f"torch_npu {f.torch_npu} with CANN {tv} (official pair)", why,
                     "", details)
    base = next((c for c in paired if _is_patch_of(tv, c)), None)
    if base is not None:
        return Check("torch_npu_cann", title, "ok", f"torch_npu {f.torch_npu} with CANN {tv} (a patch release of its "
                     f"official pair CANN {base})", why, "", details)
    want = max(paired)
    if tv < min(paired):
        return Check("torch_npu_cann", title, "error",
                     f"CANN {tv} is older than the CANN {want} torch_npu {f.torch_npu} was built for", why,
                     f"{alt_fix}; or install CANN {want}." if alt else f"Install CANN {want}.", details)
    return Check("torch_npu_cann", title, "warn",
                 f"torch_npu {f.torch_npu} was validated with CANN {want}, found CANN {tv}", why,
                 f"{alt_fix}." if alt else f"Install CANN {want}, or the torch_npu release paired with CANN {tv}.",
                 details)


def _is_patch_of(version: CannVersion, release: CannVersion) -> bool:
    """``8.2.RC1.1`` is a patch of ``8.2.RC1`` (same release, extra trailing numbers); nothing is a patch of itself."""
    extra, base_extra = version.key[5], release.key[5]
    return (version.key[:5] == release.key[:5] and len(extra) > len(base_extra)
            and extra[:len(base_extra)] == base_extra)


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
    details = {"version": version, "file": str(path)}
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


def _ld_dirs(f: Facts) -> list[str]:
    return [d for d in f.p.env.get("LD_LIBRARY_PATH", "").split(":") if d]


def _same_dir(a: str, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(str(b))
    except OSError:
        return False


def check_set_env(f: Facts) -> Check:
    title = "CANN environment (set_env.sh)"
    why = ("set_env.sh exports ASCEND_HOME_PATH, ASCEND_OPP_PATH and puts the toolkit's lib64 on LD_LIBRARY_PATH; "
           "without it `import torch_npu` fails to find libhccl.so / libascendcl.so or the operator packages.")
    if not f.toolkit_found or f.toolkit is None:
        return Check("set_env", title, "skip", "no CANN toolkit", why)
    env = f.p.env
    problems = []
    home = env.get("ASCEND_HOME_PATH")
    if not home:
        problems.append("ASCEND_HOME_PATH is not set")
    elif not Path(home).is_dir():
        problems.append(f"ASCEND_HOME_PATH={home} does not exist")
    opp = env.get("ASCEND_OPP_PATH")
    if not opp:
        problems.append("ASCEND_OPP_PATH is not set")
    elif not Path(opp).is_dir():
        problems.append(f"ASCEND_OPP_PATH={opp} does not exist")
    lib64 = f.toolkit.home / "lib64"
    if not any(_same_dir(d, lib64) for d in _ld_dirs(f)):
        problems.append(f"LD_LIBRARY_PATH does not contain {lib64}")
    details = {k: env.get(k) for k in ("ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_TOOLKIT_HOME")}
    if problems:
        return Check("set_env", title, "error", "; ".join(problems), why,
                     f"source {_set_env_script(f)}  (add it to ~/.bashrc or the container entrypoint)", details)
    return Check("set_env", title, "ok", "ASCEND_HOME_PATH, ASCEND_OPP_PATH and LD_LIBRARY_PATH are set", why, "",
                 details)


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
        for d in _ld_dirs(f):
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
                            else f"source {_set_env_script(f) if owner == 'toolkit' else _nnal_set_env(f)}"))
        elif "killed the process" in error or "did not finish" in error:
            fixes.append(f"{name} (found on the system search path) {error}: reinstall its package")
        else:
            fixes.append(f"{name} is not installed: install the {owner} package")
    if missing:
        return Check("libraries", title, "error", f"cannot load {', '.join(missing)}", why, "; ".join(fixes), results)
    return Check("libraries", title, "ok", f"loaded {', '.join(results)}", why, "", results)


def _nnal_set_env(f: Facts) -> str:
    # NNAL installs nnal/atb/<version>/ with a `latest` link; set_env.sh sits next to them.
    return str(f.nnal[0].parent / "set_env.sh") if f.nnal else "/usr/local/Ascend/nnal/atb/set_env.sh"


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


#: (check, needs --full). The order is the report's order.
CHECKS: tuple[tuple[Callable[[Facts], Check], bool], ...] = (
    (check_python, False),
    (check_torch, False),
    (check_torch_npu, False),
    (check_cann_toolkit, False),
    (check_cann_kernels, False),
    (check_cann_nnal, False),
    (check_torch_npu_cann, False),
    (check_driver, False),
    (check_firmware, False),
    (check_set_env, False),
    (check_libraries, True),
    (check_npu_smi, True),
    (check_visible_devices, False),
    (check_hccl_timeout, False),
    (check_disk_cache, False),
)


def run_checks(probe: Optional[Probe] = None, full: bool = False) -> list[Check]:
    """Run every check (the slow ones only with ``full``); one failing check never stops the others."""
    facts = Facts(probe or Probe())
    out = []
    for check, slow in CHECKS:
        name = check.__name__[len("check_"):]
        if slow and not full:
            continue
        try:
            out.append(check(facts))
        except Exception as exc:  # a bug or an odd machine must not hide the other findings
            out.append(Check(name, name, "error", f"the check itself failed: {type(exc).__name__}: {exc}",
                             "An internal error of ascend-compat doctor.", "Please report it with the block below."))
    return out


def environment(probe: Optional[Probe] = None) -> dict[str, Any]:
    """The facts worth pasting into a bug report (versions, locations, relevant variables)."""
    from ascend_compat import __version__

    p = probe or Probe()
    f = Facts(p)
    tk = f.toolkit if f.toolkit_found else None
    nnal = f.nnal
    keys = sorted(k for k in p.env if k.startswith(("ASCEND_", "HCCL_", "ATB_", "TORCH_NPU", "PYTORCH_NPU"))
                  or k in ("CUDA_VISIBLE_DEVICES", "RANK_TABLE_FILE", "LD_LIBRARY_PATH"))
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


def env_block(env: dict[str, Any]) -> str:
    """``environment()`` as aligned ``key: value`` lines for a fenced block in an issue."""
    lines = [f"{k}: {v if v is not None else '-'}" for k, v in env.items() if k != "env"]
    lines += [f"{k}={v}" for k, v in env.get("env", {}).items()]
    return "\n".join(lines)
