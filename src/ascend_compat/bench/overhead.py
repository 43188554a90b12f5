"""The shim's true cost: each CUDA spelling users write, shim on, against the native spelling on the target.

Both sides run the same timeit-compiled statement loop (no lambda in between), auto-ranged to ``min_time`` per
sample; the native side runs with the shim off (``torch.device`` and friends are then torch's own), the shim side
with it on. The sides are interleaved: every repetition takes one sample of each, native first on even
repetitions and shim first on odd ones, so drift on a busy machine hits both and the ratio comes from one run.
The native spelling does the same work: ``x.cuda()`` (which the shim turns into ``x.to(<target device>)``) is
compared with ``x.to(d)``, ``d`` the target's ``torch.device`` (not ``x.npu()``, nor ``x.cpu()``, which returns
``x`` itself on CPU fallback). "passthrough" rows are calls that never mention CUDA but still go through the shim's
wrappers while it is active (what model code pays).

The report also carries the first activation in a fresh process (:mod:`ascend_compat.bench.startup`).
"""

from __future__ import annotations

import time
import timeit
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ascend_compat.bench._common import (
    SCHEMA_VERSION,
    BenchError,
    Progress,
    activate_or_fail,
    backend_name,
    prepare,
    require_inactive_shim,
)
from ascend_compat.bench._timing import autorange, summary


@dataclass(frozen=True)
class Case:
    """One timed call: the CUDA spelling (shim on) and the native spelling on the target (``{t}``: its type)."""

    shim: str
    native: str
    kind: str = "redirect"  # "redirect": a CUDA call the shim translates; "passthrough": no CUDA, shim in the way
    check: Optional[str] = None  # statements setting _ok; default: the statement's result is placed on the target


# {t}: the target's device type; d: its torch.device (what x.cuda() / m.cuda() move to under the shim).
CASES: tuple[Case, ...] = (
    Case('torch.device("cuda")', 'torch.device("{t}")'),
    Case("x.cuda()", "x.to(d)"),
    Case('torch.zeros(16, device="cuda")', 'torch.zeros(16, device="{t}")'),
    Case('torch.randn(16, device="cuda")', 'torch.randn(16, device="{t}")'),
    Case('torch.tensor([1.0, 2.0], device="cuda")', 'torch.tensor([1.0, 2.0], device="{t}")'),
    Case('x.to("cuda")', 'x.to("{t}")'),
    Case("torch.cuda.is_available()", "torch.{t}.is_available()"),
    Case("torch.cuda.synchronize()", "torch.{t}.synchronize()"),
    Case("torch.cuda.current_device()", "torch.{t}.current_device()"),
    Case('with torch.autocast("cuda"): pass', 'with torch.autocast("{t}"): pass'),
    Case("with torch.cuda.amp.autocast(): pass", "with torch.{t}.amp.autocast(): pass"),
    Case("m.cuda()", "m.to(d)"),
    Case('torch.device("{t}")', 'torch.device("{t}")', kind="passthrough"),
    Case("torch.zeros(16)", "torch.zeros(16)", kind="passthrough", check="_ok = True"),
    Case("torch.zeros(16, device=x.device)", "torch.zeros(16, device=x.device)", kind="passthrough"),
    Case("x.to(x.device)", "x.to(x.device)", kind="passthrough"),
)


def _placed(result: Any, t: str) -> bool:
    """Did the call land on the target? Tensors, devices and modules say where they are; other results pass."""
    import torch

    if isinstance(result, torch.Tensor):
        return result.device.type == t
    if isinstance(result, torch.device):
        return result.type == t
    if isinstance(result, torch.nn.Module):
        return all(p.device.type == t for p in result.parameters())
    return True


def _check_code(case_stmt: str, check: Optional[str]) -> str:
    if check is not None:
        return check
    if case_stmt.startswith("with "):
        # Autocast blocks: inside, autocast must be on for the target.
        return case_stmt.replace(": pass", ":\n    _ok = torch.is_autocast_enabled(t)")
    return f"_ok = _placed({case_stmt}, t)"


def _verify(code: str, ns: dict[str, Any]) -> Optional[str]:
    """Run the check once; an error message, or None when the call works and lands on the target."""
    local = dict(ns)
    try:
        exec(compile(code, "<bench-check>", "exec"), local)
    except Exception as exc:  # a case that fails is reported on its row; the other cases still run
        return f"{type(exc).__name__}: {exc}"
    if not local.get("_ok"):
        return f"the call did not land on {ns['t']!r}"
    return None


class _Sampler:
    """Calibrated timeit loops per (row, side), and their samples (ns per call)."""

    def __init__(self, rows: list[dict[str, Any]], ns: dict[str, Any], min_time: float) -> None:
        self.rows, self.ns, self.min_time = rows, ns, min_time
        self.timers: dict[tuple[int, str], timeit.Timer] = {}
        self.numbers: dict[tuple[int, str], int] = {}
        self.samples: dict[tuple[int, str], list[float]] = {}

    def calibrate(self, i: int, side: str) -> None:
        row = self.rows[i]
        if row["error"] is not None:
            return
        err = _verify(row[f"_{side}_check"], self.ns)
        if err is not None:
            row["error"] = f"{side}: {err}"
            return
        timer = timeit.Timer(row["call" if side == "shim" else "native"], globals=self.ns)
        try:
            self.numbers[(i, side)] = autorange(timer, self.min_time)
        except Exception as exc:
            row["error"] = f"{side}: {type(exc).__name__}: {exc}"
            return
        self.timers[(i, side)] = timer
        self.samples[(i, side)] = []

    def measure(self, i: int, side: str) -> None:
        row = self.rows[i]
        if row["error"] is None and (i, side) in self.timers:
            number = self.numbers[(i, side)]
            try:
                self.samples[(i, side)].append(self.timers[(i, side)].timeit(number) / number * 1e9)
            except Exception as exc:  # worked when checked, failed later: that row only
                row["error"] = f"{side}: {type(exc).__name__}: {exc}"


def _rows(cases: tuple[Case, ...], target: str) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        shim_stmt, native_stmt = case.shim.format(t=target), case.native.format(t=target)
        rows.append(
            {
                "call": shim_stmt,
                "native": native_stmt,
                "kind": case.kind,
                "error": None,
                "_shim_check": _check_code(shim_stmt, case.check),
                "_native_check": _check_code(native_stmt, case.check),
            }
        )
    return rows


def _finish_rows(rows: list[dict[str, Any]], sampler: _Sampler) -> None:
    for i, row in enumerate(rows):
        del row["_shim_check"], row["_native_check"]
        if row["error"] is not None:
            continue
        shim, native = sampler.samples[(i, "shim")], sampler.samples[(i, "native")]
        s, n = summary(shim), summary(native)
        row.update(
            {
                "number": {"shim": sampler.numbers[(i, "shim")], "native": sampler.numbers[(i, "native")]},
                "shim_ns": s,
                "native_ns": n,
                "ratio": s["median"] / n["median"] if n["median"] > 0 else None,
                "added_ns": s["median"] - n["median"],
                "samples_ns": {"shim": shim, "native": native},
            }
        )


def _interleaved(
    sampler: _Sampler, repeats: int, backend: Optional[str], tick: Callable[[], None]
) -> tuple[list[float], list[float]]:
    """Calibrate both sides, then per repetition one sample of each side (order alternating); the shim is off after.

    Returns the in-process activate() and deactivate() times (ms) of the repetitions."""
    from ascend_compat import cuda_shim

    activate_ms: list[float] = []
    deactivate_ms: list[float] = []

    def shim_on() -> None:
        t0 = time.perf_counter()
        cuda_shim.activate(backend)
        activate_ms.append((time.perf_counter() - t0) * 1e3)

    def shim_off() -> None:
        t0 = time.perf_counter()
        cuda_shim.deactivate()
        deactivate_ms.append((time.perf_counter() - t0) * 1e3)

    n = len(sampler.rows)
    try:
        with warnings.catch_warnings():
            # torch.cuda.amp.autocast() warns on every call (deprecated): the warning is not what is measured.
            warnings.simplefilter("ignore")
            for i in range(n):
                sampler.calibrate(i, "native")
                tick()
            cuda_shim.activate(backend)
            for i in range(n):
                sampler.calibrate(i, "shim")
                tick()
            cuda_shim.deactivate()
            for rep in range(repeats):
                if rep % 2 == 0:
                    _side(sampler, "native")
                shim_on()
                _side(sampler, "shim")
                shim_off()
                if rep % 2 == 1:
                    _side(sampler, "native")
                tick()
    finally:
        while cuda_shim.is_activated():  # whatever happened above, leave the process as it was
            cuda_shim.deactivate()
    return activate_ms, deactivate_ms


def _side(sampler: _Sampler, side: str) -> None:
    for i in range(len(sampler.rows)):
        sampler.measure(i, side)


def run(
    *,
    repeats: int = 7,
    min_time: float = 0.05,
    simulate: Optional[str] = None,
    backend: Optional[str] = None,
    cases: Optional[tuple[Case, ...]] = None,
    startup_repeats: Optional[int] = None,
    progress: Progress = None,
) -> dict[str, Any]:
    """Time every case shim-on and native, interleaved; return the report (``kind: "overhead"``).

    ``startup_repeats`` fresh interpreters (default: ``repeats``; 0: none) time the first activation in a new
    process (``first_activation``). The shim is off afterwards.
    """
    if repeats < 1:
        raise BenchError("--repeats must be at least 1")
    if min_time <= 0:
        raise BenchError("--min-time must be positive")
    startup_repeats = repeats if startup_repeats is None else startup_repeats
    if startup_repeats < 0:
        raise BenchError("--startup-repeats must be 0 or more")
    torch = prepare(simulate)
    require_inactive_shim()
    from ascend_compat import cuda_shim
    from ascend_compat import simulate as sim
    from ascend_compat.bench import fingerprint, startup

    target = activate_or_fail(backend)
    chosen = backend_name()
    cuda_shim.deactivate()

    ns: dict[str, Any] = {"torch": torch, "t": target, "_placed": _placed, "d": torch.device(target)}
    ns["x"] = torch.ones(16, device=target)
    ns["m"] = torch.nn.Linear(8, 8).to(target)
    rows = _rows(CASES if cases is None else cases, target)
    total = 2 * len(rows) + repeats + (1 if startup_repeats else 0)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    sampler = _Sampler(rows, ns, min_time)
    activate_ms, deactivate_ms = _interleaved(sampler, repeats, backend, tick)
    _finish_rows(rows, sampler)
    first = None
    if startup_repeats:
        fresh_sim = "npu" if sim.is_installed() and target == "npu" else None
        first = startup.first_activation(startup_repeats, simulate=fresh_sim, backend=backend)
        tick()
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "overhead",
        "fingerprint": fingerprint.collect(chosen, target),
        "settings": {
            "repeats": repeats,
            "min_time_s": min_time,
            "simulate": simulate,
            "backend": chosen,
            "target": target,
            "unit": "ns per call",
            "interleaved": True,
            "startup_repeats": startup_repeats,
        },
        "rows": rows,
        "activation_ms": {"activate": summary(activate_ms), "deactivate": summary(deactivate_ms)},
        "first_activation": first,
        "failed": sum(1 for r in rows if r["error"] is not None),
    }
