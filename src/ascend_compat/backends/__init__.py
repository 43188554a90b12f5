"""Accelerator backends as small declarative classes, one detection order, third-party registration.

Every backend is a :class:`~ascend_compat.backends.registry.BackendInfo` subclass (data: device type, adapter
module, collective backend, visible-devices variable, display name, ``accelerator``, and the methods for what
differs: ``is_available()``, ``device_module()`` (what ``torch.cuda.*`` becomes), ``autocast_bf16()``). The
built-in ones live one per file (``npu.py``, ``mlu.py``, ``musa.py``, ``xpu.py``, ``mps.py``, ``cpu.py``) and are
listed, in detection order, in :data:`~ascend_compat.backends.registry.BUILTIN_BACKENDS` (data: name, module,
adapter); to add one, write the subclass (e.g. in ``backends/myvendor.py``) and list it there, or ``register`` it,
or ship it from another distribution through the ``ascend_compat.backends`` entry-point group. ``detect()`` walks
the order once, importing a built-in's module only when its adapter is installed (for the devices torch has
natively, when torch says it was built with them: ``registry.NATIVE_PROBES``); the backend classes, the
detection order and the registry are imported on first use (``from ascend_compat.backends import NPUBackend``).
"""

from __future__ import annotations

import itertools
import os
import stat
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

from ascend_compat import _FieldValue as FieldValue  # ascend_compat._value's class (one module less)
from ascend_compat import _setting
from ascend_compat.backends import registry
from ascend_compat.backends.registry import (
    BUILTIN_BACKENDS,
    ENTRY_POINT_GROUP,
    BackendInfo,
    all_backends,
    get_backend,
    load_entry_points,
    register,
)

if TYPE_CHECKING:
    from ascend_compat.backends.cpu import CPUBackend
    from ascend_compat.backends.mlu import MLUBackend
    from ascend_compat.backends.mps import MPSBackend
    from ascend_compat.backends.musa import MUSABackend
    from ascend_compat.backends.npu import NPUBackend
    from ascend_compat.backends.xpu import XPUBackend

__all__ = [
    "DETECTION_ORDER",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendInfo",
    "CPUBackend",
    "Detection",
    "MLUBackend",
    "MPSBackend",
    "MUSABackend",
    "NPUBackend",
    "XPUBackend",
    "all_backends",
    "detect",
    "get_backend",
    "register",
]

#: The former name of the base class, kept for backends written against it.
Backend = BackendInfo

_BUILTIN = frozenset(name for name, _, _ in BUILTIN_BACKENDS)
_CLASSES = {path.rpartition(":")[2]: name for name, path, _ in BUILTIN_BACKENDS}


def __getattr__(name: str) -> Any:
    # The backend classes, the detection order and the registry load on first use: detection imports only the
    # modules of the backends it finds installed.
    if name in _CLASSES:
        return registry.builtin(_CLASSES[name])
    if name in ("DETECTION_ORDER", "_REGISTRY"):
        registry.ensure_builtins()
        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Detection(FieldValue):
    """The outcome of detection: the chosen backend (None when real CUDA makes the shim a no-op) and why.

    Immutable, compared and printed as the frozen dataclass it was; a plain class because building a dataclass
    costs about half a millisecond at import, and every ``activate()`` imports this module.
    """

    _FIELDS = ("backend", "reason", "native_cuda")  # declaration order (repr, equality)
    __slots__ = _FIELDS
    backend: Optional[type[BackendInfo]]
    reason: str
    native_cuda: bool

    def __init__(self, backend: Optional[type[BackendInfo]], reason: str, native_cuda: bool = False) -> None:
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "native_cuda", native_cuda)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._fields())


def _native_cuda() -> Optional[str]:
    import torch

    try:
        if torch.cuda.is_available():
            return "ROCm (HIP)" if getattr(torch.version, "hip", None) else "CUDA"
    except Exception:
        return None
    return None


def detect(override: Optional[str] = None) -> Detection:
    """Choose the backend: ``override`` (or ``ASCEND_COMPAT_BACKEND``), else the first available one.

    Entry-point backends are registered just before ``cpu``, so they are loaded only when no built-in accelerator
    answers first, and then only when a cached check finds a distribution that may declare one (the scan of every
    installed distribution costs ~4 ms).
    """
    override = override or _setting("ASCEND_COMPAT_BACKEND") or None
    if override:
        return Detection(get_backend(override), f"requested ({override})")
    native = _native_cuda()
    if native:
        return Detection(None, f"real {native} is present: the shim stays inactive", native_cuda=True)
    if registry.builtins_loaded():  # something was listed or registered: walk the registry itself
        return _detect_registered()
    for name, _, adapter in BUILTIN_BACKENDS[:-1]:
        if adapter is not None and not registry.adapter_present(adapter):
            continue  # not installed: its module is not even imported
        if adapter is None and registry.native_absent(name):
            continue  # torch says it has no such device (a CPU build): same
        backend = registry.builtin(name)
        if backend.installed() and backend.available():
            return Detection(backend, _found(backend))
    return _entry_point_or_cpu()


def _found(backend: type[BackendInfo]) -> str:
    return "no accelerator found" if not backend.accelerator else f"{backend.adapter_module or 'torch'} found"


def _builtin_cpu() -> type[BackendInfo]:
    return registry._import_class(BUILTIN_BACKENDS[-1][1])


def _detect_registered() -> Detection:
    cpu = _builtin_cpu()
    for backend in [b for b in registry.DETECTION_ORDER if b is not cpu]:
        if backend.installed() and backend.available():
            return Detection(backend, _found(backend))
    return _entry_point_or_cpu()


def _entry_point_or_cpu() -> Detection:
    """Built-in accelerators exhausted: now the third-party ones (registering one loads the built-ins)."""
    load_entry_points(cached=True)
    cpu = _builtin_cpu()
    if registry.builtins_loaded():
        for extra in [b for b in registry.DETECTION_ORDER if b.name not in _BUILTIN and b is not cpu]:
            if extra.installed() and extra.available():
                return Detection(extra, f"{extra.adapter_module or extra.name} found (entry point)")
    return Detection(cpu, "no accelerator found")


# -- the cached entry-point check's fast path (see _entry_point_cache, which scans and writes) -----------------------
# Here, in detection's own module, so that a CPU-fallback activation whose sys.path directories are all cached
# answers without importing _entry_point_cache (~0.15 ms on activate()'s path).

_EP_CACHE_VERSION = 1


def _entry_point_cache_file() -> str:
    """``settings.cache_root()``'s ``backend-entry-points.json``, without importing the settings module while
    neither variable is set (detection runs on ``activate()``'s path)."""
    from ascend_compat import _cache_root

    return os.path.join(_cache_root(), "backend-entry-points.json")


def _read_entry_point_cache(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:  # bytes: json decodes UTF-8 itself, without a text wrapper
            import json

            data = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    dirs = data.get("dirs") if isinstance(data, dict) and data.get("version") == _EP_CACHE_VERSION else None
    return dirs if isinstance(dirs, dict) else {}


def _cached_answer(cached: dict[str, Any], path: str, st: os.stat_result) -> Optional[bool]:
    """The cached answer for the directory ``path`` as ``st`` shows it now; None when the cache has none for it
    (never seen, or modified since)."""
    hit = cached.get(path)
    if isinstance(hit, list) and len(hit) == 2 and hit[0] == st.st_mtime_ns:
        return bool(hit[1])
    return None


def _other_distribution_finders() -> bool:
    """True when a ``sys.meta_path`` finder other than the path finder (and the package's own, which lists only
    distributions with no entry points: the flash_attn drop-in, the simulated torch_npu) can list distributions."""
    import importlib.machinery

    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder or not hasattr(finder, "find_distributions"):
            continue
        if type(finder).__module__ == "ascend_compat._import_hooks":
            continue
        return True
    return False


def _path_entries() -> Iterator[tuple[str, os.stat_result]]:
    """Each ``sys.path`` entry that exists, as (absolute path, its stat), in order; the one walk both the warm
    path below and the entry-point scan read."""
    for entry in list(sys.path):
        path = os.path.abspath(entry or ".")
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue  # not there: importlib.metadata finds nothing there either
        yield path, st


_METADATA_SUFFIXES = (".dist-info", ".egg-info")
#: A folder with at most this many entries and no distribution in it, modified in the last :data:`_SETTLED_S`
#: seconds, is listed, not cached (see below).
_SMALL_FOLDER = 256
_SETTLED_S = 3600.0


def _small_folder_without_distributions(path: str, st: os.stat_result) -> bool:
    """True for a folder modified in the last hour, of at most :data:`_SMALL_FOLDER` entries, none of them a
    ``*.dist-info`` / ``*.egg-info``.

    The script's own folder heads ``sys.path`` and changes whenever an editor saves by renaming or a run writes a
    log or checkpoint there: caching its answer would rewrite the cache file on most runs (~1 ms), where listing it
    costs ~0.05 ms. A folder that has not changed for an hour is scanned and cached once instead: listing the
    standard library's folder (~200 entries) cost ~0.4 ms on every activation."""
    if time.time() - st.st_mtime > _SETTLED_S:
        return False
    try:
        with os.scandir(path) as entries:
            for n, entry in enumerate(entries):
                if n >= _SMALL_FOLDER or entry.name.lower().endswith(_METADATA_SUFFIXES):
                    return False
    except OSError:
        return False  # let the scan judge it
    return True


def _group_may_be_declared(group: str) -> bool:
    """:func:`~ascend_compat.backends._entry_point_cache.group_may_be_declared`, answered here when every
    ``sys.path`` directory up to the answer is a cache hit or a small folder with no distribution in it; from the
    first other one on, the scan decides."""
    if _other_distribution_finders():
        return True
    where = _entry_point_cache_file()
    cached = _read_entry_point_cache(where)
    entries = _path_entries()
    for path, st in entries:
        is_dir = stat.S_ISDIR(st.st_mode)
        found = _cached_answer(cached, path, st) if is_dir else None
        if found is None and is_dir and not path.endswith(".egg") and _small_folder_without_distributions(path, st):
            continue  # no distribution there: nothing to declare the group
        if found is None:  # the scan goes on from this entry (the ones before are answered: no)
            from ascend_compat.backends._entry_point_cache import scan

            return scan(group, where, cached, itertools.chain([(path, st)], entries))
        if found:
            return True
    return False
