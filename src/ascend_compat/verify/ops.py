"""The op-level parity suite: each op on the target device against a float64 CPU golden of the same inputs.

Inputs are drawn in float32 from a seeded CPU generator, rounded to the tested dtype, and the golden is computed
from those rounded values in float64, so a result measures the op's own error, not the input rounding. Inputs
are scaled so that outputs are O(1) (one ``atol`` per dtype then makes sense).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, TypedDict

from ascend_compat._style import paint
from ascend_compat.verify.op_cases import Inputs, OpCase, build_suite
from ascend_compat.verify.tolerances import (
    DTYPES,
    Diff,
    JsonFloat,
    MetricsDict,
    compare_tensors,
    json_float,
    metrics_dict,
    op_tolerance,
)

if TYPE_CHECKING:
    import torch

SCHEMA_VERSION = 1
STATUSES = ("pass", "fail", "error", "skipped")


@dataclass
class OpResult:
    """The outcome of one op in one dtype."""

    op: str
    group: str
    dtype: str
    status: str  # pass, fail, error, skipped
    rtol: float = 0.0
    atol: float = 0.0
    tolerance_basis: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    cosine: float = 1.0
    ratio: float = 0.0
    mismatched: int = 0
    numel: int = 0
    detail: str = ""
    seconds: float = 0.0

    def to_dict(self) -> OpResultDict:
        return {
            "op": self.op, "group": self.group, "dtype": self.dtype, "status": self.status,
            "rtol": json_float(self.rtol), "atol": json_float(self.atol), "tolerance_basis": self.tolerance_basis,
            **metrics_dict(self), "detail": self.detail, "seconds": json_float(self.seconds),
        }  # fmt: skip


class OpResultDict(MetricsDict):
    """:meth:`OpResult.to_dict`, one row of the ``verify ops --json`` report (with the :class:`MetricsDict` keys)."""

    op: str
    group: str
    dtype: str
    status: str
    rtol: JsonFloat
    atol: JsonFloat
    tolerance_basis: str
    detail: str
    seconds: JsonFloat


@dataclass
class OpSuiteReport:
    """The whole suite on one device."""

    device: str
    requested_device: str
    dtypes: list[str]
    results: list[OpResult] = field(default_factory=list)
    fallback: Optional[str] = None
    simulated: bool = False
    torch_version: str = ""
    seed: int = 0

    @property
    def ok(self) -> bool:
        """No op failed or raised (skips are fine)."""
        return not any(r.status in ("fail", "error") for r in self.results)

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def to_dict(self) -> OpSuiteDict:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "ops",
            "device": self.device,
            "requested_device": self.requested_device,
            "simulated": self.simulated,
            "fallback": self.fallback,
            "torch_version": self.torch_version,
            "seed": self.seed,
            "dtypes": self.dtypes,
            "ok": self.ok,
            "counts": self.counts(),
            "criterion": "|actual - golden| <= atol + rtol * |golden|, golden computed in float64 on the CPU",
            "results": [r.to_dict() for r in self.results],
        }


class OpSuiteDict(TypedDict):
    """:meth:`OpSuiteReport.to_dict`, the ``verify ops --json`` report."""

    schema_version: int
    kind: str
    device: str
    requested_device: str
    simulated: bool
    fallback: Optional[str]
    torch_version: str
    seed: int
    dtypes: list[str]
    ok: bool
    counts: dict[str, int]
    criterion: str
    results: list[OpResultDict]


# --- running ---------------------------------------------------------------------------------------------------


def _place(inputs: Inputs, device: str, dtype: torch.dtype) -> Inputs:
    """Float tensors to ``dtype`` on ``device``; index tensors keep their dtype."""
    return {k: (v.to(device=device, dtype=dtype) if v.is_floating_point() else v.to(device)) for k, v in inputs.items()}


def _supported(device_type: str, dtype: str) -> Optional[str]:
    """A reason the device cannot hold ``dtype`` at all (bf16 on 310P), or None."""
    if dtype != "bfloat16" or device_type == "cpu":
        return None
    import torch

    module = getattr(torch, device_type, None)
    probe = getattr(module, "is_bf16_supported", None)
    try:
        if probe is not None and not probe():
            return f"{device_type} reports no bfloat16 support"
    except Exception:
        return None
    return None


def run_case(case: OpCase, device: str, dtype: str, seed: int = 0) -> OpResult:
    """Run one case; never raises (an exception becomes status ``error``)."""
    import torch

    device_type = device.split(":")[0]
    tol = op_tolerance(case.name, dtype, device_type)
    result = OpResult(case.name, case.group, dtype, "skipped", tol.rtol, tol.atol, tol.basis)
    if case.devices and device_type not in case.devices:
        result.detail = f"only on {', '.join(case.devices)}"
        return result
    reason = (case.check() if case.check else None) or _supported(device_type, dtype)
    if reason:
        result.detail = reason
        return result
    started = time.perf_counter()
    try:
        gen = torch.Generator().manual_seed(seed)
        raw = case.make(gen)
        rounded = _place(raw, "cpu", getattr(torch, dtype))
        golden = (case.golden or case.run)(_place(rounded, "cpu", torch.float64))
        actual = case.run(_place(rounded, device, getattr(torch, dtype)))
        if actual.device.type != device_type:
            raise RuntimeError(f"the result is on {actual.device}, not on {device_type}")
        diff: Diff = compare_tensors(actual, golden, tol)
    except Exception as exc:  # one bad op never stops the suite
        result.status, result.detail = "error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        result.seconds = time.perf_counter() - started
        return result
    result.status = "pass" if diff.ok else "fail"
    result.max_abs, result.max_rel, result.cosine, result.ratio = diff.max_abs, diff.max_rel, diff.cosine, diff.ratio
    result.mismatched, result.numel, result.detail = diff.mismatched, diff.numel, diff.note
    if not diff.ok and not diff.note:
        result.detail = f"{diff.mismatched}/{diff.numel} elements beyond atol + rtol*|golden|"
    result.seconds = time.perf_counter() - started
    return result


def run_ops(
    device: Optional[str] = None,
    dtypes: tuple[str, ...] | list[str] = DTYPES,
    only: Optional[list[str]] = None,
    seed: int = 0,
    progress: Optional[Callable[[int, int], None]] = None,
) -> OpSuiteReport:
    """Run the suite on ``device`` (``npu``/``cuda``/``cpu``/None for auto; an absent accelerator falls back to
    the CPU and the report says so) for each dtype. ``only`` keeps the named ops or groups (an op name wins over
    a group of the same name).

    Raises:
        ValueError: an unknown dtype, op or device name.
    """
    import torch

    from ascend_compat.verify.devices import resolve

    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        raise ValueError(f"unknown dtype {', '.join(bad)}; choose from {', '.join(DTYPES)}")
    suite = build_suite()
    if only:
        known = {c.name for c in suite} | {c.group for c in suite}
        unknown = [n for n in only if n not in known]
        if unknown:
            raise ValueError(f"unknown op {', '.join(unknown)}; known: {', '.join(c.name for c in suite)}")
        # An op's own name wins over a group of the same name ("matmul" is both).
        names = {c.name for c in suite}
        groups = {n for n in only if n not in names}
        suite = [c for c in suite if c.name in only or c.group in groups]
    where = resolve(device)
    report = OpSuiteReport(where.device, where.requested, list(dtypes), fallback=where.fallback,
                           simulated=where.simulated and where.device_type == "npu",
                           torch_version=torch.__version__, seed=seed)  # fmt: skip
    total, done = len(suite) * len(dtypes), 0
    for dtype in dtypes:
        for case in suite:
            report.results.append(run_case(case, where.device, dtype, seed))
            done += 1
            if progress:
                progress(done, total)
    return report


def render(report: OpSuiteReport, color: bool = False) -> str:
    """The pass/fail table as text."""
    def status(s: str) -> str:
        return paint(f"{s.upper():<7}", s, color)

    head = f"verify ops on {report.device}"
    if report.simulated:
        head += " (simulated NPU: CPU kernels, so this checks placement and the suite, not NPU numerics)"
    lines = [head]
    if report.fallback:
        lines.append(f"note: requested {report.requested_device}: {report.fallback}")
    lines.append(f"{'op':<22} {'dtype':<9} {'status':<7} {'max_abs':>9} {'max_rel':>9} {'tol used':>8}  "
                 f"{'rtol/atol':<15} detail")  # fmt: skip
    for r in report.results:
        if r.status in ("pass", "fail"):
            nums = f"{r.max_abs:>9.2e} {r.max_rel:>9.2e} {_pct(r.ratio):>8}"
        else:
            nums = f"{'-':>9} {'-':>9} {'-':>8}"
        lines.append(f"{r.op:<22} {r.dtype:<9} {status(r.status)} {nums}  {f'{r.rtol:g}/{r.atol:g}':<15} {r.detail}")
    c = report.counts()
    lines.append(f"{c['pass']} passed, {c['fail']} failed, {c['error']} errors, {c['skipped']} skipped")
    lines.append("tol used: the worst element's |actual - golden| / (atol + rtol*|golden|); over 100% fails")
    return "\n".join(lines)


def _pct(ratio: float) -> str:
    if not math.isfinite(ratio) or ratio >= 1e6:
        return "inf"
    return f"{ratio * 100:.0f}%"
