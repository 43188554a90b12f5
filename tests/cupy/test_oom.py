"""The device running out of memory inside elementwise ops and array creation raises CuPy's ``OutOfMemoryError``
(a subclass of the backend's ``torch.OutOfMemoryError``), on the simulated NPU with a memory limit."""

from __future__ import annotations

from tests.conftest import run_python

_CODE = """
    import torch
    from ascend_compat import simulate
    simulate.install_from_env(default=True)
    import ascend_compat.cupy as cp
    n = 6 << 20  # 24 MiB of float32: two fit under the 64 MiB limit, a third does not
    a = cp.ones(n, dtype=cp.float32)
    b = cp.ones(n, dtype=cp.float32)
    calls = {
        "zeros": lambda: cp.zeros(100 << 20, dtype=cp.float32),
        "empty_like": lambda: cp.empty_like(a, dtype=cp.float64),
        "arange": lambda: cp.arange(50 << 20),
        "linspace": lambda: cp.linspace(0, 1, 50 << 20),
        "add": lambda: cp.add(a, b),
        "operator": lambda: a * 2.0,
        "cos": lambda: cp.cos(a),
        "dtype=": lambda: cp.add(a, b, dtype=cp.float64),
        "astype": lambda: a.astype(cp.int64),
        "astype F": lambda: a.reshape(-1, 2).astype(cp.float16, order="F").astype(cp.float64),
        "copy": lambda: a.copy(),
        "copy F": lambda: a.reshape(-1, 2).copy(order="F"),
        "copy K": lambda: a.reshape(-1, 4)[:, :3].copy(order="K"),  # 18 MiB
    }
    for name, call in calls.items():
        try:
            call()
            print(name, "no error")
        except cp.cuda.memory.OutOfMemoryError as exc:
            print(name, "cupy-oom", isinstance(exc, torch.OutOfMemoryError), "out of memory" in str(exc))
    print("after", cp.asnumpy(a[:2] + b[:2]).tolist())
"""


def test_device_oom_in_creation_and_ufuncs_is_cupys_type():
    proc = run_python(_CODE, env={"ASCEND_COMPAT_SIM_MEMORY_LIMIT": "64MiB"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    for name in ("zeros", "empty_like", "arange", "linspace", "add", "operator", "cos", "dtype=", "astype",
                 "astype F", "copy", "copy F", "copy K"):
        assert f"{name} cupy-oom True True" in lines, proc.stdout
    assert lines[-1] == "after [2.0, 2.0]"  # small work still runs once the failed allocations are gone
