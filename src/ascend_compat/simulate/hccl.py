"""A simulated ``hccl`` process-group backend for npu tensors, built on gloo through host memory.

Registered under the name ``hccl`` for the ``npu`` device, so ``init_process_group("hccl")``, DDP and the
collectives work across ``torchrun`` workers. Each collective runs gloo on zero-copy CPU views of the npu
tensors (the simulated device's memory is host memory), then completes a future holding the npu tensors, so
callers such as DDP's reducer get their npu tensors back. Collectives are synchronous.

torch 2.13's ``distributed_c10d`` calls the tensor collectives by their new ProcessGroup names
(``all_gather_single``, ``reduce_scatter_single``, ``all_to_all_single`` and the ``*_coalesced`` forms used by
``_coalescing_manager``); the inherited C++ methods would look for a backend registered for ``npu`` and fail, so
this class defines them too (DeepSpeed's ZeRO all-gathers its partitions with ``all_gather_into_tensor``).
"""

from __future__ import annotations

import atexit
import time
from datetime import timedelta
from typing import Any, Callable

import torch
import torch.distributed as dist

from ascend_compat.simulate import _state

_C10D = torch._C._distributed_c10d


def _cpu(t: torch.Tensor) -> torch.Tensor:
    if t.device.type != "npu":
        raise RuntimeError(f"hccl (simulated) only accepts npu tensors, got a tensor on {t.device}")
    return _state.ext().cpu_alias(t)


def _cpu_list(ts: list[torch.Tensor]) -> list[torch.Tensor]:
    return [_cpu(t) for t in ts]


def _until_released(args: Any, limit_s: float = 10.0) -> None:
    """Return once gloo's worker thread has dropped its references to the CPU aliases in ``args``.

    The worker releases a finished work just after completing it. Were Python's wrappers of the aliases gone by
    then, the worker would free them and need the GIL, which a finalizing interpreter ends the thread for
    ("terminate called without an active exception" after a script's last collective). Waiting until only
    Python holds them makes Python's own thread free them; a worker that never lets go is not waited for long.
    """
    aliases = [t for t in _flatten(args) if isinstance(t, torch.Tensor)]
    deadline = time.monotonic() + limit_s
    while any(t._use_count() > 1 for t in aliases) and time.monotonic() < deadline:
        time.sleep(0)  # lets the worker run (it needs no GIL to drop a reference Python still shares)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [item for v in value for item in _flatten(v)]
    return [value]


def _done(result: Any) -> Any:
    fut: torch.futures.Future[Any] = torch.futures.Future()
    fut.set_result(result)
    return _C10D._create_work_from_future(fut)


class ProcessGroupHCCLSim(dist.ProcessGroup):
    """The simulated HCCL backend (one instance per process group)."""

    def __init__(self, store: Any, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("ascend_compat_hccl_sim/", store), rank, size, timeout)

    def _run(self, op: Callable[..., Any], result: Any, *args: Any) -> Any:
        op(*args).wait()
        _until_released(args)
        return _done(result)

    def getBackendName(self) -> str:  # noqa: N802 - c10d's name
        return "hccl"

    def name(self) -> str:
        return "hccl"

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        opts = opts or _C10D.AllreduceOptions()
        return self._run(self._gloo.allreduce, tensors, _cpu_list(tensors), opts)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        opts = opts or _C10D.AllreduceCoalescedOptions()
        return self._run(self._gloo.allreduce_coalesced, tensors, _cpu_list(tensors), opts)

    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        opts = opts or _C10D.BroadcastOptions()
        return self._run(self._gloo.broadcast, tensors, _cpu_list(tensors), opts)

    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        opts = opts or _C10D.ReduceOptions()
        return self._run(self._gloo.reduce, tensors, _cpu_list(tensors), opts)

    def allgather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None) -> Any:
        opts = opts or _C10D.AllgatherOptions()
        outs = [_cpu_list(lst) for lst in output_lists]
        return self._run(self._gloo.allgather, output_lists, outs, _cpu_list(inputs), opts)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> Any:
        opts = opts or _C10D.AllgatherOptions()
        return self._run(self._gloo._allgather_base, [output], _cpu(output), _cpu(input), opts)

    def reduce_scatter(
        self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts: Any = None
    ) -> Any:
        opts = opts or _C10D.ReduceScatterOptions()
        ins = [_cpu_list(lst) for lst in input_lists]
        return self._run(self._gloo.reduce_scatter, outputs, _cpu_list(outputs), ins, opts)

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> Any:
        opts = opts or _C10D.ReduceScatterOptions()
        return self._run(self._gloo._reduce_scatter_base, [output], _cpu(output), _cpu(input), opts)

    # torch 2.13 names (see the module docstring); gloo underneath still has the older ones.
    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> Any:
        return self._allgather_base(output, input, opts)

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> Any:
        return self._reduce_scatter_base(output, input, opts)

    def all_gather_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> Any:
        for output, input in zip(outputs, inputs):
            self._allgather_base(output, input, opts)
        return _done(outputs)

    def reduce_scatter_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> Any:
        for output, input in zip(outputs, inputs):
            self._reduce_scatter_base(output, input, opts)
        return _done(outputs)

    def _start_coalescing(self, device: torch.device) -> None:
        """Nothing to open: collectives run one by one, synchronously (``_coalescing_manager`` calls this)."""

    def _end_coalescing(self, device: torch.device) -> Any:
        return _done([])

    def gather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None) -> Any:
        opts = opts or _C10D.GatherOptions()
        outs = [_cpu_list(lst) for lst in output_lists]
        return self._run(self._gloo.gather, output_lists, outs, _cpu_list(inputs), opts)

    def scatter(self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts: Any = None) -> Any:
        opts = opts or _C10D.ScatterOptions()
        ins = [_cpu_list(lst) for lst in input_lists]
        return self._run(self._gloo.scatter, outputs, _cpu_list(outputs), ins, opts)

    def alltoall_base(
        self,
        output: torch.Tensor,
        input: torch.Tensor,
        output_split_sizes: list[int],
        input_split_sizes: list[int],
        opts: Any = None,
    ) -> Any:
        opts = opts or _C10D.AllToAllOptions()
        return self._run(
            self._gloo.alltoall_base, [output], _cpu(output), _cpu(input), output_split_sizes, input_split_sizes, opts
        )

    all_to_all_single = alltoall_base  # the name torch 2.13's all_to_all_single calls

    def barrier(self, opts: Any = None) -> Any:
        opts = opts or _C10D.BarrierOptions()
        return self._run(self._gloo.barrier, [], opts)

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> Any:
        return self._run(self._gloo.send, tensors, _cpu_list(tensors), dst, tag)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> Any:
        return self._run(self._gloo.recv, tensors, _cpu_list(tensors), src, tag)


def _create(opts: Any, backend_options: Any = None) -> ProcessGroupHCCLSim:
    # The extended creator API hands over the group id, which DeviceMesh and friends read back as group_name.
    pg = ProcessGroupHCCLSim(opts.store, opts.group_rank, opts.group_size, opts.timeout)
    # c10d reads a group's name from its registered backends; a Python group has none, so register the inner
    # gloo backend (for host tensors only: npu tensors keep going through this class's methods).
    pg._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, pg._gloo)
    pg._set_group_name(opts.group_id)
    return pg


def _destroy_at_exit() -> None:
    # Scripts often end without destroy_process_group(). Left to interpreter teardown, the inner gloo group's
    # threads can still be joinable when its destructor runs, and the process aborts ("terminate called without
    # an active exception") after the script has finished. atexit runs while they can still be joined.
    if dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # at exit, a failed clean-up must not mask the script's own outcome
            pass


def register() -> None:
    """Register ``hccl`` with torch.distributed (once per process; a real torch_npu would do the same)."""
    if "hccl" in dist.Backend.backend_list or hasattr(dist.Backend, "HCCL"):
        return
    dist.Backend.register_backend("hccl", _create, extended_api=True, devices=["npu"])
    atexit.register(_destroy_at_exit)
