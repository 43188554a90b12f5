"""Which Triton is installed, read from package metadata and files (triton itself is never imported).

triton-ascend (distribution ``triton-ascend``) installs the same ``triton`` package as the community wheel, with
its NPU backend in ``triton/backends/ascend`` (``huawei`` in early 3.2 builds), registered under the
``triton.backends`` entry-point group, and its libdevice in ``triton/language/extra/cann`` (``.../ascend`` in 3.2.0).
The two cannot coexist: installing anything that depends on ``triton`` puts the community wheel's files over
triton-ascend's. The community (CUDA/ROCm) wheel on an NPU machine compiles nothing for the NPU.

One library patch lives here too (declared in :mod:`~ascend_compat.ecosystem.patching`, applied when
``triton.runtime.driver`` is imported under the shim on an NPU, or on CPU fallback): ``triton.npu-driver`` and
``triton.cpu-fallback-driver``, see :func:`_apply_driver`.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.metadata
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional

from ascend_compat import settings
from ascend_compat._dist import version_of

if TYPE_CHECKING:
    from ascend_compat.cuda_shim.ledger import Ledger

__all__ = ["ASCEND_BACKENDS", "detect", "npu_machine"]

#: Backend names triton-ascend has registered its NPU backend under.
ASCEND_BACKENDS = ("ascend", "huawei")
#: Distributions that install the community ``triton`` package (PyTorch's nightlies ship it as pytorch-triton).
COMMUNITY = ("triton", "pytorch-triton")
SOURCE = ("triton-lang/triton-ascend docs/en/installation_guide.md and docs/en/FAQ.md (community Triton and "
          "triton-ascend cannot coexist; reinstall order); setup.py (wheel name triton-ascend, triton.backends "
          "entry points)")
_REINSTALL = "pip uninstall -y triton triton-ascend && pip install triton-ascend"
_LIBDEVICE = (("cann", "triton.language.extra.cann.libdevice"), ("ascend", "triton.language.extra.ascend.libdevice"))


def npu_machine() -> bool:
    """Signs of an NPU machine that need no import: torch_npu installed (or simulated), NPU device nodes, or a
    CANN toolkit in its usual place or named by its environment variables."""
    if version_of("torch_npu") is not None:
        return True
    if settings.ASCEND_TOOLKIT_HOME.is_set() or settings.ASCEND_HOME_PATH.is_set():
        return True
    try:
        if any(name.startswith("davinci") for name in os.listdir("/dev")):
            return True
    except OSError:
        pass
    return os.path.isdir("/usr/local/Ascend/ascend-toolkit")


def _distributions(path: Optional[Sequence[str]]) -> list[importlib.metadata.Distribution]:
    md = importlib.metadata
    found = md.distributions(path=list(path)) if path is not None else md.distributions()
    seen: set[str] = set()
    out = []
    for dist in found:  # the first one on the path wins, as for imports
        name = _name(dist)
        if name and name not in seen:
            seen.add(name)
            out.append(dist)
    return out


def _name(dist: importlib.metadata.Distribution) -> str:
    return (dist.metadata["Name"] or "").lower().replace("_", "-")


def _package_dir(path: Optional[Sequence[str]]) -> Optional[Path]:
    spec = importlib.machinery.PathFinder.find_spec("triton", list(path) if path is not None else sys.path)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _backend_dirs(package: Optional[Path]) -> list[str]:
    if package is None:
        return []
    root = package / "backends"
    try:
        return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "compiler.py").is_file())
    except OSError:
        return []


def _entry_point_backends(dists: Iterable[importlib.metadata.Distribution]) -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in dists:
        for ep in dist.entry_points:
            if ep.group == "triton.backends":
                out.setdefault(ep.name, dist.metadata["Name"] or "")
    return out


def detect(path: Optional[Sequence[str]] = None, npu: Optional[bool] = None) -> dict[str, Any]:
    """What Triton is installed and whether it can compile kernels for the NPU.

    ``path``: where to look (``sys.path`` by default); ``npu``: whether this is an NPU machine (detected by default).
    The result has ``status`` (not-installed | triton-ascend | community | conflict | broken), the versions of the
    distributions, the backends found, the NPU libdevice module, a one-line ``summary`` and ``advice`` (None when
    nothing needs doing).
    """
    dists = _distributions(path)
    versions: dict[str, Optional[str]] = {}
    relevant = [d for d in dists if _name(d) in (*COMMUNITY, "triton-ascend")]
    for dist in relevant:
        versions[_name(dist)] = dist.version
    package = _package_dir(path)
    entry_points = _entry_point_backends(relevant)
    backends = sorted(set(_backend_dirs(package)) | set(entry_points))
    on_disk = set(_backend_dirs(package))
    ascend = [b for b in ASCEND_BACKENDS if b in on_disk]
    extra = package / "language" / "extra" if package is not None else None
    libdevice = next((mod for sub, mod in _LIBDEVICE if extra is not None and (extra / sub / "libdevice.py").is_file()),
                     None)
    is_npu = npu_machine() if npu is None else npu
    community = next(((d, versions[d]) for d in COMMUNITY if d in versions), None)
    ta = versions.get("triton-ascend")

    status, summary, advice = "not-installed", "not installed", None
    if package is None and not versions:
        pass
    elif ta and community:
        status = "conflict"
        winner = "triton-ascend's" if ascend else f"community {community[0]} {community[1]}'s"
        summary = f"triton-ascend {ta} and {community[0]} {community[1]} both installed ({winner} files in place)"
        advice = (f"triton-ascend and community {community[0]} cannot coexist (a package depending on triton "
                  f"reinstalls the community wheel over triton-ascend); reinstall: {_REINSTALL}")
    elif ascend:
        status = "triton-ascend"
        label = f"triton-ascend {ta}" if ta else f"triton {versions.get('triton') or '(source build)'}"
        summary = f"{label}: NPU backend `{ascend[0]}`" + (f", libdevice {libdevice}" if libdevice else "")
    elif ta:
        status = "broken"
        summary = f"triton-ascend {ta} without its NPU backend in {package or 'the triton package'}"
        advice = f"the triton package lacks triton-ascend's NPU backend (overwritten or partly removed): {_REINSTALL}"
    else:
        status = "community"
        name, version = community if community else ("triton", None)
        summary = f"{name} {version or '(unknown version)'}: backends {', '.join(backends) or 'none found'}"
        if is_npu:
            advice = (f"{name} {version or ''} is the community build (CUDA/ROCm backends): it cannot compile or "
                      f"launch Triton kernels on the NPU; install triton-ascend instead: {_REINSTALL}").replace(
                          "  ", " ")
    return {
        "status": status,
        "distributions": versions,
        "package": str(package) if package is not None else None,
        "backends": backends,
        "entry_points": entry_points,
        "ascend_backend": ascend[0] if ascend else None,
        "libdevice": libdevice,
        "npu_machine": is_npu,
        "summary": summary,
        "advice": advice,
        "source": SOURCE,
    }


def _no_npu_backend(backends: Iterable[str]) -> str:
    """The error for a Triton launch on the NPU target when no Ascend backend is installed."""
    info = detect(npu=True)
    if info["advice"]:  # the community build, a conflict or a broken triton-ascend: it says what to do
        return str(info["advice"])
    return (f"triton ({', '.join(sorted(backends)) or 'no'} backends) cannot compile or launch Triton kernels on the "
            f"NPU; install triton-ascend: {_REINSTALL}")


def _no_cpu_backend(backends: Iterable[str]) -> str:
    """The error for a Triton launch on CPU fallback when triton has no CPU backend."""
    return (f"Triton kernels cannot run on ascend-compat's CPU fallback: the installed triton has no CPU backend "
            f"(backends: {', '.join(sorted(backends)) or 'none'}); run them on an NPU with triton-ascend, or on a "
            f"CUDA/ROCm GPU (where the shim stays inactive)")


def _driver_for(ledger: Ledger, module: ModuleType, wanted: tuple[str, ...],
                error: Callable[[Iterable[str]], str], target: str) -> None:
    """Replace ``module._create_driver`` (``triton.runtime.driver``) by one that picks the first active backend
    of ``wanted`` and raises ``error(installed backends)`` when none of them is installed."""
    original = module.__dict__["_create_driver"]

    @functools.wraps(original)
    def _create_driver() -> Any:
        if os.environ.get("TRITON_DEFAULT_BACKEND"):  # the user's explicit choice is triton's business
            return original()
        installed = getattr(module, "backends", {})  # triton.backends.backends, as the original reads it
        for name in wanted:
            if name in installed and installed[name].driver.is_active():
                return installed[name].driver()
        if any(name in installed for name in wanted):
            return original()  # installed but not active: triton's own error says so
        raise RuntimeError(error(installed))

    ledger.setattr(module, "_create_driver", _create_driver,
                   label=f"triton: the {target}'s driver, or a clear error")  # fmt: skip


def _apply_driver(ledger: Ledger, module: ModuleType, backend: Any) -> None:
    """``triton.npu-driver``: triton's driver choice when the shim targets the NPU.

    Triton picks the one backend whose driver says it is active. Under the shim ``torch.cuda.is_available()`` is
    True, which is exactly what the CUDA driver's ``is_active()`` asks, so with the community wheel the CUDA
    driver claims the NPU's tensors and fails deep inside (``AssertionError: libcuda.so cannot found!``), and next
    to an Ascend backend there are two active drivers. On the NPU target the driver is the Ascend backend's, or a
    clear error saying what to install. ``TRITON_DEFAULT_BACKEND`` (the user's explicit choice) is left to triton.
    """
    _driver_for(ledger, module, ASCEND_BACKENDS, _no_npu_backend, "NPU")


def _apply_cpu_driver(ledger: Ledger, module: ModuleType, backend: Any) -> None:
    """``triton.cpu-fallback-driver``: the same on CPU fallback, where the shim also answers
    ``torch.cuda.is_available()`` True: triton's CPU backend (triton-cpu) when installed, else a clear error."""
    _driver_for(ledger, module, ("cpu",), _no_cpu_backend, "CPU fallback")
