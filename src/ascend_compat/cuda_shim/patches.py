"""The shim's patch plan: each entry says why it exists, and goes through the ledger.

Tested on torch 2.13 (CPU build) against the simulated NPU and CPU fallback. The torch.cuda replacements are in
:mod:`~ascend_compat.cuda_shim.cuda_functions`, distributed in :mod:`~ascend_compat.cuda_shim.distributed`, the
CPU-fallback policy (gates, pinning) in :mod:`~ascend_compat.cuda_shim.fallback`.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

from ascend_compat.cuda_shim import devices
from ascend_compat.cuda_shim.cuda_functions import (
    UnsupportedCudaAPIError,
    _cuda_api_data,
    cuda_api_table,
    cuda_available,
    cuda_functions,
    set_default_tensor_type,
    submodule_functions,
)
from ascend_compat.cuda_shim.devices import TARGET, count, map_device, target_device
from ascend_compat.cuda_shim.devices import map_location as _map_location
from ascend_compat.cuda_shim.ledger import Ledger

# Factories and other functions that take ``device=`` as a keyword.
FACTORIES = (
    "zeros ones empty full rand randn randint randperm arange range linspace logspace eye tensor as_tensor asarray "
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like empty_strided scalar_tensor "
    "tril_indices triu_indices normal"
).split()
TENSOR_NEW = ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "new_empty_strided")


def _map_device_kw(kwargs: dict[str, Any], label: str) -> None:
    d = kwargs.get("device")
    if d is not None:
        mapped = map_device(d)
        if mapped is not d:
            kwargs["device"] = mapped
            count(label)


def _device_kw(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    """Functions and methods taking ``device=`` as a keyword (``self`` passes through in ``args``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _map_device_kw(kwargs, label)
        return fn(*args, **kwargs)

    return wrapper


def _positional_device(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``Tensor.to`` / ``Module.to``: the device may be the first positional argument or ``device=``."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args:
            first = args[0]
            mapped = map_device(first)
            if mapped is not first:
                args = (mapped, *args[1:])
                count(label)
        _map_device_kw(kwargs, label)
        return fn(self, *args, **kwargs)

    return wrapper


_ORIGINAL: dict[str, Any] = {}  # originals the replacements call directly (skipping our own wrappers)


def _tensor_cuda(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    count("Tensor.cuda")
    # Keyword arguments cost ~0.7 us in Tensor.to's parser: pass them only when they say something.
    if non_blocking:
        kwargs["non_blocking"] = True
    if kwargs:
        return _ORIGINAL["Tensor.to"](self, target_device(device), **kwargs)
    return _ORIGINAL["Tensor.to"](self, target_device(device))


def _tensor_is_cuda(self: Any) -> bool:
    return self.device.type == TARGET.device_type


def _module_cuda(self: Any, device: Any = None) -> Any:
    count("Module.cuda")
    return self.to(target_device(device))


def _make_device_proxy(real: type) -> type:
    """A stand-in for ``torch.device`` that stays a type: isinstance, ``int | torch.device`` and pickling work."""

    cache: dict[tuple[Any, ...], tuple[Any, bool]] = {}

    class _DeviceMeta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

        # Equal to (and hashing as) the type it stands for: ``type(d) == torch.device`` holds, and torch.fx's code
        # generation, which skips ``obj != torch.device``, still binds the name ``device`` it prints.
        def __eq__(cls, other: object) -> bool:
            return other is cls or other is real

        __hash__ = type.__hash__  # identity, as before: only equality is widened

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if not kwargs:
                # Fast path: torch.device("cuda:1") / torch.device("cuda", 1); devices are immutable.
                try:
                    hit = cache[args]
                except (KeyError, TypeError):
                    pass
                else:
                    if hit[1]:
                        count("torch.device")
                    return hit[0]
            dev = real(*args, **kwargs)
            if not kwargs and len(cache) < 512:
                mapped = map_device(dev) if dev.type == "cuda" else dev
                try:
                    cache[args] = (mapped, dev.type == "cuda")
                except TypeError:
                    pass
            if dev.type == "cuda":
                count("torch.device")
                return map_device(dev)
            return dev

    proxy = _DeviceMeta("device", (), {"__module__": "torch", "__qualname__": "device", "__doc__": real.__doc__})
    return proxy


def _make_generator_proxy(real: type) -> type:
    """``torch.Generator(device="cuda")`` on the target; the stand-in stays a type for isinstance checks."""

    class _GeneratorMeta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

        def __call__(cls, device: Any = "cpu") -> Any:
            mapped = map_device(device)
            if mapped is not device:
                count("torch.Generator(device=cuda)")
            return real(device=mapped)

    attrs = {"__module__": "torch", "__qualname__": "Generator", "__doc__": real.__doc__}
    return _GeneratorMeta("Generator", (), attrs)


def _first_arg_device(fn: Callable[..., Any], label: str, key: str) -> Callable[..., Any]:
    """Map a device (or device-type string) given as the first argument or as ``key=``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args and args[0] == "cuda":  # a bare device-type string, as DeviceMesh takes
            args = (TARGET.device_type, *args[1:])
            count(label)
        elif args:
            mapped = map_device(args[0], allow_int=False)
            if mapped is not args[0]:
                args = (mapped, *args[1:])
                count(label)
        if key in kwargs:
            value = kwargs[key]
            if value == "cuda":
                kwargs[key] = TARGET.device_type
                count(label)
            else:
                kwargs[key] = map_device(value, allow_int=False)
        return fn(*args, **kwargs)

    return wrapper


def _self_first_arg_device(fn: Callable[..., Any], label: str, key: str) -> Callable[..., Any]:
    inner = _first_arg_device(lambda *a, **k: (a, k), label, key)

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = inner(*args, **kwargs)
        return fn(self, *args, **kwargs)

    return wrapper



def _dataloader_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        dev = kwargs.get("pin_memory_device")
        if isinstance(dev, str) and dev:
            mapped = map_device(dev)
            if mapped is not dev:
                count("DataLoader(pin_memory_device=cuda)")
                # On CPU fallback there is nothing to pin for: drop the device (pinning itself is dropped below).
                kwargs["pin_memory_device"] = str(mapped) if TARGET.accelerator else ""
        original(self, *args, **kwargs)
        if not TARGET.accelerator and self.pin_memory:
            # CPU-only torch has no pinned allocator ("Cannot access accelerator device"), and no device to copy
            # to: the loader does not pin (see fallback.py).
            count("DataLoader(pin_memory)")
            self.pin_memory = False

    return __init__

def _reduce_device(dev: Any) -> tuple[Any, tuple[Any, ...]]:
    # Pickle names torch.device (whichever object it is now), so checkpoints load without ascend-compat.
    import torch

    return torch.device, ((dev.type,) if dev.index is None else (dev.type, dev.index))


def _autocast_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __init__(self: Any, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: Any = None):  # noqa: N807
        if device_type == "cuda":
            count("autocast")
            device_type = TARGET.device_type
            dtype = _amp_dtype(dtype)
        return original(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    return __init__


def _amp_dtype(dtype: Any) -> Any:
    import torch

    if dtype is torch.bfloat16 and TARGET.accelerator:
        mod = getattr(torch, TARGET.device_type)
        if hasattr(mod, "is_bf16_supported") and not mod.is_bf16_supported():
            warnings.warn(
                f"bfloat16 autocast requested but {TARGET.device_type} has no bf16 here: using float16",
                stacklevel=3,
            )
            return torch.float16
    return dtype


def _grad_scaler_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __init__(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if device == "cuda":
            count("GradScaler")
            device = TARGET.device_type
        original(self, device, *args, **kwargs)

    return __init__


def _torch_load(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        mapped = _map_location(map_location)
        if mapped is not map_location:
            count("torch.load(map_location)")
        return original(f, mapped, *args, **kwargs)

    return load



class _Plan:
    """Numbered patch points through one ledger (``fail_at`` injects a failure before point N, for tests).

    TorchScript resolves a call such as ``torch.tensor(...)`` by the identity of the function it finds, in its
    table of builtin operators; a Python wrapper standing in for a builtin is not in it, and TorchScript would try
    to compile the wrapper (``torch.distributed.optim`` does at import). Every module-level replacement of a
    builtin is therefore registered as that same operator, and unregistered on restore.
    """

    def __init__(self, ledger: Ledger, fail_at: int | None) -> None:
        from torch.jit import _builtins

        self.ledger, self.fail_at, self.step = ledger, fail_at, 0
        self.builtins = _builtins._get_builtin_table()

    def _next(self, name: str) -> None:
        if self.fail_at is not None and self.step == self.fail_at:
            raise RuntimeError(f"injected failure at patch {self.step} ({name})")
        self.step += 1

    def item(self, mapping: Any, key: Any, value: Any, label: str = "") -> None:
        self._next(label or str(key))
        self.ledger.setitem(mapping, key, value, label)

    def patch(self, owner: Any, name: str, value: Any) -> None:
        self._next(name)
        original = self.ledger.setattr(owner, name, value)
        op = self.builtins.get(id(original)) if original is not None and not isinstance(owner, type) else None
        if op is not None and id(value) not in self.builtins:
            self.item(self.builtins, id(value), op, f"torch.jit builtin {op}")


def _apply_tensor_creation(plan: _Plan, torch: Any, nn: Any) -> None:
    """torch.device / Generator / factories / Tensor and Module moves: the ``device=`` redirections."""
    import copyreg

    patch = plan.patch
    real_device = TARGET.real_device
    patch(torch, "device", _make_device_proxy(real_device))
    plan.item(copyreg.dispatch_table, real_device, _reduce_device, "copyreg")
    patch(torch, "Generator", _make_generator_proxy(torch.Generator))
    if hasattr(torch, "set_default_device"):  # torch >= 2.0
        patch(torch, "set_default_device", _first_arg_device(torch.set_default_device, "set_default_device", "device"))
    patch(torch, "set_default_tensor_type", set_default_tensor_type(torch.set_default_tensor_type))
    loader = torch.utils.data.DataLoader
    patch(loader, "__init__", _dataloader_init(loader.__init__))
    unpinned = None
    if not TARGET.accelerator:
        from ascend_compat.cuda_shim.fallback import unpinned
    for name in FACTORIES:
        if hasattr(torch, name):
            fn, label = getattr(torch, name), f"torch.{name}(device=cuda)"
            wrapper = _device_kw(fn, label)
            patch(torch, name, wrapper if unpinned is None else unpinned(fn, f"torch.{name}", wrapper))
    for name in TENSOR_NEW:
        if hasattr(torch.Tensor, name):
            patch(torch.Tensor, name, _device_kw(getattr(torch.Tensor, name), f"Tensor.{name}(device=cuda)"))
    patch(torch.Tensor, "to", _positional_device(torch.Tensor.to, "Tensor.to(cuda)"))
    patch(torch.Tensor, "cuda", _tensor_cuda)
    patch(torch.Tensor, "is_cuda", property(_tensor_is_cuda))
    patch(nn.Module, "to", _positional_device(nn.Module.to, "Module.to(cuda)"))
    patch(nn.Module, "cuda", _module_cuda)
    patch(nn.Module, "to_empty", _device_kw(nn.Module.to_empty, "Module.to_empty(device=cuda)"))
    patch(torch, "load", _torch_load(torch.load))


def apply(ledger: Ledger, backend: Any, fail_at: int | None = None) -> None:
    """Apply every patch through ``ledger``. ``fail_at`` injects a failure before patch N (for tests)."""
    import os

    import torch
    import torch.nn as nn

    from ascend_compat.cuda_shim import distributed

    devices.reset_caches()
    try:
        # torch caches the set of factory functions that set_default_device intercepts on first use; compute it
        # now, so it holds torch's own factories (which our wrappers call) rather than the wrappers.
        from torch.utils._device import _device_constructors

        _device_constructors()
    except ImportError:
        pass
    _ORIGINAL["Tensor.to"] = torch.Tensor.to
    plan = _Plan(ledger, fail_at)
    patch = plan.patch
    _apply_tensor_creation(plan, torch, nn)
    autocast_cls = torch.amp.autocast_mode.autocast
    patch(autocast_cls, "__init__", _autocast_init(autocast_cls.__init__))
    # torch.amp.GradScaler appeared in torch 2.3; before that the CUDA one is the class to patch.
    scaler_cls = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler
    patch(scaler_cls, "__init__", _grad_scaler_init(scaler_cls.__init__))
    replacements = cuda_functions(backend.device_module())
    for name, fn in replacements.items():
        patch(torch.cuda, name, fn)
    for sub, fns in submodule_functions(replacements).items():
        module = getattr(torch.cuda, sub)
        for name, fn in fns.items():
            patch(module, name, fn)
    if not TARGET.accelerator:
        from ascend_compat.cuda_shim import fallback

        fallback.apply(patch, cuda_available())
    distributed.apply(patch, backend.collective_backend, _first_arg_device, _self_first_arg_device)
    env = backend.visible_devices_env
    if env and os.environ.get("CUDA_VISIBLE_DEVICES") and not os.environ.get(env):
        plan.item(os.environ, env, os.environ["CUDA_VISIBLE_DEVICES"])


__all__ = [
    "FACTORIES",
    "UnsupportedCudaAPIError",
    "_cuda_api_data",
    "apply",
    "cuda_api_table",
    "cuda_functions",
    "submodule_functions",
]
