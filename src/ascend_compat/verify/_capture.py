"""Running one side of a model comparison: the model on one device with hooks recording every submodule's inputs
and outputs (CPU copies, in execution order) and, with ``backward``, the gradients reaching them."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import torch

__all__ = ["Tensors", "flatten"]

#: (path, tensor) pairs: ``"out[0].logits"`` and the tensor found there.
Tensors = list[tuple[str, "torch.Tensor"]]


# --- flattening outputs ----------------------------------------------------------------------------------------


def flatten(value: object, prefix: str = "") -> Tensors:
    """(path, tensor) pairs of a nested output: tensors, tuples/lists, dicts, transformers ModelOutput (a dict)
    and dataclasses. Other leaves (None, caches, strings) are left out."""
    import torch

    if isinstance(value, torch.Tensor):
        return [(prefix or "out", value)]
    items: Tensors = []
    if isinstance(value, dict):  # ModelOutput is an OrderedDict of its non-None fields
        for key, item in value.items():
            items.extend(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            items.extend(flatten(item, f"{prefix}[{i}]"))
    elif hasattr(value, "__dataclass_fields__"):
        for key in value.__dataclass_fields__:
            items.extend(flatten(getattr(value, key, None), f"{prefix}.{key}" if prefix else key))
    return items


def _snapshot(value: object) -> Tensors:
    # A CPU copy now: later in-place ops must not change what was recorded.
    return [(p, t.detach().to("cpu", copy=True)) for p, t in flatten(value)]


def _move(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _move(v, device) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_move(v, device) for v in value)
    if isinstance(value, list):
        return [_move(v, device) for v in value]
    return value


# --- running one side ------------------------------------------------------------------------------------------


@dataclass
class _Record:
    key: tuple[str, int]
    module_type: str
    inputs: Tensors
    outputs: Tensors


@dataclass
class _Run:
    output: Tensors
    forward: list[_Record]
    backward: list[tuple[tuple[str, int, str], torch.Tensor]]  # ((module, call, output path), gradient)
    param_grads: dict[str, torch.Tensor]


def _loss_weights(output: Tensors, seed: int) -> dict[str, torch.Tensor]:
    """Fixed random weights per output tensor (drawn on the CPU, shared by both devices): loss = sum(w * out).

    A plain sum would give degenerate gradients (the sum of a softmax is constant)."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    return {p: torch.randn(t.shape, generator=gen, dtype=torch.float32) for p, t in output if t.is_floating_point()}


def _run_side(model: torch.nn.Module, args: tuple, kwargs: dict, device: str, backward: bool, seed: int) -> _Run:
    import torch

    m = copy.deepcopy(model).to(device)
    m.eval()
    args, kwargs = _move(args, device), _move(kwargs, device)
    forward: list[_Record] = []
    grads: list[tuple[tuple[str, int, str], torch.Tensor]] = []
    calls: dict[str, int] = {}
    handles = []

    def make_hook(name: str) -> Callable[..., None]:
        def hook(module: torch.nn.Module, h_args: tuple, h_kwargs: dict, output: object) -> None:
            idx = calls.get(name, 0)
            calls[name] = idx + 1
            forward.append(_Record((name, idx), type(module).__name__, _snapshot((h_args, h_kwargs)),
                                   _snapshot(output)))  # fmt: skip
            if backward:
                for path, tensor in flatten(output):
                    if tensor.requires_grad and tensor.grad_fn is not None:
                        tensor.register_hook(
                            lambda g, k=(name, idx, path): grads.append((k, g.detach().to("cpu", copy=True)))
                        )

        return hook

    # The root too ("(model)"): a divergence in its own forward, between its children, is then named as well; it
    # finishes last, so any child that diverged is still reported first.
    for name, module in m.named_modules():
        handles.append(module.register_forward_hook(make_hook(name or "(model)"), with_kwargs=True))
    try:
        torch.manual_seed(seed)
        with torch.set_grad_enabled(backward):
            out = m(*args, **kwargs)
        flat = flatten(out)
        param_grads: dict[str, torch.Tensor] = {}
        if backward:
            weights = _loss_weights(flat, seed)
            terms = [(t.float() * weights[p].to(t.device)).sum() for p, t in flat if p in weights and t.requires_grad]
            if not terms:
                raise ValueError("backward=True but no floating output requires grad")
            torch.stack([t.to(terms[0].device) for t in terms]).sum().backward()
            param_grads = {n: p.grad.detach().to("cpu", copy=True) for n, p in m.named_parameters()
                           if p.grad is not None}  # fmt: skip
    finally:
        for h in handles:
            h.remove()
    return _Run(_snapshot(out), forward, grads, param_grads)
