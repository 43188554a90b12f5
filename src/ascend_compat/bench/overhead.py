"""The shim's true cost: each CUDA spelling users write, shim on, against the native spelling on the target.

Both sides run the same timeit-compiled statement loop (no lambda in between), auto-ranged to ``min_time`` per
sample; the native side runs with the shim off (``torch.device`` and friends are then torch's own), the shim side
with it on. Repeats alternate native and shim so that drift on a busy machine hits both. "passthrough" rows are
calls that never mention CUDA but still go through the shim's wrappers while it is active (what model code pays).
"""

from __future__ import annotations

import time
import timeit
import warnings
from dataclasses import dataclass
from typing import Any, Optional

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


# {tensor_method}/{module_method}: x.npu() / m.npu() where torch has them for the target, else .to("<target>").
CASES: tuple[Case, ...] = (
    Case('torch.device("cuda")', 'torch.device("{t}")'),
    Case("x.cuda()", "{tensor_method}"),
    Case('torch.zeros(16, device="cuda")', 'torch.zeros(16, device="{t}")'),
    Case('torch.randn(16, device="cuda")', 'torch.randn(16, device="{t}")'),
    Case('torch.tensor([1.0, 2.0], device="cuda")', 'torch.tensor([1.0, 2.0], device="{t}")'),
    Case('x.to("cuda")', 'x.to("{t}")'),
    Case("torch.cuda.is_available()", "torch.{t}.is_available()"),
    Case("torch.cuda.synchronize()", "torch.{t}.synchronize()"),
    Case("torch.cuda.current_device()", "torch.{t}.current_device()"),
    Case('with torch.autocast("cuda"): pass', 'with torch.autocast("{t}"): pass'),
    Case("with torch.cuda.amp.autocast(): pass", "with torch.{t}.amp.autocast(): pass"),
    Case("m.cuda()", "{module_method}"),
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


def _native_spellings(torch: Any, t: str) -> dict[str, str]:
    tensor_method = f"x.{t}()" if callable(getattr(torch.Tensor, t, None)) else f'x.to("{t}")'
    module_method = f"m.{t}()" if callable(getattr(torch.nn.Module, t, None)) else f'm.to("{t}")'
    return {"t": t, "tensor_method": tensor_method, "module_method": module_method}


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


def run(
    *,
    repeats: int = 7,
    min_time: float = 0.05,
    simulate: Optional[str] = None,
    backend: Optional[str] = None,
    cases: Optional[tuple[Case, ...]] = None,
    progress: Progress = None,
) -> dict[str, Any]:
    """Time every case shim-on and native; return the report (``kind: "overhead"``). The shim is off afterwards."""
    if repeats < 1:
        raise BenchError("--repeats must be at least 1")
    if min_time <= 0:
        raise BenchError("--min-time must be positive")
    torch = prepare(simulate)
    require_inactive_shim()
    from ascend_compat import cuda_shim
    from ascend_compat.bench import fingerprint

    cases = CASES if cases is None else cases
    target = activate_or_fail(backend)
    chosen = backend_name()
    cuda_shim.deactivate()

    spell = _native_spellings(torch, target)
    ns: dict[str, Any] = {"torch": torch, "t": target, "_placed": _placed}
    ns["x"] = torch.ones(16, device=target)
    ns["m"] = torch.nn.Linear(8, 8).to(target)

    rows: list[dict[str, Any]] = []
    for case in cases:
        shim_stmt = case.shim.format(**spell)
        native_stmt = case.native.format(**spell)
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

    total = 2 * len(rows) + repeats
    done = 0
    activate_ms: list[float] = []
    deactivate_ms: list[float] = []
    timers: dict[tuple[int, str], timeit.Timer] = {}
    numbers: dict[tuple[int, str], int] = {}
    samples: dict[tuple[int, str], list[float]] = {}

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    def calibrate(side: str) -> None:
        for i, row in enumerate(rows):
            if row["error"] is None:
                err = _verify(row[f"_{side}_check"], ns)
                if err is not None:
                    row["error"] = f"{side}: {err}"
                else:
                    timer = timeit.Timer(row["call" if side == "shim" else "native"], globals=ns)
                    try:
                        numbers[(i, side)] = autorange(timer, min_time)
                        timers[(i, side)] = timer
                        samples[(i, side)] = []
                    except Exception as exc:
                        row["error"] = f"{side}: {type(exc).__name__}: {exc}"
            tick()

    def measure(side: str) -> None:
        for i, row in enumerate(rows):
            if row["error"] is None and (i, side) in timers:
                number = numbers[(i, side)]
                try:
                    samples[(i, side)].append(timers[(i, side)].timeit(number) / number * 1e9)
                except Exception as exc:  # worked when checked, failed later: that row only
                    row["error"] = f"{side}: {type(exc).__name__}: {exc}"

    try:
        with warnings.catch_warnings():
            # torch.cuda.amp.autocast() warns on every call (deprecated): the warning is not what is measured.
            warnings.simplefilter("ignore")
            calibrate("native")
            cuda_shim.activate(backend)
            try:
                calibrate("shim")
            finally:
                cuda_shim.deactivate()
            for _ in range(repeats):
                measure("native")
                t0 = time.perf_counter()
                cuda_shim.activate(backend)
                activate_ms.append((time.perf_counter() - t0) * 1e3)
                try:
                    measure("shim")
                finally:
                    t0 = time.perf_counter()
                    cuda_shim.deactivate()
                    deactivate_ms.append((time.perf_counter() - t0) * 1e3)
                tick()
    finally:
        while cuda_shim.is_activated():  # whatever happened above, leave the process as it was
            cuda_shim.deactivate()

    for i, row in enumerate(rows):
        del row["_shim_check"], row["_native_check"]
        if row["error"] is not None:
            continue
        shim, native = samples[(i, "shim")], samples[(i, "native")]
        s, n = summary(shim), summary(native)
        row.update(
            {
                "number": {"shim": numbers[(i, "shim")], "native": numbers[(i, "native")]},
                "shim_ns": s,
                "native_ns": n,
                "ratio": s["median"] / n["median"] if n["median"] > 0 else None,
                "added_ns": s["median"] - n["median"],
                "samples_ns": {"shim": shim, "native": native},
            }
        )
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
        },
        "rows": rows,
        "activation_ms": {"activate": summary(activate_ms), "deactivate": summary(deactivate_ms)},
        "failed": sum(1 for r in rows if r["error"] is not None),
    }
