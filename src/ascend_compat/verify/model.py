"""Model-level parity: the same model and inputs on a reference and a target device, compared layer by layer.

The model is built once under a fixed seed, deep-copied to each device and run in eval mode (dropout would draw
different random numbers on each device). Forward hooks on every submodule record its inputs and outputs in
execution order; with ``backward=True`` tensor hooks record the gradient reaching each submodule's outputs (in
backward execution order) and the parameters' gradients are compared too. The first module, in execution order,
whose outputs differ beyond tolerance is the first divergence: hooks fire when a module finishes, so a child is
seen before its parent and the earliest culprit is named, not the block containing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ascend_compat.verify._capture import Tensors, _Run, _run_side, flatten
from ascend_compat.verify.model_report import (  # the report's types, re-exported: users import them from here
    SCHEMA_VERSION,
    ComparisonDict,
    ComparisonReport,
    LayerResult,
    LayerResultDict,
    render,
)
from ascend_compat.verify.tolerances import Diff, Tolerance, compare_tensors, model_tolerance

if TYPE_CHECKING:
    import torch

__all__ = ["SCHEMA_VERSION", "ComparisonDict", "ComparisonReport", "LayerResult", "LayerResultDict", "ModelFactory",
           "ModelInputs", "build", "compare", "flatten", "render"]


# --- comparing -------------------------------------------------------------------------------------------------


def _compare_lists(ref: Tensors, tgt: Tensors, tol: Tolerance) -> tuple[list[Diff], str]:
    tgt_map = dict(tgt)
    diffs: list[Diff] = []
    for path, r in ref:
        if path not in tgt_map:
            return diffs, f"{path} missing on the target"
        diffs.append(compare_tensors(tgt_map[path], r, tol, path))
    extra = [p for p, _ in tgt if p not in dict(ref)]
    return diffs, (f"{', '.join(extra)} only on the target" if extra else "")


def _model_dtype(model: torch.nn.Module) -> str:
    for p in model.parameters():
        if p.is_floating_point():
            return str(p.dtype).replace("torch.", "")
    return "float32"


def _split_inputs(inputs: object) -> tuple[tuple[Any, ...], dict[str, Any]]:
    import torch

    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    raise TypeError(f"inputs must be a tensor, a tuple/list of positional arguments or a dict of keyword "
                    f"arguments, got {type(inputs).__name__}")  # fmt: skip


def _default_inputs(model: torch.nn.Module, seed: int) -> Optional[dict[str, torch.Tensor]]:
    """``input_ids`` for a transformers-style model (it has ``config.vocab_size``); otherwise None."""
    import torch

    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if not isinstance(vocab, int) or vocab <= 0:
        return None
    gen = torch.Generator().manual_seed(seed)
    return {"input_ids": torch.randint(0, min(vocab, 1000), (2, 16), generator=gen)}


#: An ``nn.Module``, or a callable returning one or ``(module, inputs)`` (what it returns is checked at run time).
ModelFactory = Union[Callable[[], object], "torch.nn.Module"]

#: What the model is called with: a tensor (one positional argument), a tuple/list of positional arguments or a
#: dict of keyword arguments.
ModelInputs = Union["torch.Tensor", tuple[Any, ...], list[Any], dict[str, Any]]


def build(
    model_fn: ModelFactory, inputs: Optional[ModelInputs] = None, seed: int = 0
) -> tuple[torch.nn.Module, object]:
    """Build the model once under ``seed``: ``model_fn`` is an ``nn.Module`` or a callable returning a module or
    ``(module, inputs)``. Returns (model, inputs), the inputs as given (:func:`compare` checks their shape); raises
    ValueError when there are no inputs to use."""
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    built = model_fn if isinstance(model_fn, torch.nn.Module) else model_fn()
    given = None
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], torch.nn.Module):
        built, given = built
    if not isinstance(built, torch.nn.Module):
        raise TypeError(f"the factory must return an nn.Module or (nn.Module, inputs), got {type(built).__name__}")
    used: object = inputs if inputs is not None else given
    if used is None:
        used = _default_inputs(built, seed)
    if used is None:
        raise ValueError("no inputs: pass inputs=, or return (model, inputs) from the factory")
    return built, used


def _compare_forward(ref: _Run, tgt: _Run, tol: Tolerance) -> list[LayerResult]:
    """One result per submodule call, in the reference's execution order, then calls seen on the target only."""
    layers: list[LayerResult] = []
    tgt_fwd = {r.key: r for r in tgt.forward}
    for rec in ref.forward:
        other = tgt_fwd.pop(rec.key, None)
        if other is None:
            layers.append(LayerResult(rec.key[0], rec.key[1], rec.module_type, "forward", False,
                                      note="ran on the reference only"))  # fmt: skip
            continue
        diffs, note = _compare_lists(rec.outputs, other.outputs, tol)
        in_diffs, in_note = _compare_lists(rec.inputs, other.inputs, tol)
        inputs_ok = not in_note and all(d.ok for d in in_diffs)
        ok = not note and all(d.ok for d in diffs)
        if not ok and not inputs_ok:
            note = note or "its inputs already differed"
        layers.append(LayerResult(rec.key[0], rec.key[1], rec.module_type, "forward", ok, diffs, inputs_ok,
                                  note))  # fmt: skip
    for key, rec in tgt_fwd.items():
        layers.append(LayerResult(key[0], key[1], rec.module_type, "forward", False,
                                  note="ran on the target only"))  # fmt: skip
    return layers


def _compare_backward(report: ComparisonReport, ref: _Run, tgt: _Run, tol: Tolerance) -> None:
    """The gradients reaching each submodule's outputs (``report.grads``) and the parameters' (``param_grads``)."""
    tgt_grads = dict(tgt.backward)
    types = {r.key[0]: r.module_type for r in ref.forward}
    seen: dict[tuple[str, int], LayerResult] = {}
    for (name, idx, path), g in ref.backward:
        row = seen.get((name, idx))
        if row is None:
            row = seen[(name, idx)] = LayerResult(name, idx, types.get(name, ""), "backward", True)
            report.grads.append(row)
        other = tgt_grads.get((name, idx, path))
        if other is None:
            row.ok, row.note = False, f"no gradient for {path} on the target"
            continue
        diff = compare_tensors(other, g, tol, path)
        row.diffs.append(diff)
        row.ok = row.ok and diff.ok
    for name, g in ref.param_grads.items():
        other = tgt.param_grads.get(name)
        report.param_grads.append(
            compare_tensors(other, g, tol, name) if other is not None
            else Diff(name, list(g.shape), "", False, note="no gradient on the target")
        )  # fmt: skip


def compare(
    model_fn: ModelFactory,
    inputs: Optional[ModelInputs] = None,
    reference: str = "cpu",
    target: str = "npu",
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    backward: bool = False,
    seed: int = 0,
) -> ComparisonReport:
    """Run one model on ``reference`` and ``target`` with the same weights and inputs and compare every layer.

    Args:
        model_fn: an ``nn.Module``, or a callable returning one or ``(module, inputs)``; called once under
            ``seed``, and each device gets a deep copy.
        inputs: a tensor (one positional argument), a tuple/list (positional) or a dict (keyword arguments);
            default the factory's, or ``input_ids`` for a model with ``config.vocab_size``.
        reference, target: devices (``cpu``, ``npu``, ``npu:1``, ``cuda``). An absent target falls back to the
            CPU; the report's ``fallback`` says so (the comparison then says nothing about the accelerator).
        rtol, atol: override the model-level tolerance of the model's dtype (``data/tolerances.json``).
        backward: also compare the gradients reaching every module's outputs and the parameters' gradients
            (loss = sum of the outputs times fixed random weights).
    """
    from ascend_compat.verify.devices import resolve

    where = resolve(target)
    ref_where = resolve(reference)
    if ref_where.fallback:
        raise ValueError(f"reference device {reference!r} is not available: {ref_where.fallback}")
    model, used = build(model_fn, inputs, seed)
    args, kwargs = _split_inputs(used)
    dtype = _model_dtype(model)
    tol = model_tolerance(dtype, rtol, atol)
    report = ComparisonReport(ref_where.device, where.device, where.requested, tol, type(model).__name__, dtype,
                              backward, fallback=where.fallback,
                              simulated=where.simulated and where.device_type == "npu")  # fmt: skip
    ref = _run_side(model, args, kwargs, ref_where.device, backward, seed)
    tgt = _run_side(model, args, kwargs, where.device, backward, seed)
    report.outputs, note = _compare_lists(ref.output, tgt.output, tol)
    if note:
        report.notes.append(f"model output: {note}")
        report.outputs.append(Diff("(structure)", [], "", False, note=note))
    report.layers += _compare_forward(ref, tgt, tol)
    if backward:
        _compare_backward(report, ref, tgt, tol)
    if where.simulated and where.device_type == "npu":
        report.notes.append("the simulated NPU runs CPU kernels: this checks placement and the model's device "
                            "paths, not NPU numerics")  # fmt: skip
    return report
