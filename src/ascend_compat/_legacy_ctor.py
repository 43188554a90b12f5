"""torch's legacy constructor (``torch.Tensor(2, 3)``, ``torch.Tensor([1, 2])``) on a chosen device: what the
shim's CUDA default types and the simulator's npu default types both need, since torch's own constructor ignores
the default device; and the dtype half of ``set_default_tensor_type`` for such a type."""

from __future__ import annotations

from typing import Any


def construct(args: tuple[Any, ...], dtype: Any, device: Any) -> Any:
    """The tensor ``torch.Tensor(*args)`` builds, on ``device`` with ``dtype``: no arguments, an empty tensor;
    sizes, an uninitialised one; one sequence, a copy of the data. None for the forms torch handles itself (a
    tensor or storage to alias, anything else)."""
    import torch

    if args and isinstance(args[0], (torch.Tensor, torch.UntypedStorage, torch.TypedStorage)):
        return None
    if not args:
        return torch.empty(0, dtype=dtype, device=device)
    if all(isinstance(a, int) for a in args) or (len(args) == 1 and isinstance(args[0], torch.Size)):
        return torch.empty(*args, dtype=dtype, device=device)
    if len(args) == 1:
        return torch.tensor(args[0], dtype=dtype, device=device)
    return None


def set_default_dtype_of(legacy_type: Any, stacklevel: int) -> None:
    """What ``torch.set_default_tensor_type(legacy_type)`` does to the dtype, in torch's words: a non-floating type is
    refused, the call warns as deprecated (``stacklevel`` counted from the caller of this function), and the type's
    dtype becomes the default. The device half is the caller's."""
    import warnings

    import torch

    if not legacy_type.dtype.is_floating_point:
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype() "
        "and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )
    torch.set_default_dtype(legacy_type.dtype)
