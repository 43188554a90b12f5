"""Per-dtype tolerances (``data/tolerances.json``) and the element-wise closeness metrics both levels share.

An element passes when ``|actual - golden| <= atol + rtol * |golden|``: ``atol`` covers the small-value regime
(golden near zero), ``rtol`` the rest. The data file gives the figures and the reasoning for each dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol, TypedDict, Union, cast

from ascend_compat import _data

if TYPE_CHECKING:
    import torch

DTYPES = ("float32", "float16", "bfloat16")

#: A float in a JSON report: JSON has no NaN/Infinity, so those are written as strings ("nan", "inf").
JsonFloat = Union[float, str]


def json_float(value: float) -> JsonFloat:
    """``value``, or its string when it is NaN or infinite (see :data:`JsonFloat`)."""
    return value if math.isfinite(value) else str(value)


@dataclass(frozen=True)
class Tolerance:
    """The thresholds applied to one comparison and where they come from."""

    rtol: float
    atol: float
    basis: str  # "float16", "override: conv1d/conv2d float32 on npu", "user"


class Thresholds(TypedDict):
    """One dtype's thresholds in ``data/tolerances.json``, with why and where from."""

    rtol: float
    atol: float
    source: str
    reasoning: str


class OpThresholds(Thresholds):
    """An op-level dtype entry: also the dtype's unit roundoff (rtol must exceed it)."""

    unit_roundoff: float


class Override(TypedDict):
    """Op-level thresholds for some ops, dtypes and devices (no devices: every device)."""

    ops: list[str]
    dtypes: list[str]
    devices: list[str]
    rtol: float
    atol: float
    source: str
    reasoning: str


class OpLevel(TypedDict):
    description: str
    dtypes: dict[str, OpThresholds]
    overrides: list[Override]


class ModelLevel(TypedDict):
    description: str
    dtypes: dict[str, Thresholds]


class TolerancesFile(TypedDict):
    """``data/tolerances.json`` (its shape is checked against these types by ``tests/verify/test_data.py``)."""

    schema_version: int
    criterion: str
    op_level: OpLevel
    model_level: ModelLevel


def load() -> TolerancesFile:
    """The parsed ``data/tolerances.json`` (shared: read it, never change it)."""
    return cast(TolerancesFile, _data.load("tolerances"))


def op_tolerance(op: str, dtype: str, device_type: str) -> Tolerance:
    """The op-level tolerance of ``op`` in ``dtype`` on ``device_type`` (an override, else the dtype's)."""
    level = load()["op_level"]
    for entry in level["overrides"]:
        on_device = not entry["devices"] or device_type in entry["devices"]
        if op in entry["ops"] and dtype in entry["dtypes"] and on_device:
            where = f" on {device_type}" if entry["devices"] else ""
            return Tolerance(entry["rtol"], entry["atol"], f"override: {'/'.join(entry['ops'])} {dtype}{where}")
    base = level["dtypes"].get(dtype)
    if base is None:
        raise ValueError(f"no op-level tolerance for dtype {dtype!r}; known: {', '.join(level['dtypes'])}")
    return Tolerance(base["rtol"], base["atol"], dtype)


def model_tolerance(dtype: str, rtol: Optional[float] = None, atol: Optional[float] = None) -> Tolerance:
    """The model-level tolerance for a model in ``dtype``; explicit ``rtol``/``atol`` win."""
    table = load()["model_level"]["dtypes"]
    base = table.get(dtype, table["float32"])
    if rtol is not None or atol is not None:
        return Tolerance(
            base["rtol"] if rtol is None else float(rtol), base["atol"] if atol is None else float(atol), "user"
        )
    return Tolerance(base["rtol"], base["atol"], dtype if dtype in table else "float32")


@dataclass
class Diff:
    """How one tensor compares with its reference."""

    path: str
    shape: list[int]
    dtype: str
    ok: bool
    max_abs: float = 0.0
    max_rel: float = 0.0  # over elements with |golden| > atol (outside the small-value regime)
    cosine: float = 1.0
    ratio: float = 0.0  # max |a-b| / (atol + rtol|b|): <= 1 passes; 1e9 stands for "fails even with atol 0"
    mismatched: int = 0
    numel: int = 0
    note: str = ""

    def to_dict(self) -> DiffDict:
        return {
            "path": self.path, "shape": list(self.shape), "dtype": self.dtype, "ok": self.ok,
            **metrics_dict(self), "note": self.note,
        }  # fmt: skip


class MetricsDict(TypedDict):
    """The comparison figures every JSON report row carries (:func:`metrics_dict`)."""

    max_abs: JsonFloat
    max_rel: JsonFloat
    cosine: JsonFloat
    ratio: JsonFloat
    mismatched: int
    numel: int


class _Metrics(Protocol):
    max_abs: float
    max_rel: float
    cosine: float
    ratio: float
    mismatched: int
    numel: int


def metrics_dict(r: _Metrics) -> MetricsDict:
    """``r``'s comparison figures (a :class:`Diff`, or a report row with the same fields), JSON-safe."""
    return {
        "max_abs": json_float(r.max_abs), "max_rel": json_float(r.max_rel), "cosine": json_float(r.cosine),
        "ratio": json_float(r.ratio), "mismatched": r.mismatched, "numel": r.numel,
    }  # fmt: skip


class DiffDict(MetricsDict):
    """:meth:`Diff.to_dict`: one tensor's comparison in a JSON report (with the :class:`MetricsDict` keys)."""

    path: str
    shape: list[int]
    dtype: str
    ok: bool
    note: str


def compare_tensors(actual: torch.Tensor, golden: torch.Tensor, tol: Tolerance, path: str = "") -> Diff:
    """Compare two tensors (any devices/dtypes) in float64 on the CPU.

    Integer and bool tensors must be equal. NaN matches NaN at the same place and infinities must match exactly;
    a NaN or infinity against a finite value is a mismatch.
    """
    import torch

    a = actual.detach().to("cpu")
    b = golden.detach().to("cpu")
    shape = list(b.shape)
    if a.shape != b.shape:
        return Diff(path, shape, str(a.dtype).replace("torch.", ""), False, math.inf, math.inf, 0.0, math.inf,
                    b.numel(), b.numel(), f"shape {list(a.shape)} vs {shape}")  # fmt: skip
    dtype = str(a.dtype).replace("torch.", "")
    if not (a.is_floating_point() or a.is_complex()) or not (b.is_floating_point() or b.is_complex()):
        bad = int((a.to(torch.int64) != b.to(torch.int64)).sum()) if a.numel() else 0
        return Diff(path, shape, dtype, bad == 0, float(bad > 0), float(bad > 0), 1.0 if bad == 0 else 0.0,
                    0.0 if bad == 0 else math.inf, bad, a.numel())  # fmt: skip
    a64, b64 = a.to(torch.float64), b.to(torch.float64)
    if a.is_complex():
        a64, b64 = torch.view_as_real(a.to(torch.complex128)), torch.view_as_real(b.to(torch.complex128))
    numel = a64.numel()
    if numel == 0:
        return Diff(path, shape, dtype, True)
    nan_a, nan_b = torch.isnan(a64), torch.isnan(b64)
    inf_pair = torch.isinf(a64) | torch.isinf(b64)
    special_bad = (nan_a != nan_b) | (inf_pair & ~(nan_a | nan_b) & (a64 != b64))
    finite = ~(nan_a | nan_b | inf_pair)
    err = torch.where(finite, (a64 - b64).abs(), torch.zeros_like(a64))
    bound = tol.atol + tol.rtol * b64.abs()
    over = finite & (err > bound)
    mismatched = int(over.sum()) + int(special_bad.sum())
    max_abs = float(err.max())
    big = finite & (b64.abs() > max(tol.atol, 1e-300))
    max_rel = float((err[big] / b64.abs()[big]).max()) if bool(big.any()) else 0.0
    with torch.no_grad():
        ratio_t = torch.where(bound > 0, err / bound.clamp_min(1e-300), torch.where(err > 0, 1e9, 0.0))
    ratio = float(ratio_t[finite].max()) if bool(finite.any()) else 0.0
    if bool(special_bad.any()):
        ratio, max_abs = math.inf, math.inf
    fa, fb = torch.where(finite, a64, 0.0).flatten(), torch.where(finite, b64, 0.0).flatten()
    na, nb = float(fa.norm()), float(fb.norm())
    cosine = 1.0 if na == 0 and nb == 0 else (float(fa @ fb) / (na * nb) if na and nb else 0.0)
    note = f"{int(special_bad.sum())} NaN/inf mismatches" if bool(special_bad.any()) else ""
    return Diff(path, shape, dtype, mismatched == 0, max_abs, max_rel, cosine, ratio, mismatched, numel, note)
