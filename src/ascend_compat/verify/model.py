"""Model-level parity: the same model and inputs on a reference and a target device, compared layer by layer.

The model is built once under a fixed seed, deep-copied to each device and run in eval mode (dropout would draw
different random numbers on each device). Forward hooks on every submodule record its inputs and outputs in
execution order; with ``backward=True`` tensor hooks record the gradient reaching each submodule's outputs (in
backward execution order) and the parameters' gradients are compared too. The first module, in execution order,
whose outputs differ beyond tolerance is the first divergence: hooks fire when a module finishes, so a child is
seen before its parent and the earliest culprit is named, not the block containing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, TypedDict, Union

from ascend_compat._style import paint as style_paint
from ascend_compat.verify._capture import Tensors, _Run, _run_side, flatten
from ascend_compat.verify.tolerances import (
    Diff,
    DiffDict,
    JsonFloat,
    Tolerance,
    compare_tensors,
    json_float,
    model_tolerance,
)

if TYPE_CHECKING:
    import torch

__all__ = ["SCHEMA_VERSION", "ComparisonReport", "LayerResult", "ModelFactory", "build", "compare", "flatten", "render"]

SCHEMA_VERSION = 1


@dataclass
class LayerResult:
    """One call of one submodule (or the gradient reaching its outputs), compared across the devices."""

    name: str
    call: int
    module_type: str
    phase: str  # "forward" or "backward"
    ok: bool
    diffs: list[Diff] = field(default_factory=list)
    inputs_ok: Optional[bool] = None  # forward only: did the module receive matching inputs?
    note: str = ""

    @property
    def label(self) -> str:
        return self.name if self.call == 0 else f"{self.name} (call {self.call + 1})"

    def worst(self) -> tuple[float, float, float]:
        """(max abs error, max rel error, min cosine) over the recorded tensors."""
        if not self.diffs:
            return (0.0, 0.0, 1.0)
        return (max(d.max_abs for d in self.diffs), max(d.max_rel for d in self.diffs),
                min(d.cosine for d in self.diffs))  # fmt: skip

    def to_dict(self) -> LayerResultDict:
        max_abs, max_rel, cosine = self.worst()
        return {
            "name": self.name, "call": self.call, "module_type": self.module_type, "phase": self.phase,
            "ok": self.ok, "inputs_ok": self.inputs_ok, "max_abs": json_float(max_abs),
            "max_rel": json_float(max_rel), "cosine": json_float(cosine), "note": self.note,
            "tensors": [d.to_dict() for d in self.diffs],
        }  # fmt: skip


class LayerResultDict(TypedDict):
    """:meth:`LayerResult.to_dict`."""

    name: str
    call: int
    module_type: str
    phase: str
    ok: bool
    inputs_ok: Optional[bool]
    max_abs: JsonFloat
    max_rel: JsonFloat
    cosine: JsonFloat
    note: str
    tensors: list[DiffDict]


@dataclass
class ComparisonReport:
    """The outcome of :func:`compare`."""

    reference: str
    target: str
    requested_target: str
    tolerance: Tolerance
    model_type: str
    dtype: str
    backward: bool
    outputs: list[Diff] = field(default_factory=list)
    layers: list[LayerResult] = field(default_factory=list)
    grads: list[LayerResult] = field(default_factory=list)  # backward: module-output gradients, backward order
    param_grads: list[Diff] = field(default_factory=list)
    fallback: Optional[str] = None
    simulated: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def first_divergence(self) -> Optional[LayerResult]:
        """The first submodule (forward execution order) whose outputs diverge, or None."""
        return next((r for r in self.layers if not r.ok), None)

    @property
    def first_backward_divergence(self) -> Optional[LayerResult]:
        """The first module-output gradient (backward execution order) that diverges, or None."""
        return next((r for r in self.grads if not r.ok), None)

    @property
    def ok(self) -> bool:
        return (
            all(d.ok for d in self.outputs)
            and all(r.ok for r in self.layers)
            and all(r.ok for r in self.grads)
            and all(d.ok for d in self.param_grads)
        )

    def to_dict(self) -> ComparisonDict:
        first, first_bwd = self.first_divergence, self.first_backward_divergence
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "model",
            "ok": self.ok,
            "model_type": self.model_type,
            "dtype": self.dtype,
            "reference": self.reference,
            "target": self.target,
            "requested_target": self.requested_target,
            "simulated": self.simulated,
            "fallback": self.fallback,
            "rtol": self.tolerance.rtol,
            "atol": self.tolerance.atol,
            "tolerance_basis": self.tolerance.basis,
            "backward": self.backward,
            "first_divergence": first.to_dict() if first else None,
            "first_backward_divergence": first_bwd.to_dict() if first_bwd else None,
            "outputs": [d.to_dict() for d in self.outputs],
            "layers": [r.to_dict() for r in self.layers],
            "grads": [r.to_dict() for r in self.grads],
            "param_grads": [d.to_dict() for d in self.param_grads],
            "notes": self.notes,
        }


class ComparisonDict(TypedDict):
    """:meth:`ComparisonReport.to_dict`, the ``verify model --json`` report."""

    schema_version: int
    kind: str
    ok: bool
    model_type: str
    dtype: str
    reference: str
    target: str
    requested_target: str
    simulated: bool
    fallback: Optional[str]
    rtol: float
    atol: float
    tolerance_basis: str
    backward: bool
    first_divergence: Optional[LayerResultDict]
    first_backward_divergence: Optional[LayerResultDict]
    outputs: list[DiffDict]
    layers: list[LayerResultDict]
    grads: list[LayerResultDict]
    param_grads: list[DiffDict]
    notes: list[str]


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


def _split_inputs(inputs: Any) -> tuple[tuple, dict]:
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


#: An ``nn.Module``, or a callable returning one or ``(module, inputs)``.
ModelFactory = Union[Callable[[], Any], "torch.nn.Module"]


def build(model_fn: ModelFactory, inputs: Any = None, seed: int = 0) -> tuple[torch.nn.Module, Any]:
    """Build the model once under ``seed``: ``model_fn`` is an ``nn.Module`` or a callable returning a module or
    ``(module, inputs)``. Returns (model, inputs); raises ValueError when there are no inputs to use."""
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
    inputs = inputs if inputs is not None else given
    if inputs is None:
        inputs = _default_inputs(built, seed)
    if inputs is None:
        raise ValueError("no inputs: pass inputs=, or return (model, inputs) from the factory")
    return built, inputs


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
    inputs: Any = None,
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
    model, inputs = build(model_fn, inputs, seed)
    args, kwargs = _split_inputs(inputs)
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


# --- rendering -------------------------------------------------------------------------------------------------


def render(report: ComparisonReport, color: bool = False, limit: int = 40) -> str:
    """The verdict, the first divergence and the per-layer table (``limit`` rows around the divergence)."""

    def paint(text: str, style: str) -> str:
        return style_paint(text, style, color)

    t = report.tolerance
    lines = [f"verify model {report.model_type} ({report.dtype}): {report.reference} (reference) vs "
             f"{report.target} (target), rtol={t.rtol:g} atol={t.atol:g} [{t.basis}]"]  # fmt: skip
    if report.fallback:
        lines.append(f"note: requested {report.requested_target}: {report.fallback}")
    lines.extend(f"note: {n}" for n in report.notes)
    first = report.first_divergence
    if first is not None:
        max_abs, max_rel, cosine = first.worst()
        lines.append(paint(f"FIRST DIVERGENCE: {first.label} ({first.module_type})", "error")
                     + f"  max_abs={max_abs:.3e} max_rel={max_rel:.3e} cosine={cosine:.6f}"
                     + (f"  [{first.note}]" if first.note else ""))  # fmt: skip
        if first.inputs_ok is False:
            lines.append("  its inputs already differed: the difference arose in code between modules "
                         "(the parent's own forward), just before this module")  # fmt: skip
    bwd = report.first_backward_divergence
    if bwd is not None:
        max_abs, max_rel, cosine = bwd.worst()
        lines.append(paint(f"FIRST BACKWARD DIVERGENCE: {bwd.label} ({bwd.module_type})", "error")
                     + f"  max_abs={max_abs:.3e} max_rel={max_rel:.3e} cosine={cosine:.6f}")  # fmt: skip
    rows = report.layers
    start = 0
    if len(rows) > limit:
        pos = rows.index(first) if first is not None else 0
        start = max(0, min(pos - limit // 4, len(rows) - limit))
        rows = rows[start:start + limit]
    lines.append(f"{'#':>4} {'module':<44} {'type':<22} {'status':<8} {'max_abs':>9} {'max_rel':>9} {'cosine':>9}")
    for i, r in enumerate(rows, start):
        max_abs, max_rel, cosine = r.worst()
        status = paint("ok", "ok") + "      " if r.ok else paint("DIVERGED", "error")
        mark = " <- first" if r is first else ""
        lines.append(f"{i:>4} {r.label[:44]:<44} {r.module_type[:22]:<22} {status} {max_abs:>9.2e} {max_rel:>9.2e} "
                     f"{cosine:>9.6f}{mark}")  # fmt: skip
    if len(report.layers) > len(rows):
        lines.append(f"     ({len(report.layers) - len(rows)} more rows: use --json for all)")
    out_bad = [d for d in report.outputs if not d.ok]
    lines.append("model output: " + ("matches" if not out_bad else
                 "DIFFERS in " + ", ".join(f"{d.path} (max_abs {d.max_abs:.2e})" for d in out_bad)))  # fmt: skip
    if report.backward:
        bad = [d for d in report.param_grads if not d.ok]
        lines.append(f"parameter gradients: {len(report.param_grads) - len(bad)}/{len(report.param_grads)} match"
                     + (f" (first differing: {bad[0].path})" if bad else ""))  # fmt: skip
    lines.append("verdict: " + (paint("MATCH", "ok") if report.ok else paint("DIVERGED", "error")))
    return "\n".join(lines)
