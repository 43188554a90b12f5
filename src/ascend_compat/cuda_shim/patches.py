"""The shim's wrappers of torch functions: device arguments, factories, moves, loaders, autocast, GradScaler.

The list of what is patched, and why, is :mod:`~ascend_compat.cuda_shim.core_patches` (data); the stand-ins for
``torch.device`` / ``torch.Generator`` are in :mod:`~ascend_compat.cuda_shim.devices`. Every wrapper here
redirects only while ``TARGET.active`` is set and otherwise calls torch's own function, so a reference kept
across ``deactivate()`` (or a thread racing it) gets torch's behaviour, never a broken one.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from ascend_compat.cuda_shim.cuda_functions import (
    UnsupportedCudaAPIError,
    _cuda_api_data,
    cuda_api_table,
    cuda_available,
    cuda_functions,
    set_default_tensor_type,
)
from ascend_compat.cuda_shim.devices import TARGET, count, map_device, target_device, wrapping, wraps
from ascend_compat.cuda_shim.devices import map_location as _map_location

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

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if TARGET.active:
            d = kwargs.get("device")  # inline: a call of _map_device_kw costs more than the whole check
            if d is not None:
                mapped = map_device(d)
                if mapped is not d:
                    kwargs["device"] = mapped
                    count(label)
        return fn(*args, **kwargs)

    return wraps(wrapper, fn)


# -- the sites the dtype policy's checks are consulted at -----------------------------------------------------------
#
# One wrapper per attribute: Tensor.to, Tensor.cuda and the factories are wrapped once (by the shim, or by a dtype
# policy outside it, whichever comes first; the other shares the ledger record). The wrapper calls DTYPE_HOOK, the
# policy's checks, only while one is set: with no policy in play the cost is one global lookup.

#: The dtype policy's checks (:class:`~ascend_compat.cuda_shim.dtype_checks.DtypeHook`) while a policy can apply,
#: else None; set and restored through the ledger.
DTYPE_HOOK: Any = None
#: True on CPU fallback (set through the ledger): factories drop ``pin_memory=True``, there being no accelerator to
#: pin for (see :mod:`~ascend_compat.cuda_shim.fallback`).
UNPIN = False
_SITES: dict[tuple[int, str], tuple[Any, Any]] = {}  # (id(owner), name) -> (torch's function, its one wrapper)


def site(owner: Any, name: str, build: Callable[[Any], Any]) -> Any:
    """The one wrapper of ``owner.name``: ``build(torch's function)``, made once and reused while that function
    stays (also across activations), so that whoever installs it second finds the very same object there."""
    current = getattr(owner, name)
    hit = _SITES.get((id(owner), name))
    if hit is not None and (current is hit[1] or current is hit[0]):
        return hit[1]
    made = build(current)
    _SITES[(id(owner), name)] = (current, made)
    return made


def move_sites(torch: Any) -> list[tuple[Any, str, Any]]:
    """``Tensor.to`` and ``Tensor.cuda``, each with its one wrapper."""
    tensor = torch.Tensor
    to = site(tensor, "to", _tensor_to)
    native_to = _SITES[(id(tensor), "to")][0]
    return [(tensor, "to", to), (tensor, "cuda", site(tensor, "cuda", lambda cuda: _tensor_cuda(native_to, cuda)))]


def factory_sites(torch: Any) -> list[tuple[Any, str, Any]]:
    """The factories of :data:`FACTORIES` that this torch has, each with its one wrapper."""
    return [(torch, name, site(torch, name, lambda fn, n=name: _factory(fn, n)))  # type: ignore[misc]
            for name in FACTORIES if hasattr(torch, name)]  # fmt: skip


def _factory(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``torch.zeros(..., device=...)`` and the other factories: device mapped, ``pin_memory`` dropped on CPU
    fallback, the dtype policy's checks where a device is given."""
    label, unpin = f"torch.{name}(device=cuda)", f"torch.{name}(pin_memory)"

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if TARGET.active:
            if UNPIN and kwargs.get("pin_memory"):
                del kwargs["pin_memory"]
                count(unpin)
            d = kwargs.get("device")
            if d is not None:
                mapped = map_device(d)
                if mapped is not d:
                    kwargs["device"] = mapped
                    count(label)
                if DTYPE_HOOK is not None:
                    return DTYPE_HOOK.factory(fn, name, args, kwargs)
            return fn(*args, **kwargs)
        if DTYPE_HOOK is not None and kwargs.get("device") is not None:
            return DTYPE_HOOK.factory(fn, name, args, kwargs)
        return fn(*args, **kwargs)

    return wraps(wrapper, fn)


def _tensor_to(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.to``: the device may be the first positional argument or ``device=``; then the dtype checks."""

    @wrapping(fn)
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not TARGET.active:  # a dtype policy outside the shim; a reference kept past deactivate(): torch's own
            if DTYPE_HOOK is None:
                return fn(self, *args, **kwargs)
            return DTYPE_HOOK.to(fn, self, args, kwargs, "Tensor.to")
        if args:
            first = args[0]
            mapped = map_device(first)
            if mapped is not first:
                args = (mapped, *args[1:])
                count("Tensor.to(cuda)")
        if kwargs:
            _map_device_kw(kwargs, "Tensor.to(cuda)")
        if DTYPE_HOOK is not None:
            return DTYPE_HOOK.to(fn, self, args, kwargs, "Tensor.to")
        return fn(self, *args, **kwargs)

    return to


def _positional_device(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``Module.to``: the device may be the first positional argument or ``device=``."""

    @wrapping(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not TARGET.active:  # a reference kept past deactivate(), or a thread racing it: torch's own
            return fn(self, *args, **kwargs)
        if args:
            first = args[0]
            mapped = map_device(first)
            if mapped is not first:
                args = (mapped, *args[1:])
                count(label)
        if kwargs:
            _map_device_kw(kwargs, label)
        return fn(self, *args, **kwargs)

    return wrapper


def _tensor_cuda(to: Callable[..., Any], cuda: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.cuda``: ``to(target)`` (``to`` is torch's own ``Tensor.to``, skipping our wrapper)."""

    def cuda_(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        if not TARGET.active:
            if DTYPE_HOOK is None:
                return cuda(self, device, non_blocking, **kwargs)
            return DTYPE_HOOK.move(cuda, self, (device, non_blocking), kwargs, "Tensor.cuda")
        count("Tensor.cuda")
        # Keyword arguments cost ~0.7 us in Tensor.to's parser: pass them only when they say something.
        if non_blocking:
            kwargs["non_blocking"] = True
        if DTYPE_HOOK is not None:
            return DTYPE_HOOK.move(to, self, (target_device(device),), kwargs, "Tensor.cuda")
        if kwargs:
            return to(self, target_device(device), **kwargs)
        return to(self, target_device(device))

    cuda_.__name__ = cuda_.__qualname__ = "cuda"
    cuda_.__doc__ = getattr(cuda, "__doc__", None)
    return cuda_


def _tensor_is_cuda(original: Any) -> property:
    def is_cuda(self: Any) -> bool:
        if not TARGET.active:
            return bool(original.__get__(self, type(self)))
        return self.device.type == TARGET.device_type  # type: ignore[no-any-return]

    return property(is_cuda, doc=getattr(original, "__doc__", None))


def _module_cuda(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def cuda(self: Any, device: Any = None) -> Any:
        if not TARGET.active:
            return original(self, device)
        count("Module.cuda")
        return self.to(target_device(device))

    return cuda


def _first_arg_device(fn: Callable[..., Any], label: str, key: str) -> Callable[..., Any]:
    """Map a device (or device-type string) given as the first argument or as ``key=``."""

    @wrapping(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not TARGET.active:
            return fn(*args, **kwargs)
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

    @wrapping(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if TARGET.active:
            args, kwargs = inner(*args, **kwargs)
        return fn(self, *args, **kwargs)

    return wrapper


def _dataloader_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if not TARGET.active:
            return original(self, *args, **kwargs)  # type: ignore[no-any-return]
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
        return None

    return __init__


def _autocast_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def __init__(self: Any, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: Any = None):  # noqa: N807
        if device_type == "cuda" and TARGET.active:
            count("autocast")
            device_type = TARGET.device_type
            dtype = _amp_dtype(dtype)
        return original(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    return __init__


def _amp_dtype(dtype: Any) -> Any:
    import torch

    if dtype is torch.bfloat16:
        backend = TARGET.backend
        if backend is not None and not backend.autocast_bf16():
            warnings.warn(
                f"bfloat16 autocast requested but {TARGET.device_type} has no bf16 here: using float16",
                stacklevel=3,
            )
            return torch.float16
    return dtype


def _grad_scaler_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def __init__(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if device == "cuda" and TARGET.active:
            count("GradScaler")
            device = TARGET.device_type
        original(self, device, *args, **kwargs)

    return __init__


def _torch_load(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not TARGET.active:
            return original(f, map_location, *args, **kwargs)
        mapped = _map_location(map_location)
        if mapped is not map_location:
            count("torch.load(map_location)")
        return original(f, mapped, *args, **kwargs)

    return load


__all__ = [
    "FACTORIES",
    "TENSOR_NEW",
    "UnsupportedCudaAPIError",
    "_cuda_api_data",
    "cuda_api_table",
    "cuda_available",
    "cuda_functions",
    "set_default_tensor_type",
]
