"""The CPU-fallback monitor, on the simulated NPU (ops marked unsupported in its configuration)."""

from __future__ import annotations

import logging
import warnings

import pytest

from tests._forkserver import cli
from tests.conftest import ROOT, _clean_env

# The simulator's own fallback warnings are expected here; the monitor sees them whatever the filters say.
pytestmark = pytest.mark.filterwarnings("ignore:CAUTION. The operator")


@pytest.fixture
def unsupported(sim):
    """Mark ops unsupported in the in-process simulator for one test (and let each warn once again)."""
    from ascend_compat import simulate

    def configure(*ops: str) -> None:
        simulate.configure(unsupported_ops=ops)
        simulate.reset_fallback_counts()

    yield configure
    simulate.configure(unsupported_ops=())
    simulate.reset_fallback_counts()


def test_parse_message_reads_torch_npu_and_simulator_wording():
    from ascend_compat.doctor.fallback import parse_message

    real = ("[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::linalg_lstsq.out' is not currently "
            "supported on the NPU backend and will fall back to run on the CPU. This may have performance "
            "implications. (function npu_cpu_fallback)")
    assert parse_message(real) == "aten::linalg_lstsq.out"
    custom = ("CAUTION: The operator 'vllm::lora_expand' is not currently supported on the NPU backend and will "
              "fall back to run on the CPU.")
    assert parse_message(custom) == "vllm::lora_expand"
    assert parse_message("The operator 'aten::add' is not currently supported on the XPU backend") is None
    assert parse_message("all good") is None


def test_simulated_unsupported_op_is_counted_and_timed(unsupported, sim):
    torch = sim
    from ascend_compat.doctor.fallback import fallback_monitor

    unsupported("aten::nonzero")
    x = torch.tensor([0.0, 1.0, 2.0, 0.0], device="npu")
    torch.nonzero(x)  # before the monitor: not counted
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with fallback_monitor() as monitor:
            for _ in range(3):
                torch.nonzero(x)
            (x + 1).sum()  # supported ops never show up
    summary = monitor.summary()
    assert summary.counts() == {"aten::nonzero": 3}
    (entry,) = summary.ops
    assert entry.exact and "simulator" in entry.sources
    assert summary.timing and entry.timed_calls == 3 and entry.seconds > 0
    text = summary.format()
    assert "aten::nonzero" in text and "not measured" not in text
    torch.nonzero(x)  # after the block: the monitor is off
    assert monitor.counts() == {"aten::nonzero": 3}


def test_the_same_op_on_cpu_tensors_is_not_a_fallback(unsupported, sim):
    torch = sim
    from ascend_compat.doctor.fallback import fallback_monitor

    unsupported("aten::nonzero")
    host = torch.tensor([0.0, 1.0, 2.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with fallback_monitor(timing=True) as monitor:
            for _ in range(5):
                torch.nonzero(host)  # pre-processing on the CPU: no NPU kernel was missing
            torch.nonzero(host.to("npu"))
    (entry,) = monitor.summary().ops
    assert entry.count == 1 and entry.timed_calls == 1


def test_a_dispatch_mode_left_entered_by_user_code_is_not_popped_instead_of_ours(unsupported, sim):
    from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

    from ascend_compat.doctor.fallback import FallbackMonitor

    class Leaked(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    unsupported("aten::nonzero")
    monitor = FallbackMonitor(timing=True).start()
    leaked = Leaked()
    leaked.__enter__()
    try:
        with pytest.warns(UserWarning, match="incomplete clean-up"):
            monitor.stop()
        assert _get_current_dispatch_mode() is leaked  # the user's mode is still theirs
    finally:
        leaked.__exit__(None, None, None)
        ours = _get_current_dispatch_mode()
        if ours is not None:  # what the warning said stays on: leave it now so later tests start clean
            ours.__exit__(None, None, None)


def test_backward_ops_and_ops_marked_during_the_run_are_counted(unsupported, sim):
    torch = sim
    from ascend_compat.doctor.fallback import fallback_monitor

    unsupported()
    x = torch.ones(4, device="npu", requires_grad=True)
    with fallback_monitor(timing=True) as monitor:
        unsupported("aten::mul.Tensor")
        (x * 3).sum().backward()  # forward mul and its backward (grad * 3): two calls
    assert monitor.counts() == {"aten::mul.Tensor": 2}
    torch.testing.assert_close(x.grad.cpu(), torch.full((4,), 3.0))


def test_messages_from_warnings_and_logging_without_the_simulator_are_lower_bounds():
    from ascend_compat.doctor.fallback import FallbackMonitor

    text = ("CAUTION: The operator 'aten::_unique2' is not currently supported on the NPU backend and will fall "
            "back to run on the CPU. This may have performance implications.")
    before = (warnings.showwarning, list(logging.getLogger().handlers), logging.Logger.__dict__["handle"])
    monitor = FallbackMonitor(timing=False).start()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn(text, UserWarning, stacklevel=1)
    logging.getLogger("torch_npu.some.module").warning("%s", text.replace("_unique2", "cholesky_inverse"))
    summary = monitor.stop()
    assert (warnings.showwarning, logging.getLogger().handlers, logging.Logger.__dict__["handle"]) == before
    got = {o.op: o for o in summary.ops}
    assert set(got) == {"aten::_unique2", "aten::cholesky_inverse"}
    assert got["aten::_unique2"].sources == ("warning",) and got["aten::cholesky_inverse"].sources == ("log",)
    assert not any(o.exact for o in summary.ops)
    assert ">=1" in summary.format() and "not measured" in summary.format()
    assert summary.to_dict()["timing"] == "not measured"


@pytest.mark.slow
def test_run_report_prints_the_fallback_summary(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("import torch\nx = torch.tensor([0., 1., 2.]).cuda()\nfor _ in range(5):\n"
                      "    torch.nonzero(x)\nprint('done')\n")
    env = {**_clean_env(), "ASCEND_COMPAT_SIM_UNSUPPORTED_OPS": "aten::nonzero"}
    proc = cli("run", "--simulate", "npu", "--report", str(script), cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    report = proc.stderr[proc.stderr.index("ascend-compat CPU fallbacks"):]
    line = next(ln for ln in report.splitlines() if "aten::nonzero" in ln)
    assert line.split()[0] == "5" and " ms " in line
