"""The first activation in a fresh process: what ``import ascend_compat; ascend_compat.activate()`` costs a script.

Each sample is a new interpreter that imports torch (and installs the simulated NPU when asked) *before* the clock
starts, since a user pays those anyway, then times ``import ascend_compat`` plus the first ``activate()``. One
untimed child runs first (it writes the bytecode cache, the backend entry-point cache of
:mod:`ascend_compat.backends._entry_point_cache` and warms the file cache), and the children run with bytecode
caching on, as installed packages do, whatever ``PYTHONDONTWRITEBYTECODE`` says here.

``settle_gc`` (default): the child runs ``gc.collect()`` after importing torch, before the clock starts. Importing
torch leaves the collector's young generations nearly full, so the first ~2,000 allocations after it (whoever
makes them: the shim or the user's script) pay a 1.5-7 ms generation-1 collection of torch's own objects; that is
part of ``import torch``, not of the shim. ``settle_gc=False`` measures with that debt included.
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
import json, sys, time
import torch
{install}
{settle}
before = set(sys.modules)
t0 = time.perf_counter()
import ascend_compat
target = ascend_compat.activate({backend!r})
ms = (time.perf_counter() - t0) * 1e3
loaded = sorted(m for m in set(sys.modules) - before if m.startswith("ascend_compat"))
print(json.dumps({{"ms": ms, "target": target, "modules": loaded}}))
"""

#: Environment switches that would change what the child measures.
_DROP = ("PYTHONDONTWRITEBYTECODE", settings.AUTO_ACTIVATE.name, settings.NO_PATCH.name, settings.SIMULATE.name)


def child_code(simulate: Optional[str] = None, backend: Optional[str] = None, settle_gc: bool = True) -> str:
    """The program each child runs (prints one JSON line: ``ms``, ``target``, ``modules``)."""
    install = "from ascend_compat import simulate; simulate.install()" if simulate == "npu" else ""
    settle = "import gc; gc.collect()" if settle_gc else ""
    return _CHILD.format(install=install, settle=settle, backend=backend)


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
    timeout: float = 300.0,
) -> dict[str, Any]:
    """Median (and spread) over ``repeats`` fresh interpreters of the time to import ascend_compat and activate.

    Returns ``{"ms": summary, "samples_ms": [...], "target": str|None, "modules": [...]}``; ``modules`` are the
    ascend_compat modules that the first activation imported (in the last child).
    """
    if repeats < 1:
        raise BenchError("repeats must be at least 1")
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    code = child_code(simulate, backend, settle_gc)
    _one(code, env, timeout)  # warm-up: bytecode cache, file cache
    samples: list[float] = []
    last: dict[str, Any] = {}
    for _ in range(repeats):
        last = _one(code, env, timeout)
        samples.append(float(last["ms"]))
    return {
        "ms": summary(samples),
        "samples_ms": samples,
        "target": last.get("target"),
        "modules": last["modules"],
        "settle_gc": settle_gc,
    }
