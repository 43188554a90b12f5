"""Issue 17.1: activation and restore are atomic with respect to exceptions (KeyboardInterrupt included).

A test-only ledger raises at every step of every patch point (before the record, between the record and the
change, after the change) and at every step of the restore; after each, the interpreter is identity-exact and
activate() works again.
"""

from __future__ import annotations

import types

import pytest

from tests._forkserver import run_code
from tests.conftest import run_python
from tests.hostile.shim_state import FAULT_LEDGER, SNAPSHOT

EVERY_STEP = """
import json
from ascend_compat.cuda_shim import devices
cuda_shim.activate(); cuda_shim.deactivate()  # warm-up: torch's lazy imports happen once
before = snapshot()
probe = FaultLedger()
cuda_shim._LEDGER = probe
assert cuda_shim.activate() == TARGET
total = probe.steps
cuda_shim.deactivate()
assert not diff(before, snapshot())
broken = []
for k in range(total):
    cuda_shim._LEDGER = FaultLedger(k, EXC)
    try:
        cuda_shim.activate()
    except EXC:
        pass
    else:
        broken.append((k, "no fault raised"))
        cuda_shim.deactivate()
    leftovers = diff(before, snapshot())
    if leftovers or cuda_shim.is_activated() or devices.TARGET.real_device is not None:
        broken.append((k, leftovers[:5]))
        continue
    cuda_shim._LEDGER = FaultLedger()
    ok = cuda_shim.activate() == TARGET and torch.zeros(1, device="cuda").device.type == TARGET
    cuda_shim.deactivate()
    if not ok or diff(before, snapshot()):
        broken.append((k, "activate() after the fault"))
print(json.dumps({"steps": total, "broken": broken[:10], "n_broken": len(broken)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_a_fault_at_every_step_of_every_patch_point_leaves_nothing(target):
    code = SNAPSHOT + FAULT_LEDGER + f"TARGET, EXC = {target!r}, KeyboardInterrupt\n" + EVERY_STEP
    proc = run_code(code, env={"ASCEND_COMPAT_SIMULATE": "npu"} if target == "npu" else {}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # three steps for each of the ~140 records (most torch.cuda names are one lazy record)
    assert got["steps"] > 300, got
    assert got["n_broken"] == 0, got


def test_a_runtime_error_in_a_patch_point_is_rolled_back_too():
    code = SNAPSHOT + FAULT_LEDGER + "TARGET, EXC = 'cpu', RuntimeError\n" + EVERY_STEP.replace(
        "for k in range(total):", "for k in range(0, total, 37):"
    )
    proc = run_code(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '"n_broken": 0' in proc.stdout, proc.stdout


def test_an_interrupted_restore_keeps_what_it_did_not_restore_and_a_second_deactivate_finishes():
    proc = run_code(
        SNAPSHOT
        + FAULT_LEDGER
        + """
cuda_shim.activate(); cuda_shim.deactivate()
before = snapshot()
cuda_shim._LEDGER = probe = FaultLedger(stages=("undo",))
cuda_shim.activate(); cuda_shim.deactivate()
total, broken = probe.steps, []
for k in range(0, total, 7):
    cuda_shim._LEDGER = FaultLedger(k, KeyboardInterrupt, stages=("undo",))
    cuda_shim.activate()
    try:
        cuda_shim.deactivate()
    except KeyboardInterrupt:
        pass
    else:
        broken.append((k, "no fault"))
    left = len(cuda_shim._LEDGER)
    if left != total - k:  # the record being restored, and every older one, are kept
        broken.append((k, "kept", left))
    cuda_shim.deactivate()  # retries what was kept
    if diff(before, snapshot()):
        broken.append((k, diff(before, snapshot())[:5]))
print("undo steps", total, "broken", broken[:5])
"""
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "broken []" in proc.stdout, proc.stdout
    assert int(proc.stdout.split("undo steps ")[1].split()[0]) > 100


def test_a_failed_restore_keeps_its_record_and_can_be_retried():
    from ascend_compat.cuda_shim.ledger import Ledger, RestoreError

    class Stubborn:
        refuse = False

        def __setattr__(self, name, value):
            if type(self).refuse:
                raise OSError("read-only now")
            object.__setattr__(self, name, value)

    obj, mod = Stubborn(), types.SimpleNamespace(a=1)
    obj.x = "original"
    ledger = Ledger()
    ledger.setattr(mod, "a", 2)
    ledger.setattr(obj, "x", "patched")
    Stubborn.refuse = True
    with pytest.raises(RestoreError, match="read-only now"):
        ledger.restore()
    assert mod.a == 1 and obj.x == "patched" and len(ledger) == 1  # the others were restored; this one is kept
    Stubborn.refuse = False
    ledger.restore()
    assert obj.x == "original" and len(ledger) == 0
    ledger.setattr(obj, "x", "again")  # no stale claim
    ledger.restore()


@pytest.mark.parametrize("stage", ["record", "change", "done"])
def test_each_step_of_one_change_is_atomic(stage):
    namespace: dict = {}
    exec(FAULT_LEDGER, namespace)
    mod = types.SimpleNamespace(a=1)
    ledger = namespace["FaultLedger"](0, KeyboardInterrupt, stages=(stage,))
    with pytest.raises(KeyboardInterrupt), ledger.transaction():
        ledger.setattr(mod, "a", 2)
    assert mod.a == 1 and len(ledger) == 0
    ledger.fail_at = None
    ledger.setattr(mod, "a", 3)  # the claim went with the record
    ledger.restore()
    assert mod.a == 1 and vars(mod) == {"a": 1}


@pytest.mark.slow
def test_deactivate_leaves_atexit_and_sys_meta_path_as_they_were():
    # A real interpreter: ascend_compat is imported before torch, with auto-activation read at start-up.
    proc = run_python(
        """
import atexit, sys
live = []  # what is registered with atexit now (its own count never goes down on unregister)
_register, _unregister = atexit.register, atexit.unregister
atexit.register = lambda fn, *a, **k: live.append(fn) or _register(fn, *a, **k)
atexit.unregister = lambda fn: [live.remove(f) for f in list(live) if f == fn] and None or _unregister(fn)
finders = list(sys.meta_path)
import ascend_compat  # ASCEND_COMPAT_AUTO_ACTIVATE: a finder waits for torch
waiting = len(sys.meta_path) - len(finders)
import torch, torch.distributed as dist
from ascend_compat import cuda_shim
assert cuda_shim.is_activated()
exits = list(live)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
registered = len(live) - len(exits)
dist.destroy_process_group()
cuda_shim.deactivate()
same = len(sys.meta_path) == len(finders) and all(a is b for a, b in zip(sys.meta_path, finders))
print("waiting", waiting, "registered", registered, "atexit back", live == exits, "meta_path", same)
""",
        env={"ASCEND_COMPAT_AUTO_ACTIVATE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["waiting", "1", "registered", "1", "atexit", "back", "True", "meta_path", "True"]
