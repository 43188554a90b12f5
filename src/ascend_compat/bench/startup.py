"""The first activation in a fresh process: what ``import ascend_compat; ascend_compat.activate()`` costs a script.

Each sample is a new interpreter that imports torch (and installs the simulated NPU when asked) *before* the clock
starts, since a user pays those anyway, then times ``import ascend_compat`` plus the first ``activate()``. One
untimed child runs first (it writes the bytecode cache, the backend entry-point cache of
:mod:`ascend_compat.backends._entry_point_cache` and the marshal copy of ``cuda_api.json``, and warms the file
cache), and the children run with bytecode
caching on, as installed packages do, whatever ``PYTHONDONTWRITEBYTECODE`` says here.

``settle_gc`` (default): the child runs ``gc.collect()`` after importing torch, before the clock starts. Importing
torch leaves the collector's young generations nearly full, so the first ~2,000 allocations after it (whoever
makes them: the shim or the user's script) pay a 1.5-7 ms generation-1 collection of torch's own objects; that is
part of ``import torch``, not of the shim. ``settle_gc=False`` measures with that debt included.

Each child also reports its CPU time for the interval, the modules it imported and their bytecode size;
``split=True`` adds children that import those modules first and time ``activate()`` alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Optional

from ascend_compat import settings
from ascend_compat.bench._common import BenchError
from ascend_compat.bench._timing import summary

_CHILD = """
import json, os, sys, time
import torch
{install}
{preload}
{settle}
before = set(sys.modules)
c0 = time.thread_time()
t0 = time.perf_counter()
import ascend_compat
target = ascend_compat.activate({backend!r})
ms = (time.perf_counter() - t0) * 1e3
cpu = (time.thread_time() - c0) * 1e3
loaded = sorted(m for m in set(sys.modules) - before if m.startswith("ascend_compat"))
def _pyc(name):
    path = getattr(sys.modules[name], "__cached__", None) or ""
    return os.path.getsize(path) if path and os.path.exists(path) else 0
print(json.dumps({{"ms": ms, "cpu_ms": cpu, "target": target, "modules": loaded,
                  "bytecode": sum(_pyc(m) for m in loaded)}}))
"""

#: Environment switches that would change what the child measures.
_DROP = ("PYTHONDONTWRITEBYTECODE", settings.AUTO_ACTIVATE.name, settings.NO_PATCH.name, settings.SIMULATE.name)


def child_code(
    simulate: Optional[str] = None,
    backend: Optional[str] = None,
    settle_gc: bool = True,
    preload: tuple[str, ...] = (),
) -> str:
    """The program each child runs (prints one JSON line: ``ms``, ``cpu_ms``, ``target``, ``modules`` and the
    ``bytecode`` bytes of those modules). ``preload``: modules imported before the clock starts (the work alone)."""
    install = "from ascend_compat import simulate; simulate.install()" if simulate == "npu" else ""
    settle = "import gc; gc.collect()" if settle_gc else ""
    pre = f"import importlib\nfor _m in {preload!r}:\n    importlib.import_module(_m)" if preload else ""
    return _CHILD.format(install=install, settle=settle, backend=backend, preload=pre)


def _one(code: str, env: dict[str, str], timeout: float) -> dict[str, Any]:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise BenchError(f"the fresh-process activation did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchError(f"the fresh-process activation failed: {tail}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def first_activation(
    repeats: int = 7,
    *,
    simulate: Optional[str] = None,
    backend: Optional[str] = None,
    settle_gc: bool = True,
    split: bool = False,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """Median (and spread) over ``repeats`` fresh interpreters of the time to import ascend_compat and activate.

    Returns ``{"ms": summary, "samples_ms": [...], "cpu_ms": summary, "target": str|None, "modules": [...],
    "module_count": int, "bytecode_kib": float}``: ``cpu_ms`` is the same interval in the child's CPU time (less
    sensitive to a busy machine than the wall clock), ``modules`` the ascend_compat modules that the first
    activation imported (in the last child) and ``bytecode_kib`` the size of their cached bytecode. ``split``: as
    many children again, interleaved, that import those modules before the clock starts, so ``work_ms`` is the
    activation's own work and ``import_ms`` (``ms`` less ``work_ms``, medians) the cost of loading its modules.
    """
    if repeats < 1:
        raise BenchError("repeats must be at least 1")
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    code = child_code(simulate, backend, settle_gc)
    warm = _one(code, env, timeout)  # warm-up: bytecode cache, file cache
    work_code = child_code(simulate, backend, settle_gc, tuple(warm["modules"])) if split else ""
    samples: list[float] = []
    cpu: list[float] = []
    work: list[float] = []
    last: dict[str, Any] = {}
    for _ in range(repeats):
        last = _one(code, env, timeout)
        samples.append(float(last["ms"]))
        cpu.append(float(last["cpu_ms"]))
        if split:
            work.append(float(_one(work_code, env, timeout)["ms"]))
    out = {
        "ms": summary(samples),
        "samples_ms": samples,
        "cpu_ms": summary(cpu),
        "target": last.get("target"),
        "modules": last["modules"],
        "module_count": len(last["modules"]),
        "bytecode_kib": round(last["bytecode"] / 1024, 1),
        "settle_gc": settle_gc,
    }
    if split:
        out["work_ms"] = summary(work)
        out["import_ms"] = max(0.0, out["ms"]["median"] - out["work_ms"]["median"])
    return out
