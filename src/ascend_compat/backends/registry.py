"""``BackendInfo``, the base of every backend description, and the registry that orders them for detection.

A backend is data: its torch device type, the adapter module that provides it (imported only when installed), its
collective backend, its visible-devices variable and a display name; ``is_available()`` says whether it can be
used now. The built-in backends (``npu``, ``mlu``, ``musa``, ``xpu``, ``mps``, ``cpu``) are registered in
``ascend_compat/backends/__init__.py``; a new one is a subclass plus one ``register(...)`` call there, or, from
another distribution, an entry point in the ``ascend_compat.backends`` group naming the subclass::

    [project.entry-points."ascend_compat.backends"]
    myvendor = "myvendor_compat:MyVendorBackend"

The built-in backends are listed as data in :data:`BUILTIN_BACKENDS` (name, ``"module:Class"``, adapter module):
detection imports a built-in's module only when its adapter module is installed (or it has none), so a process
pays for the backends it can use; listing or registering backends imports them all, in that order.

Entry points are loaded on first need (``all_backends()``, ``get_backend()``, or detection once no built-in
accelerator answers); one that fails to load is skipped with a warning. Detection and ``get_backend()`` of a
built-in name scan the installed distributions only when a cached check says one may declare the group.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
from typing import ClassVar, Optional, Union

__all__ = ["BUILTIN_BACKENDS", "DETECTION_ORDER", "ENTRY_POINT_GROUP", "NATIVE_PROBES", "BackendInfo", "all_backends",
           "builtin", "get_backend", "native_absent", "register"]

log = logging.getLogger("ascend_compat")
ENTRY_POINT_GROUP = "ascend_compat.backends"


class BackendInfo:
    """Base class of backend descriptions; subclasses set the class attributes (``name`` and ``device_type`` are
    required) and may replace ``is_available()`` (a staticmethod is fine)."""

    name: ClassVar[str]
    device_type: ClassVar[str]
    adapter_module: ClassVar[Optional[str]] = None  # imported before torch.<device_type> is used
    collective_backend: ClassVar[str] = "gloo"
    visible_devices_env: ClassVar[Optional[str]] = None
    display_name: ClassVar[str] = ""
    description: ClassVar[str] = ""  # older name of display_name, still read
    #: False when the host is the device (CPU fallback): nothing to pin memory for, CUDA ordinals all mean the one
    #: host device, DDP takes no device_ids.
    accelerator: ClassVar[bool] = True

    @classmethod
    def installed(cls) -> bool:
        """Cheap check (no heavy import): the adapter module can be found, or torch has the device natively."""
        return cls.adapter_module is None or adapter_present(cls.adapter_module)

    @classmethod
    def load(cls) -> None:
        """Import the adapter module (registers the device with torch)."""
        if cls.adapter_module is not None:
            importlib.import_module(cls.adapter_module)

    @classmethod
    def device_module(cls) -> object:
        import torch

        return getattr(torch, cls.device_type)

    @classmethod
    def cuda_device(cls, real: type, index: Optional[Union[int, str]] = None) -> object:
        """The device that CUDA device ``index`` (None: the current one) means on this backend, made with torch's
        own device type ``real``: the same ordinal on an accelerator; without one (CPU fallback) every ordinal is
        the one host device (torchrun ranks call ``set_device(local_rank)``)."""
        if index is None or not cls.accelerator:
            return real(cls.device_type)
        return real(cls.device_type, int(index))  # type: ignore[call-arg]

    @classmethod
    def autocast_bf16(cls) -> bool:
        """Whether ``autocast(dtype=torch.bfloat16)`` can run on the device (the shim uses float16 when not)."""
        check = getattr(cls.device_module(), "is_bf16_supported", None)
        return True if check is None else bool(check())

    @classmethod
    def is_available(cls) -> bool:
        """True when the device can be used now: the adapter imports and ``torch.<device_type>.is_available()``."""
        if not cls.installed():
            return False
        try:
            cls.load()
            return bool(cls.device_module().is_available())  # type: ignore[attr-defined]
        except Exception:
            return False

    @classmethod
    def available(cls) -> bool:
        """``is_available()``, with any exception from a third-party override read as False."""
        try:
            return bool(cls.is_available())
        except Exception:
            return False

    @classmethod
    def label(cls) -> str:
        """The display name (the description, or the name, when none is set)."""
        return cls.display_name or cls.description or cls.name


def adapter_present(module: str) -> bool:
    """Whether an adapter module is imported or importable (found, not imported)."""
    try:
        return module in sys.modules or importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


#: The built-in backends, in detection order (CPU last): name, ``"module:Class"``, adapter module (None: a device
#: torch has natively, whose ``installed()`` asks torch). To add one, write its module and list it here, before
#: the CPU fallback.
BUILTIN_BACKENDS: tuple[tuple[str, str, Optional[str]], ...] = (
    ("npu", "ascend_compat.backends.npu:NPUBackend", "torch_npu"),
    ("mlu", "ascend_compat.backends.mlu:MLUBackend", "torch_mlu"),
    ("musa", "ascend_compat.backends.musa:MUSABackend", "torch_musa"),
    ("xpu", "ascend_compat.backends.xpu:XPUBackend", None),
    ("mps", "ascend_compat.backends.mps:MPSBackend", None),
    ("cpu", "ascend_compat.backends.cpu:CPUBackend", None),
)

#: The built-in backends torch has natively (adapter None): a question to torch, as ``"attr.path"`` under ``torch``,
#: whose False means the backend is absent, so detection need not import its module (a CPU build of torch answers
#: False to both). When the answer is True, or the function is missing (an older torch), the backend's own
#: ``installed()`` decides. A test keeps each probe in agreement with its class.
NATIVE_PROBES: dict[str, str] = {"xpu": "xpu._is_compiled", "mps": "backends.mps.is_built"}


def native_absent(name: str) -> bool:
    """True when :data:`NATIVE_PROBES` rules the built-in backend ``name`` out without importing its module."""
    path = NATIVE_PROBES.get(name)
    if path is None:
        return False
    import torch

    probe: object = torch
    for part in path.split("."):
        probe = getattr(probe, part, None)
        if probe is None:
            return False  # cannot tell cheaply: the class's installed() decides
    try:
        return callable(probe) and not probe()
    except Exception:  # a probe that fails tells nothing
        return False


#: One detection order, defined once (``register`` keeps it; :func:`ensure_builtins` fills in the built-ins first).
#: CUDA/ROCm are checked first by ``detect``.
DETECTION_ORDER: list[type[BackendInfo]] = []
_REGISTRY: dict[str, type[BackendInfo]] = {}
_LOCK = threading.RLock()
_ENTRY_POINTS_LOADED = False
_BUILTINS_LOADED = False
#: The names of the built-in backends.
_BUILTIN_NAMES: set[str] = {name for name, _, _ in BUILTIN_BACKENDS}


def _import_class(path: str) -> type[BackendInfo]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def builtin(name: str) -> type[BackendInfo]:
    """The backend registered under a built-in name, importing only its own module while the built-ins are not
    all loaded (detection's path)."""
    if _BUILTINS_LOADED:
        return _REGISTRY[name]
    return _import_class(next(path for n, path, _ in BUILTIN_BACKENDS if n == name))


def builtins_loaded() -> bool:
    """Whether the registry holds the built-ins (anything listed or registered since the process started)."""
    return _BUILTINS_LOADED


def ensure_builtins() -> None:
    """Import and register every built-in backend, in :data:`BUILTIN_BACKENDS` order (once per process)."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    classes = [_import_class(path) for _, path, _ in BUILTIN_BACKENDS]
    with _LOCK:
        if _BUILTINS_LOADED:
            return
        _BUILTINS_LOADED = True
        for backend in classes:  # register() loads these first: the registry is still empty here
            _REGISTRY[_check(backend).name] = backend
            DETECTION_ORDER.append(backend)


def _check(backend: object) -> type[BackendInfo]:
    if not (isinstance(backend, type) and issubclass(backend, BackendInfo)):
        raise TypeError(f"a backend must be a BackendInfo subclass, got {backend!r}")
    for attr in ("name", "device_type"):
        value = getattr(backend, attr, None)
        if not isinstance(value, str) or not value:
            raise TypeError(f"backend {backend.__qualname__} needs a non-empty string {attr!r}")
    if not isinstance(backend.collective_backend, str):
        raise TypeError(f"backend {backend.__qualname__}: collective_backend must be a string")
    return backend


def register(backend: type[BackendInfo], before: Optional[str] = "cpu") -> type[BackendInfo]:
    """Add a backend to the registry and the detection order, before ``before`` (default: just before the CPU
    fallback; None or an unknown name: last). A backend of the same name is replaced where it stood. Returns the
    class, so ``@register`` works as a decorator."""
    _check(backend)
    ensure_builtins()
    with _LOCK:
        old = _REGISTRY.get(backend.name)
        _REGISTRY[backend.name] = backend
        if old is not None and old in DETECTION_ORDER:
            DETECTION_ORDER[DETECTION_ORDER.index(old)] = backend
        elif backend not in DETECTION_ORDER:
            names = [b.name for b in DETECTION_ORDER]
            DETECTION_ORDER.insert(names.index(before) if before in names else len(DETECTION_ORDER), backend)
    return backend


def load_entry_points(*, cached: bool = False) -> None:
    """Register the backends of the ``ascend_compat.backends`` entry-point group (once per process).

    ``cached=True`` (detection): first ask :mod:`~ascend_compat.backends._entry_point_cache` whether any installed
    distribution can declare the group, and scan every distribution's metadata only then (the scan is what costs;
    when nothing declares the group it would register nothing). A later exact call still scans.
    """
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    if cached:
        from ascend_compat.backends import _group_may_be_declared

        if not _group_may_be_declared(ENTRY_POINT_GROUP):
            return
    with _LOCK:
        if _ENTRY_POINTS_LOADED:
            return
        _ENTRY_POINTS_LOADED = True
    from importlib.metadata import entry_points

    eps = entry_points()
    # Python 3.9's entry_points() is a dict of groups; 3.10+ selects.
    group = eps.select(group=ENTRY_POINT_GROUP) if hasattr(eps, "select") else eps.get(ENTRY_POINT_GROUP, [])  # type: ignore[arg-type]
    for ep in group:
        try:
            register(ep.load())
        except Exception as exc:  # a broken third-party package must not break detection
            log.warning("ascend-compat: backend entry point %r (%s) skipped: %s: %s", ep.name, ep.value,
                        type(exc).__name__, exc)  # fmt: skip


def all_backends() -> list[type[BackendInfo]]:
    """Every registered backend, entry points included, in detection order."""
    ensure_builtins()
    load_entry_points()
    return list(DETECTION_ORDER)


def get_backend(name: str) -> type[BackendInfo]:
    """The backend registered as ``name``. For a built-in name the entry points are scanned only when some
    distribution may declare one (one could replace a built-in of the same name)."""
    ensure_builtins()
    load_entry_points(cached=name in _BUILTIN_NAMES)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
