"""What each classified ``torch.cuda`` name becomes under the shim (``cuda_api.json`` says which kind it is), and
how activation puts them in place: :func:`apply`.

torch's own functions in ``torch.cuda`` (and its submodules) look the names they call up as module globals, so
those names (:data:`EAGER`) are replaced at activation; every other name is removed from the module and built on
first use by a module ``__getattr__`` (PEP 562), which saves building and recording some 150 replacements that a
script rarely touches. ``torch.cuda.X``, ``from torch.cuda import X``, ``hasattr`` and ``dir()`` all see the
replacement; deactivation puts every original back. On a torch release :data:`EAGER` was not read from, every name
is replaced at activation. The builders are in :mod:`~ascend_compat.cuda_shim._cuda_table`.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
from typing import Any, Callable

from ascend_compat import _setting
from ascend_compat.cuda_shim._cuda_table import Builder, conform, nvtx_noops
from ascend_compat.cuda_shim.devices import TARGET, target_device, wrapping

__all__ = ["EAGER", "EAGER_TORCH", "UnsupportedCudaAPIError", "apply", "capability", "conform", "cuda_api_table",
           "cuda_available", "cuda_functions", "legacy_tensor_new", "nvtx_noops",
           "set_default_tensor_type"]  # fmt: skip

#: Per namespace of torch.cuda ("" is torch.cuda itself), the replaced names that torch's own functions there call
#: as module globals: replaced at activation, since a global lookup never reaches a module ``__getattr__``. Read
#: from torch 2.13's sources (decorated and nested functions included); a test reads them again from the installed
#: torch and fails when one is missing.
EAGER: dict[str, tuple[str, ...]] = {
    "": ("Stream", "StreamContext", "current_device", "device", "device_count", "get_arch_list",
         "get_device_capability", "get_device_name", "get_device_properties", "is_available", "is_bf16_supported",
         "is_initialized"),
    "graphs": ("graph_pool_handle",),
    "memory": ("MemPool", "caching_allocator_enable", "host_memory_stats_as_nested_dict", "max_memory_reserved",
               "memory_reserved", "memory_stats", "memory_stats_as_nested_dict", "reset_peak_memory_stats",
               "use_mem_pool"),
    "nvtx": ("range_pop", "range_push"),
    "random": ("get_rng_state", "set_rng_state"),
}  # fmt: skip
#: The torch releases (major.minor) whose sources :data:`EAGER` was read from; elsewhere every name is eager.
EAGER_TORCH = ("2.13",)

_MISSING = object()


class UnsupportedCudaAPIError(RuntimeError):
    """A torch.cuda API with no equivalent on the target backend."""


@functools.lru_cache(maxsize=1)
def _cuda_api_data() -> dict[str, Any]:
    """``cuda_api.json``, read and parsed once per process (package data does not change under a running shim).

    Parsing the JSON costs ~0.2 ms on activation's path, so a marshal copy is kept in the user's cache directory
    (:func:`_compact`), keyed by the file's path, size and modification time. Read through ``importlib.resources``
    when the package is not a directory (a zip)."""
    path = os.path.join(os.path.dirname(__file__), "cuda_api.json")
    try:
        st = os.stat(path)
    except OSError:
        from importlib import resources

        data = resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_bytes()
        return dict(json.loads(data))
    return _compact(path, (path, st.st_size, st.st_mtime_ns))


#: One copy per interpreter version (marshal's format is the interpreter's own).
_COMPACT_NAME = f"cuda_api.{sys.implementation.cache_tag}.marshal"


def _compact(path: str, key: tuple[Any, ...]) -> dict[str, Any]:
    """The parsed JSON at ``path``: from its marshal copy when that was made from the same file (``key``), else
    parsed and the copy rewritten atomically (a copy that cannot be read or written is only a missed saving)."""
    import marshal

    from ascend_compat import _cache_root, _write_cache

    where = os.path.join(_cache_root(), _COMPACT_NAME)
    try:
        with open(where, "rb") as f:
            got = marshal.loads(f.read())
        if type(got) is tuple and len(got) == 2 and got[0] == key and type(got[1]) is dict:
            return got[1]
    except (OSError, ValueError, EOFError, TypeError):
        pass
    with open(path, "rb") as f:  # bytes: json decodes UTF-8 itself, without a text wrapper
        data = dict(json.loads(f.read()))
    _write_cache(where, marshal.dumps((key, data)))
    return data


def cuda_api_table() -> dict[str, dict[str, str]]:
    """The classification of torch.cuda names (``cuda_api.json``)."""
    return dict(_cuda_api_data()["names"])


def cuda_available() -> bool:
    """``torch.cuda.is_available()`` under the shim: ``ASCEND_COMPAT_CUDA_AVAILABLE=auto|true|false``.

    ``auto`` (the default) answers True whenever the shim is active, on an accelerator and on CPU fallback alike:
    a script gated on CUDA (``assert torch.cuda.is_available()``, ``mp.spawn(nprocs=torch.cuda.device_count())``)
    runs on the target, as it would on a GPU machine.
    """
    return _setting("ASCEND_COMPAT_CUDA_AVAILABLE") != "false"  # unset: auto


def capability() -> tuple[int, ...]:
    """What ``get_device_capability()`` answers: ``ASCEND_COMPAT_CUDA_CAPABILITY``, else (8, 0) where the target
    computes bf16 and (7, 5) where it does not (the reason is in cuda_api.json, ``get_device_capability``)."""
    chosen = _setting("ASCEND_COMPAT_CUDA_CAPABILITY")
    if chosen is not None:
        return tuple(chosen)
    backend = TARGET.backend
    return (8, 0) if backend is None or backend.autocast_bf16() else (7, 5)


def _builder(backend_module: Any) -> Builder:
    return Builder(backend_module, _cuda_api_data()["names"], cuda_available(), capability())


def cuda_functions(backend_module: Any) -> dict[str, Any]:
    """The replacement for each classified torch.cuda name, given the target's device module (all built now)."""
    builder = _builder(backend_module)
    return {name: builder.get(name) for name in builder.names()}


def _namespaces(torch: Any, names: list[str]) -> list[tuple[str, Any, dict[str, str]]]:
    """(namespace, module, {name: builder key}) for torch.cuda and each submodule the shim patches."""
    known = set(names)
    spaces = [("", torch.cuda, {n: n for n in names})]
    for sub, spec in _cuda_api_data()["submodules"].items():
        if spec == "top-level":
            module = getattr(torch.cuda, sub)
            keys = {n: n for n in getattr(module, "__all__", []) if n in known and hasattr(module, n)}
            spaces.append((sub, module, keys))
    spaces.append(("nvtx", torch.cuda.nvtx, {n: f"nvtx.{n}" for n in nvtx_noops()}))
    return spaces


def apply(plan: Any, torch: Any, backend: Any) -> None:
    """Put the replacements in place through ``plan`` (the core patches' ledger): :data:`EAGER` names now, the
    others on first use (one ledger record removes them and puts back every original on restore)."""
    builder = _builder(backend.device_module())
    spaces = _namespaces(torch, builder.names())
    lazy_ok = ".".join(torch.__version__.split(".")[:2]) in EAGER_TORCH
    eager = {key for sub, _, keys in spaces for n, key in keys.items() if not lazy_ok or n in EAGER.get(sub, ())}
    lazy: list[tuple[Any, dict[str, str]]] = []
    for _, module, keys in spaces:
        for name, key in keys.items():
            if key in eager:
                plan.patch(module, name, builder.get(key))
        later = {n: k for n, k in keys.items() if k not in eager}
        if later:
            lazy.append((module, later))
    if lazy:
        install, undo = _lazy_names(lazy, builder.get)
        plan.ledger.call(install, undo, "torch.cuda: names built on first use")


def _lazy_names(spaces: list[tuple[Any, dict[str, str]]], get: Callable[[str], Any]) -> tuple[Any, Any]:
    """``install`` removes each module's lazy names and gives it a ``__getattr__`` and ``__dir__`` that provide
    them; ``undo`` puts every original back (also after a partial install, and whatever was built meanwhile)."""
    lock = threading.Lock()
    done: list[tuple[Any, dict[str, Any]]] = []
    state = {"on": True}

    def hooks(module: Any, keys: dict[str, str], prior: Any) -> tuple[Any, Any]:
        space = module.__dict__

        def __getattr__(name: str) -> Any:  # noqa: N807
            key = keys.get(name)
            if key is None or not state["on"]:
                if callable(prior):
                    return prior(name)
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
            try:
                value = get(key)
            except AttributeError as exc:  # would read as "no such name": say what failed instead
                raise RuntimeError(f"ascend-compat could not build {module.__name__}.{name}: {exc}") from exc
            with lock:
                return space.setdefault(name, value) if state["on"] else value

        def __dir__() -> list[str]:  # noqa: N807
            return sorted(set(space) | set(keys))

        return __getattr__, __dir__

    def install() -> None:
        for module, keys in spaces:
            space = module.__dict__
            saved = {n: space.get(n, _MISSING) for n in (*keys, "__getattr__", "__dir__")}
            done.append((module, saved))  # before the change: undo handles a partial one
            space["__getattr__"], space["__dir__"] = hooks(module, keys, saved["__getattr__"])
            for name in keys:
                space.pop(name, None)

    def undo() -> None:
        with lock:
            state["on"] = False
            while done:
                module, saved = done.pop()
                for name, value in saved.items():
                    if value is _MISSING:
                        module.__dict__.pop(name, None)
                    else:
                        module.__dict__[name] = value

    return install, undo


# -- set_default_tensor_type and the legacy constructor (the legacy types live in _cuda_legacy, loaded on use) --

_DEFAULT_DEVICE_FROM_TYPE: list[bool] = []  # set_default_tensor_type(torch.cuda.XTensor) set the default device


def set_default_tensor_type(original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.set_default_tensor_type(torch.cuda.HalfTensor)`` (or its name): default dtype, and the target as
    default device when it is an accelerator, as CUDA does; non-floating types are refused in torch's words."""

    @wrapping(original)
    def wrapper(t: Any, /) -> None:
        from ascend_compat.cuda_shim._cuda_legacy import set_default_type

        set_default_type(original, t)

    return wrapper


def legacy_tensor_new(base_new: Callable[..., Any]) -> Any:
    """``torch.Tensor.__new__``: after ``set_default_tensor_type(torch.cuda.HalfTensor)``, the legacy constructor
    ``torch.Tensor(2, 3)`` / ``torch.Tensor([1, 2])`` builds on the target, as CUDA's default type does (Llama's
    fairscale layers build their weights this way). torch's own constructor ignores the default device."""
    import torch

    # (*args, **kwargs) only, no named ``cls``: torch._dynamo checks that its polyfill for Tensor.__new__ has the
    # signature of what it replaces, and accepts this wildcard one.
    def __new__(*args: Any, **kwargs: Any) -> Any:  # noqa: N807
        cls, args = args[0], args[1:]
        if cls is torch.Tensor and TARGET.active and _DEFAULT_DEVICE_FROM_TYPE and "device" not in kwargs:
            from ascend_compat._legacy_ctor import construct

            made = construct(args, torch.get_default_dtype(), target_device())
            if made is not None:
                return made
        return base_new(cls, *args, **kwargs)

    return staticmethod(__new__)
