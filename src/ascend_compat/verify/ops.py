"""The op-level parity suite: each op on the target device against a float64 CPU golden of the same inputs.

Inputs are drawn in float32 from a seeded CPU generator, rounded to the tested dtype, and the golden is computed
from those rounded values in float64, so a result measures the op's own error, not the input rounding. Inputs
are scaled so that outputs are O(1) (one ``atol`` per dtype then makes sense).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

from ascend_compat._style import paint
from ascend_compat.verify.tolerances import DTYPES, Diff, compare_tensors, op_tolerance

SCHEMA_VERSION = 1
STATUSES = ("pass", "fail", "error", "skipped")

Inputs = dict[str, Any]


@dataclass(frozen=True)
class OpCase:
    """One op of the suite.

    ``make`` draws float32/int64 CPU inputs from a generator; ``run`` computes on whatever device and dtype the
    inputs are in; ``golden`` (default: ``run``) computes the reference from float64 CPU inputs; ``devices``
    limits the case to those device types (torch_npu's fused ops); ``check`` returns a reason to skip, or None.
    """

    name: str
    group: str
    make: Callable[[Any], Inputs]
    run: Callable[[Inputs], Any]
    golden: Optional[Callable[[Inputs], Any]] = None
    devices: tuple[str, ...] = ()
    check: Optional[Callable[[], Optional[str]]] = None


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

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


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

    def to_dict(self) -> dict[str, Any]:
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


# --- the cases -------------------------------------------------------------------------------------------------


def _randn(gen: Any, *shape: int, scale: float = 1.0) -> Any:
    import torch

    return torch.randn(*shape, generator=gen) * scale


def _fused(name: str) -> Callable[[], Optional[str]]:
    def check() -> Optional[str]:
        try:
            import torch_npu  # type: ignore[import-not-found]
        except ImportError:
            return "torch_npu is not importable"
        return None if hasattr(torch_npu, name) else f"torch_npu has no {name}"

    return check


def _has_rms_norm() -> Optional[str]:
    from torch.nn import functional

    return None if hasattr(functional, "rms_norm") else "torch.nn.functional.rms_norm needs torch >= 2.4"


def _rms_ref(i: Inputs) -> Any:
    x, w = i["x"], i["w"]
    return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * w


def _attention_ref(q: Any, k: Any, v: Any, causal: bool) -> Any:
    import torch

    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s, t = scores.shape[-2], scores.shape[-1]
        mask = torch.ones(s, t, dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


def _sdpa(i: Inputs) -> Any:
    from torch.nn import functional

    return functional.scaled_dot_product_attention(i["q"], i["k"], i["v"], is_causal=True)


def _npu_fa(i: Inputs) -> Any:
    import torch
    import torch_npu  # type: ignore[import-not-found]

    q, k, v = i["q"], i["k"], i["v"]
    s = q.shape[2]
    # sparse_mode 0 with an explicit (S, S) mask, True = masked: the causal form every torch_npu line accepts.
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    return torch_npu.npu_fusion_attention(
        q, k, v, q.shape[1], "BNSD", atten_mask=mask, scale=1.0 / math.sqrt(q.shape[-1]), sparse_mode=0
    )[0]


def _opt_inputs(gen: Any) -> Inputs:
    import torch

    # Gradients bounded away from zero: Adam's eps (1e-8) is 0 in float16, and a gradient that squares to zero
    # would make both sides divide 0 by 0 (a real fp16 hazard, but not what this case measures). Parameters
    # away from zero too: a step that cancels a parameter to ~0 leaves the rounding of its O(1) intermediates
    # in the small-value regime, which would measure the dtype, not the optimizer kernel.
    g, p = _randn(gen, 32, 32), _randn(gen, 32, 32)
    return {"p": torch.sign(p) * (0.5 + p.abs()), "g": torch.sign(g) * (0.1 + g.abs())}


def _optimizer_step(kind: str) -> Callable[[Inputs], Any]:
    def run(i: Inputs) -> Any:
        import torch

        p = torch.nn.Parameter(i["p"].clone())
        opt = (
            torch.optim.AdamW([p], lr=1e-2, weight_decay=1e-2, foreach=False)
            if kind == "adamw"
            else torch.optim.SGD([p], lr=1e-2, momentum=0.9, weight_decay=1e-2, foreach=False)
        )
        # Two steps: the second one reads the state (moments, momentum) that the first one wrote. Each step
        # rounds the parameter twice in low precision, which is why more steps would outgrow the dtype's rtol.
        for step in range(2):
            p.grad = i["g"] * (1.0 + 0.5 * step)
            opt.step()
        return p.detach()

    return run


def build_suite() -> list[OpCase]:
    """Every case of the suite, in report order."""
    import torch
    from torch.nn import functional as F  # noqa: N812  (torch's own convention)

    def idx(gen: Any, high: int, *shape: int) -> Any:
        return torch.randint(0, high, shape, generator=gen)

    def scatter_inputs(g: Any) -> Inputs:
        return {"base": _randn(g, 16, 32), "src": _randn(g, 64, 32), "index": idx(g, 16, 64, 32)}

    return [
        OpCase("matmul", "matmul", lambda g: {"a": _randn(g, 64, 96, scale=96**-0.5), "b": _randn(g, 96, 48)},
               lambda i: i["a"] @ i["b"]),
        OpCase("bmm", "matmul", lambda g: {"a": _randn(g, 4, 32, 64, scale=0.125), "b": _randn(g, 4, 64, 32)},
               lambda i: torch.bmm(i["a"], i["b"])),
        OpCase("linear", "matmul",
               lambda g: {"x": _randn(g, 16, 128), "w": _randn(g, 64, 128, scale=128**-0.5), "b": _randn(g, 64)},
               lambda i: F.linear(i["x"], i["w"], i["b"])),
        OpCase("conv1d", "conv",
               lambda g: {"x": _randn(g, 2, 8, 64), "w": _randn(g, 16, 8, 3, scale=24**-0.5), "b": _randn(g, 16)},
               lambda i: F.conv1d(i["x"], i["w"], i["b"], padding=1)),
        OpCase("conv2d", "conv",
               lambda g: {"x": _randn(g, 2, 4, 16, 16), "w": _randn(g, 8, 4, 3, 3, scale=36**-0.5),
                          "b": _randn(g, 8)},
               lambda i: F.conv2d(i["x"], i["w"], i["b"], padding=1)),
        OpCase("softmax", "softmax", lambda g: {"x": _randn(g, 32, 256, scale=2.0)},
               lambda i: F.softmax(i["x"], dim=-1) * i["x"].shape[-1]),  # x N: O(1) values
        OpCase("log_softmax", "softmax", lambda g: {"x": _randn(g, 32, 256, scale=2.0)},
               lambda i: F.log_softmax(i["x"], dim=-1)),
        OpCase("layer_norm", "norm", lambda g: {"x": _randn(g, 32, 256, scale=3.0) + 1.0, "w": _randn(g, 256),
                                                "b": _randn(g, 256)},
               lambda i: F.layer_norm(i["x"], (i["x"].shape[-1],), i["w"], i["b"], 1e-5)),
        OpCase("rms_norm", "norm", lambda g: {"x": _randn(g, 32, 256, scale=3.0), "w": _randn(g, 256)},
               lambda i: F.rms_norm(i["x"], (i["x"].shape[-1],), i["w"], 1e-6), golden=_rms_ref,
               check=_has_rms_norm),
        OpCase("npu_rms_norm", "norm", lambda g: {"x": _randn(g, 32, 256, scale=3.0), "w": _randn(g, 256)},
               lambda i: __import__("torch_npu").npu_rms_norm(i["x"], i["w"], 1e-6)[0], golden=_rms_ref,
               devices=("npu",), check=_fused("npu_rms_norm")),
        OpCase("gelu", "activation", lambda g: {"x": _randn(g, 64, 128, scale=3.0)}, lambda i: F.gelu(i["x"])),
        OpCase("gelu_tanh", "activation", lambda g: {"x": _randn(g, 64, 128, scale=3.0)},
               lambda i: F.gelu(i["x"], approximate="tanh")),
        OpCase("silu", "activation", lambda g: {"x": _randn(g, 64, 128, scale=3.0)}, lambda i: F.silu(i["x"])),
        OpCase("sum", "reduction", lambda g: {"x": _randn(g, 16, 1024)},
               lambda i: i["x"].sum(-1) / 32.0),  # / sqrt(N): O(1)
        OpCase("mean", "reduction", lambda g: {"x": _randn(g, 16, 1024) + 0.5}, lambda i: i["x"].mean(-1)),
        OpCase("var", "reduction", lambda g: {"x": _randn(g, 16, 1024) + 4.0}, lambda i: i["x"].var(-1)),
        OpCase("max", "reduction", lambda g: {"x": _randn(g, 16, 1024)}, lambda i: i["x"].amax(-1)),
        OpCase("cumsum", "reduction", lambda g: {"x": _randn(g, 8, 256, scale=1 / 16)},
               lambda i: i["x"].cumsum(-1)),
        OpCase("index_select", "indexing", lambda g: {"x": _randn(g, 64, 32), "index": idx(g, 64, 48)},
               lambda i: i["x"].index_select(0, i["index"])),
        OpCase("gather", "indexing", lambda g: {"x": _randn(g, 32, 64), "index": idx(g, 64, 32, 16)},
               lambda i: i["x"].gather(1, i["index"])),
        OpCase("scatter_add", "indexing", scatter_inputs,
               lambda i: i["base"].scatter_add(0, i["index"], i["src"]) / 2.0),
        OpCase("embedding", "indexing", lambda g: {"w": _randn(g, 100, 32), "ids": idx(g, 100, 4, 16)},
               lambda i: F.embedding(i["ids"], i["w"])),
        OpCase("sdpa", "attention",
               lambda g: {"q": _randn(g, 2, 4, 32, 16), "k": _randn(g, 2, 4, 32, 16), "v": _randn(g, 2, 4, 32, 16)},
               _sdpa, golden=lambda i: _attention_ref(i["q"], i["k"], i["v"], True)),
        OpCase("npu_fusion_attention", "attention",
               lambda g: {"q": _randn(g, 2, 4, 32, 16), "k": _randn(g, 2, 4, 32, 16), "v": _randn(g, 2, 4, 32, 16)},
               _npu_fa, golden=lambda i: _attention_ref(i["q"], i["k"], i["v"], True), devices=("npu",),
               check=_fused("npu_fusion_attention")),
        OpCase("adamw_step", "optimizer", _opt_inputs, _optimizer_step("adamw")),
        OpCase("sgd_step", "optimizer", _opt_inputs, _optimizer_step("sgd")),
    ]  # fmt: skip


# --- running ---------------------------------------------------------------------------------------------------


def _place(inputs: Inputs, device: str, dtype: Any) -> Inputs:
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
