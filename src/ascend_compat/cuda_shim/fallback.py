"""CPU fallback: what a CUDA script's gates and pinning mean when the target is the host.

Policy (``ASCEND_COMPAT_CUDA_AVAILABLE=auto``, the default): the CPU *is* the device a CUDA script runs on, so
its gates open. ``torch.cuda.is_available()`` is True and ``torch.cuda.device_count()`` 1 (see
:func:`~ascend_compat.cuda_shim.cuda_functions.cuda_available`), and ``torch.accelerator`` agrees: available, one
device, the current accelerator is ``cpu``, index 0, synchronising is a no-op (torch's own modules keep the
native ``torch.accelerator`` answers: they follow such a gate with C++ accelerator calls a CPU-only build lacks).
With ``false`` none of this is patched and ``torch.accelerator`` answers as torch does.

Pinned memory needs an accelerator's host allocator, which a CPU-only torch lacks ("Cannot access accelerator
device when none is available"). There is nothing to copy to, so pinning is a no-op: ``Tensor.pin_memory()``
returns the tensor, ``DataLoader(pin_memory=True)`` does not pin, factories given ``pin_memory=True`` allocate
ordinary memory (their one wrapper drops it: :func:`~ascend_compat.cuda_shim.patches._factory`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

from ascend_compat.cuda_shim.devices import TARGET, count, wrapping

if TYPE_CHECKING:  # a runtime alias costs a typing subscription on activate()'s path
    Patch = Callable[[Any, str, Any], None]


def _pin_memory(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def pin_memory(self: Any, device: Any = None) -> Any:
        """``Tensor.pin_memory()`` on CPU fallback: the tensor itself (there is no device to pin for)."""
        if not TARGET.active:
            return original(self) if device is None else original(self, device)
        count("Tensor.pin_memory")
        return self

    return pin_memory


def _outer_caller() -> Any:
    """The first frame outside this package (and functools): the caller of a patched function however many of
    the shim's wrappers stand between; None when there is none."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name.startswith("ascend_compat") or name == "functools"):
            return frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _is_torch(frame: Any) -> bool:
    name = frame.f_globals.get("__name__", "")
    return name == "torch" or name.startswith("torch.")  # type: ignore[no-any-return]


def caller_is_torch() -> bool:
    """Whether the first caller outside this package is torch's own code (``torch`` or ``torch.*``)."""
    frame = _outer_caller()
    return frame is not None and _is_torch(frame)


def caller_is_script() -> bool:
    """Whether the first caller outside this package is the user's own code: neither torch nor an installed
    library (a file under site-packages/dist-packages)."""
    frame = _outer_caller()
    if frame is None or _is_torch(frame):
        return False
    path = frame.f_code.co_filename.replace("\\", "/")
    return "/site-packages/" not in path and "/dist-packages/" not in path


def _from_torch() -> bool:
    """True when torch's own code called the patched function, or when the shim is off (a reference kept past
    deactivate(): torch's own answer)."""
    return not TARGET.active or caller_is_torch()


def _accelerator_functions(accelerator: Any, torch: Any) -> dict[str, Any]:
    """The gates answer for the script; torch's own code keeps the native answers, because after such a gate it
    calls the C++ accelerator API directly (dynamo's current stream, the DataLoader's pinning thread), which a
    CPU-only build does not have."""
    cpu = torch.device("cpu")
    native_available, native_count = accelerator.is_available, accelerator.device_count
    native_current = accelerator.current_accelerator

    def is_available() -> bool:
        return native_available() if _from_torch() else True

    def device_count() -> int:
        from ascend_compat.backends import cpu_device

        return native_count() if _from_torch() else cpu_device.device_count()

    def current_accelerator(check_available: bool = False) -> Any:
        return native_current(check_available) if _from_torch() else cpu

    native_index, native_set, native_sync = (getattr(accelerator, n, None) for n in
                                             ("current_device_index", "set_device_index", "synchronize"))

    def current_device_index() -> int:
        return 0 if TARGET.active or native_index is None else native_index()  # type: ignore[no-any-return]

    def set_device_index(device: Any, /) -> None:
        """Every ordinal is the one CPU (torchrun ranks call set_device_index(local_rank))."""
        if not TARGET.active and native_set is not None:
            native_set(device)

    def synchronize(device: Any = None, /) -> None:
        """CPU work is synchronous."""
        if not TARGET.active and native_sync is not None:
            native_sync(device)

    return {
        "is_available": is_available,
        "device_count": device_count,
        "current_accelerator": current_accelerator,
        "current_device_index": current_device_index,
        "current_device_idx": current_device_index,
        "set_device_index": set_device_index,
        "set_device_idx": set_device_index,
        "synchronize": synchronize,
    }


def _no_exchange(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def method(self: Any, *exc: Any) -> Any:
        """``torch.accelerator.device_index(i)`` on the one CPU: nothing to switch."""
        return None if TARGET.active else original(self, *exc)

    return method


def apply(patch: Patch, available: bool) -> None:
    """The CPU-fallback patches, through ``patch(owner, name, value)`` (the shim's ledger)."""
    import torch

    patch(torch.Tensor, "pin_memory", _pin_memory(torch.Tensor.pin_memory))
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None or not available:  # torch < 2.6, or ASCEND_COMPAT_CUDA_AVAILABLE=false
        return
    for name, fn in _accelerator_functions(accelerator, torch).items():
        if hasattr(accelerator, name):
            fn.__module__ = "torch.accelerator"
            patch(accelerator, name, fn)
    device_index = getattr(accelerator, "device_index", None)
    if isinstance(device_index, type):
        cls: Any = device_index
        patch(cls, "__enter__", _no_exchange(cls.__enter__))
        patch(cls, "__exit__", _no_exchange(cls.__exit__))
