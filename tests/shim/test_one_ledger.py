"""Issue 20.1: one ledger for every global change, one wrapper per patched attribute.

The shim, the dtype policy's checks and the CPU-fallback monitor, on in any combination and ended in any order:
each patched attribute carries exactly one of the package's wrappers, and when all have ended every original is
back by identity. On the simulated NPU, in process.
"""

from __future__ import annotations

import logging
import types
import warnings
from typing import ClassVar

import numpy as np
import pytest

from tests.conftest import run_python

# The simulator's fallback warnings and the policy's own are expected here.
pytestmark = [pytest.mark.filterwarnings("ignore:CAUTION. The operator"),
              pytest.mark.filterwarnings("ignore::ascend_compat.cuda_shim.dtype_policy.DtypePolicyWarning")]


def _snapshot(torch):
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    from ascend_compat.cuda_shim import patches

    return {
        "Tensor": dict(vars(torch.Tensor)),
        # Submodules torch imports lazily (torch._dynamo, torch.onnx) are not changes of ours.
        "torch": {k: v for k, v in vars(torch).items() if not isinstance(v, types.ModuleType)},
        "Module": dict(vars(torch.nn.Module)),
        "warnings": warnings.showwarning,
        "Logger.handle": logging.Logger.__dict__["handle"],
        "patches": {n: getattr(patches, n, None) for n in ("DTYPE_HOOK", "UNPIN")},
        "mode": _get_current_dispatch_mode(),
    }


def _changed(before, after):
    out = []
    for space, value in before.items():
        if isinstance(value, dict):
            other = after[space]
            out += [f"{space}.{k}" for k in set(value) | set(other) if value.get(k, "-") is not other.get(k, "-")]
        elif value is not after[space]:
            out.append(space)
    return sorted(out)


def _layers(fn):
    """How many of the package's wrappers stand between ``fn`` and torch's own function."""
    n = 0
    while hasattr(fn, "__wrapped__"):
        fn, n = fn.__wrapped__, n + 1
    return n


def _one_wrapper_each(torch):
    """Every place the package has patched, with the number of records holding it and the wrappers in a row."""
    from ascend_compat import cuda_shim

    claimed = [r for r in cuda_shim.package_ledger().claimed() if r.kind == "attr"]
    replacements = {id(r.replacement) for r in claimed}
    stacked = [r.describe() for r in claimed if id(getattr(r.replacement, "__wrapped__", None)) in replacements]
    places = [(id(r.owner), r.name) for r in claimed]
    doubled = sorted({f"{o}.{n}" for o, n in places if places.count((o, n)) > 1})
    return stacked, doubled


@pytest.fixture
def clean(sim):
    """Everything off after the test, and the interpreter as it was before it (by identity)."""
    from ascend_compat import cuda_shim
    from ascend_compat.cuda_shim import dtype_policy
    from ascend_compat.doctor.fallback import FallbackMonitor

    torch = sim
    # torch's lazy imports (a first op under a dispatch mode imports torch._dynamo, which replaces
    # torch.manual_seed) happen once, before the snapshot.
    with FallbackMonitor(timing=True):
        torch.ones(1).to("npu")
    before = _snapshot(torch)
    yield before
    while cuda_shim._DEPTH:
        cuda_shim.deactivate()
    dtype_policy.set_default_policy("keep")
    assert _changed(before, _snapshot(torch)) == []


def test_tensor_to_under_the_shim_with_a_policy_and_the_monitor_is_the_shims_one_wrapper(clean, sim):
    torch = sim
    from ascend_compat import cuda_shim
    from ascend_compat.cuda_shim import patches
    from ascend_compat.doctor.fallback import FallbackMonitor

    native_to, native_zeros = torch.Tensor.to, torch.zeros
    cuda_shim.activate()
    shims = {n: getattr(torch.Tensor, n) for n in ("to", "cuda")} | {"zeros": torch.zeros}
    cuda_shim.activate(dtype_policy="substitute")
    monitor = FallbackMonitor(timing=True).start()
    try:
        assert {n: getattr(torch.Tensor, n) for n in ("to", "cuda")} | {"zeros": torch.zeros} == shims
        assert torch.Tensor.to is shims["to"] and torch.Tensor.to.__wrapped__ is native_to
        assert torch.zeros is shims["zeros"] and torch.zeros.__wrapped__ is native_zeros
        assert patches.DTYPE_HOOK is not None  # the policy is a hook the shim's wrappers call
        assert _layers(torch.Tensor.to) == _layers(torch.zeros) == _layers(torch.Tensor.double) == 1
        assert _one_wrapper_each(torch) == ([], [])
        x = torch.from_numpy(np.arange(3.0))
        assert x.to("cuda").dtype == torch.float32 and x.cuda().device.type == "npu"
        assert torch.zeros(2, dtype=torch.float64, device="cuda").dtype == torch.float32
    finally:
        monitor.stop()
        cuda_shim.deactivate()
        cuda_shim.deactivate()
    assert torch.Tensor.to is native_to and torch.zeros is native_zeros


# Each scenario opens and closes the shim (S), a `with dtype_policy("substitute")` block (B) and the fallback
# monitor (M) in one order: "+X" opens X, "-X" closes it.
ORDERS = [
    "+B +S -B -S", "+B +S -S -B", "+S +B -B -S", "+S +B -S -B",
    "+M +S -M -S", "+M +S -S -M", "+S +M -S -M",
    "+B +M +S -B -M -S", "+S +M +B -S -M -B", "+M +B +S -M -S -B",
]


@pytest.mark.parametrize("order", ORDERS)
def test_scopes_end_in_any_order_with_one_wrapper_each_and_an_exact_restore(clean, sim, order):
    torch = sim
    from ascend_compat import cuda_shim, simulate
    from ascend_compat.cuda_shim.dtype_policy import dtype_policy
    from ascend_compat.doctor.fallback import FallbackMonitor

    simulate.configure(unsupported_ops=("aten::nonzero",))
    simulate.reset_fallback_counts()
    block, monitor, seen = dtype_policy("substitute"), FallbackMonitor(timing=True), 0
    x = torch.from_numpy(np.arange(3.0))
    try:
        for step in order.split():
            what, on = step[1], step[0] == "+"
            if what == "S":
                cuda_shim.activate() if on else cuda_shim.deactivate()
            elif what == "B":
                block.__enter__() if on else block.__exit__(None, None, None)
            else:
                monitor.start() if on else monitor.stop()
            assert _layers(torch.Tensor.to) <= 1 and _layers(torch.zeros) <= 1, step
            assert _one_wrapper_each(torch) == ([], []), step
            if "+B" in order.split(step)[0] + step and "-B" not in order.split(step)[0] + step:
                assert x.to("npu").dtype == torch.float32, step  # the block's checks, with or without the shim
            if monitor.active:
                torch.nonzero(torch.ones(2, device="npu"))
                seen += 1
                assert monitor.counts() == {"aten::nonzero": seen}, step
    finally:
        simulate.configure(unsupported_ops=())
        simulate.reset_fallback_counts()


def _fault_at(at=None):
    """A test-only package ledger raising KeyboardInterrupt at its ``at``-th step of applying a change (``None``:
    it only counts them, in ``steps``); its child scopes share the count."""
    from ascend_compat.cuda_shim.ledger import Ledger

    class FaultLedger(Ledger):
        steps: ClassVar[list[int]] = [0]

        def _step(self, stage, label):
            if stage == "undo":
                return
            n, self.steps[0] = self.steps[0], self.steps[0] + 1
            if n == at:
                raise KeyboardInterrupt(f"injected at step {n} ({stage} {label})")

    return FaultLedger()


@pytest.mark.parametrize("what", ["monitor", "policy block"])
def test_a_fault_at_every_step_of_the_monitor_and_the_policy_leaves_nothing(clean, sim, what):
    # Their changes go through the package ledger (child scopes of it): a fault injected there at any step of
    # starting them leaves the interpreter as it was.
    torch = sim
    from ascend_compat import cuda_shim
    from ascend_compat.cuda_shim.dtype_policy import dtype_policy, is_installed
    from ascend_compat.doctor.fallback import FallbackMonitor

    def start():
        if what == "monitor":
            FallbackMonitor(timing=True).start().stop()
        else:
            with dtype_policy("substitute"):
                assert is_installed()

    package = cuda_shim._LEDGER
    try:
        cuda_shim._LEDGER = probe = _fault_at()
        start()
        total = probe.steps[0]
        assert total >= (6 if what == "monitor" else 100), total
        broken = []
        for k in range(total):
            cuda_shim._LEDGER = _fault_at(k)
            try:
                start()
            except KeyboardInterrupt:
                pass
            left = _changed(clean, _snapshot(torch))
            if left or is_installed():
                broken.append((k, left[:4]))
        assert broken == []
    finally:
        cuda_shim._LEDGER = package
    start()  # and after all those faults, it starts and ends cleanly again
    assert _changed(clean, _snapshot(torch)) == [] and not is_installed()


def test_run_target_restores_the_environment_and_the_spawn_hook_through_the_ledger(tmp_path):
    """`run_target` sets the children's environment and spawn hook in a scope of the package ledger; afterwards
    os.environ and multiprocessing.spawn.get_command_line are exactly as before, also when the script raises."""
    script = tmp_path / "s.py"
    script.write_text("import os, multiprocessing.spawn as sp\n"
                      "from ascend_compat import cuda_shim\n"
                      "labels = [r.label for r in cuda_shim.package_ledger().claimed()]\n"
                      "print('IN', os.environ.get('ASCEND_COMPAT_AUTO_ACTIVATE'), sp.get_command_line.__name__,\n"
                      "      'run: ASCEND_COMPAT_AUTO_ACTIVATE for spawned children' in labels)\n"
                      "raise SystemExit(3)\n", "utf-8")
    code = f"""
import os, sys, multiprocessing.spawn as spawn
import torch
from ascend_compat import runner, cuda_shim
before_env, before_fn = dict(os.environ), spawn.get_command_line
try:
    rc = runner.run_target({str(script)!r}, None, [])
except SystemExit as exc:
    rc = exc.code
cuda_shim.deactivate()
print("RC", rc, dict(os.environ) == before_env, spawn.get_command_line is before_fn,
      len(cuda_shim.package_ledger().claimed()))
"""
    res = run_python(code)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "IN 1 get_command_line True" in res.stdout, res.stdout
    assert "RC 3 True True 0" in res.stdout, res.stdout
