"""Where the simulated device's backward work runs: on the thread that called ``backward()``, as CPU work does.

Left to itself, autograd hands the work of every non-CPU device to a worker thread of its own. On a real
accelerator that thread only launches kernels; on the simulator it runs the host kernels, which costs the same
work plus two hand-overs and a second OpenMP team (whose idle threads spin against the first on a small machine:
backward passes 50-130x slower, at random). And the worker, not the caller, then drops the last reference to the
backward's graph task, whose thread-local state holds Python objects: after a script's last backward that
release can reach an interpreter that is already finalizing, and the process aborts ("terminate called without
an active exception"). Running the device's work on the caller fixes both: the caller's OpenMP team runs every
kernel, and the graph task is released where it was created.

The engine's per-call switch for this is ``multithreading_enabled`` (thread-local); ``HostEngine`` turns it off
for the duration of each backward pass, whichever thread calls it. autograd's npu worker threads still exist for
C++ callers of the engine; ``start()`` makes sure they have started and gone idle before ``install()`` returns.
"""

from __future__ import annotations

from typing import Any


def install(torch: Any, ext: Any) -> None:
    """Start autograd's npu workers now and route Python-initiated backward passes to the calling thread."""
    # A backward pass before install() sized autograd's device threads without the npu: the workers are then
    # missing, which only C++ callers of the engine would notice; Python's passes run on the caller regardless.
    ext.start_autograd_workers()
    from torch.autograd.variable import Variable

    engine = _host_engine_class(torch)
    if not isinstance(Variable._execution_engine, engine):
        Variable._execution_engine = engine()


_HOST_ENGINE: Any = None


def _host_engine_class(torch: Any) -> Any:
    global _HOST_ENGINE
    if _HOST_ENGINE is None:
        is_enabled = torch._C._is_multithreading_enabled
        set_enabled = torch._C._set_multithreading_enabled

        class HostEngine(torch._C._ImperativeEngine):  # type: ignore[misc, name-defined]
            """autograd's engine, running every device's backward work on the calling thread."""

            def run_backward(self, *args: Any, **kwargs: Any) -> Any:
                if not is_enabled():
                    return super().run_backward(*args, **kwargs)
                set_enabled(False)
                try:
                    return super().run_backward(*args, **kwargs)
                finally:
                    set_enabled(True)

        _HOST_ENGINE = HostEngine
    return _HOST_ENGINE
