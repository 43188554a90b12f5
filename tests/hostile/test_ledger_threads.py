"""Issue 17.2: other threads see the old behaviour or the new one while a thread cycles activate/deactivate, never
a half-applied shim; a reference kept across deactivate() still works."""

from __future__ import annotations

import json

import pytest

from tests._forkserver import run_code

RACE = r"""
import collections, json, threading, torch
from ascend_compat import cuda_shim
x = torch.ones(2)

def native_outcome(fn):
    try:
        return ("value", fn())
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))

old_cuda = native_outcome(lambda: x.cuda())        # on a CPU-only torch: torch's own AssertionError
old_available = native_outcome(torch.cuda.is_available)
errors, calls, stop = collections.Counter(), collections.Counter(), threading.Event()

def user():
    while not stop.is_set():
        got = native_outcome(lambda: x.cuda())
        ok = got == old_cuda or (got[0] == "value" and got[1].device.type == TARGET)
        avail = native_outcome(torch.cuda.is_available)
        ok_avail = avail == old_available or avail == ("value", True)
        calls["calls"] += 2
        if not ok:
            errors[repr(got)[:120]] += 1
        if not ok_avail:
            errors[repr(avail)[:120]] += 1

users = [threading.Thread(target=user) for _ in range(3)]
for t in users:
    t.start()
for _ in range(CYCLES):
    cuda_shim.activate()
    cuda_shim.deactivate()
stop.set()
for t in users:
    t.join()
after = native_outcome(lambda: x.cuda())  # torch itself is not latched into another state
cuda_shim.activate()
kept = torch.Tensor.cuda, torch.device, torch.zeros, torch.nn.Module.cuda
cuda_shim.deactivate()
kept_ok = [native_outcome(lambda: kept[0](x)) == old_cuda, kept[1]("cuda").type == "cuda",
           kept[2](2).device.type == "cpu", native_outcome(lambda: kept[3](torch.nn.Linear(1, 1))) == old_cuda]
print(json.dumps({"calls": calls["calls"], "errors": dict(errors), "after": after == old_cuda, "kept": kept_ok}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_threads_never_see_a_half_applied_shim(target):
    env = {"ASCEND_COMPAT_SIMULATE": "npu"} if target == "npu" else {}
    setup = f"TARGET, CYCLES = {target!r}, 200\n"
    if target == "npu":
        setup += "from ascend_compat import simulate\nsimulate.install()\n"
    proc = run_code(setup + RACE, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["calls"] > 1000, got
    assert got["errors"] == {}, got
    assert got["after"] and got["kept"] == [True, True, True, True], got
