"""The result of a model comparison (:func:`ascend_compat.verify.model.compare`): per-layer results, the report,
their JSON shapes (``verify model --json``) and the text view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional, TypedDict

from ascend_compat._style import paint as style_paint
from ascend_compat.verify.tolerances import Diff, DiffDict, JsonFloat, Tolerance, json_float

__all__ = ["SCHEMA_VERSION", "ComparisonDict", "ComparisonReport", "LayerResult", "LayerResultDict", "Phase", "render"]

SCHEMA_VERSION = 1

#: What a :class:`LayerResult` compares: a submodule's outputs, or the gradient reaching them.
Phase = Literal["forward", "backward"]


@dataclass
class LayerResult:
    """One call of one submodule (or the gradient reaching its outputs), compared across the devices."""

    name: str
    call: int
    module_type: str
    phase: Phase
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
    phase: Phase
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
    kind: Literal["model"]
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
