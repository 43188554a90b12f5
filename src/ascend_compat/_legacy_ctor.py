"""torch's legacy constructor (``torch.Tensor(2, 3)``, ``torch.Tensor([1, 2])``) on a chosen device: what the
shim's CUDA default types and the simulator's npu default types both need, since torch's own constructor ignores
the default device."""

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
