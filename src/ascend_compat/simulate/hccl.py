"""A simulated ``hccl`` process-group backend for npu tensors, built on gloo through host memory.

Registered under the name ``hccl`` for the ``npu`` device, so ``init_process_group("hccl")``, DDP and the
collectives work across ``torchrun`` workers. Each collective runs gloo on zero-copy CPU views of the npu
tensors (the simulated device's memory is host memory), then completes a future holding the npu tensors, so
callers such as DDP's reducer get their npu tensors back. Collectives are synchronous.

torch 2.13's ``distributed_c10d`` calls the tensor collectives by their new ProcessGroup names
(``all_gather_single``, ``reduce_scatter_single``, ``all_to_all_single`` and the ``*_coalesced`` forms used by
``_coalescing_manager``); the inherited C++ methods would look for a backend registered for ``npu`` and fail, so
this class defines them too (DeepSpeed's ZeRO all-gathers its partitions with ``all_gather_into_tensor``).

A ``"gloo"`` group (and ``"cpu:gloo,npu:hccl"``) on the simulator is this class too, taking CPU tensors as well:
as PyTorch gives an accelerator its own collective, npu tensors in a gloo group go through the simulated hccl.
"""

from __future__ import annotations

import atexit
import contextvars
import functools
import time
from datetime import timedelta
from typing import Any, Callable

import torch
import torch.distributed as dist

from ascend_compat.simulate import _state

# Any: the bindings used here (_create_work_from_future, the *Options classes) are only partly in torch's stubs.
_C10D: Any = torch._C._distributed_c10d


def _cpu(t: torch.Tensor, host_ok: bool = False) -> torch.Tensor:
    if t.device.type != "npu":
        if host_ok and t.device.type == "cpu":
            return t  # a gloo group's own tensors go to gloo as they are
        raise RuntimeError(f"hccl (simulated) only accepts npu tensors, got a tensor on {t.device}")
    alias = _state.ext().cpu_alias(t)
    alias._ascend_compat_alias = True  # only these are waited for in _until_released
    return alias


def _until_released(args: Any, limit_s: float = 10.0) -> None:
    """Return once gloo's worker thread has dropped its references to the CPU aliases in ``args``.

    The worker releases a finished work just after completing it. Were Python's wrappers of the aliases gone by
    then, the worker would free them and need the GIL, which a finalizing interpreter ends the thread for
    ("terminate called without an active exception" after a script's last collective). Waiting until only
    Python holds them makes Python's own thread free them; a worker that never lets go is not waited for long.
    """
    aliases = [t for t in _flatten(args) if isinstance(t, torch.Tensor) and hasattr(t, "_ascend_compat_alias")]
    deadline = time.monotonic() + limit_s
    # _use_count: a binding torch's stubs omit.
    while any(t._use_count() > 1 for t in aliases) and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0)  # lets the worker run (it needs no GIL to drop a reference Python still shares)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [item for v in value for item in _flatten(v)]
    return [value]


def _done(result: Any) -> dist.Work:
    fut: torch.futures.Future[Any] = torch.futures.Future()
    fut.set_result(result)
    work: dist.Work = _C10D._create_work_from_future(fut)
    return work


class ProcessGroupHCCLSim(dist.ProcessGroup):
    """The simulated HCCL backend (one instance per process group).

    The collectives take the forms c10d calls on a Python process group (a list of tensors and an options
    object), not every overload of the C++ class, hence the ``override`` ignores.
    """

    _gloo: Any  # its collectives are bound on the C++ class but absent from torch's stubs

    def __init__(
        self,
        store: dist.Store,
        rank: int,
        size: int,
        timeout: timedelta,
        backend_name: str = "hccl",
        host_ok: bool = False,
    ) -> None:
        super().__init__(rank, size)  # type: ignore[call-arg]  # the binding takes (rank, size); stubs list one form
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("ascend_compat_hccl_sim/", store), rank, size, timeout)
        self._backend_name = backend_name
        self._host_ok = host_ok  # a "gloo" (or "cpu:gloo,npu:hccl") group also takes CPU tensors

    def _cpu_list(self, ts: list[torch.Tensor]) -> list[torch.Tensor]:
        return [_cpu(t, self._host_ok) for t in ts]

    def _cpu(self, t: torch.Tensor) -> torch.Tensor:
        return _cpu(t, self._host_ok)

    def _run(self, op: Callable[..., Any], result: Any, *args: Any) -> dist.Work:
        op(*args).wait()
        _until_released(args)
        return _done(result)

    def getBackendName(self) -> str:  # noqa: N802 - c10d's name
        return self._backend_name

    def name(self) -> str:
        return self._backend_name

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:  # type: ignore[override]
        opts = opts or _C10D.AllreduceOptions()
        return self._run(self._gloo.allreduce, tensors, self._cpu_list(tensors), opts)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts or _C10D.AllreduceCoalescedOptions()
        return self._run(self._gloo.allreduce_coalesced, tensors, self._cpu_list(tensors), opts)

    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:  # type: ignore[override]
        opts = opts or _C10D.BroadcastOptions()
        return self._run(self._gloo.broadcast, tensors, self._cpu_list(tensors), opts)

    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:  # type: ignore[override]
        opts = opts or _C10D.ReduceOptions()
        return self._run(self._gloo.reduce, tensors, self._cpu_list(tensors), opts)

    def allgather(  # type: ignore[override]
        self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts or _C10D.AllgatherOptions()
        outs = [self._cpu_list(lst) for lst in output_lists]
        return self._run(self._gloo.allgather, output_lists, outs, self._cpu_list(inputs), opts)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        opts = opts or _C10D.AllgatherOptions()
        return self._run(self._gloo._allgather_base, [output], self._cpu(output), self._cpu(input), opts)

    def reduce_scatter(  # type: ignore[override]
        self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        opts = opts or _C10D.ReduceScatterOptions()
        ins = [self._cpu_list(lst) for lst in input_lists]
        return self._run(self._gloo.reduce_scatter, outputs, self._cpu_list(outputs), ins, opts)

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        opts = opts or _C10D.ReduceScatterOptions()
        return self._run(self._gloo._reduce_scatter_base, [output], self._cpu(output), self._cpu(input), opts)

    # torch 2.13 names (see the module docstring); gloo underneath still has the older ones.
    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        return self._allgather_base(output, input, opts)

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
        return self._reduce_scatter_base(output, input, opts)

    def all_gather_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        for output, input in zip(outputs, inputs):
            self._allgather_base(output, input, opts)
        return _done(outputs)

    def reduce_scatter_single_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        for output, input in zip(outputs, inputs):
            self._reduce_scatter_base(output, input, opts)
        return _done(outputs)

    def _start_coalescing(self, device: torch.device) -> None:
        """Nothing to open: collectives run one by one, synchronously (``_coalescing_manager`` calls this)."""

    def _end_coalescing(self, device: torch.device) -> dist.Work:
        return _done([])

    def gather(  # type: ignore[override]
        self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts or _C10D.GatherOptions()
        outs = [self._cpu_list(lst) for lst in output_lists]
        return self._run(self._gloo.gather, output_lists, outs, self._cpu_list(inputs), opts)

    def scatter(  # type: ignore[override]
        self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        opts = opts or _C10D.ScatterOptions()
        ins = [self._cpu_list(lst) for lst in input_lists]
        return self._run(self._gloo.scatter, outputs, self._cpu_list(outputs), ins, opts)

    def alltoall_base(
        self,
        output: torch.Tensor,
        input: torch.Tensor,
        output_split_sizes: list[int],
        input_split_sizes: list[int],
        opts: Any = None,
    ) -> dist.Work:
        opts = opts or _C10D.AllToAllOptions()
        return self._run(
            self._gloo.alltoall_base,
            [output],
            self._cpu(output),
            self._cpu(input),
            output_split_sizes,
            input_split_sizes,
            opts,
        )

    all_to_all_single = alltoall_base  # type: ignore[assignment]  # the name torch 2.13's all_to_all_single calls

    def barrier(self, opts: Any = None) -> dist.Work:
        opts = opts or _C10D.BarrierOptions()
        return self._run(self._gloo.barrier, [], opts)

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> dist.Work:
        return self._run(self._gloo.send, tensors, self._cpu_list(tensors), dst, tag)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> dist.Work:
        return self._run(self._gloo.recv, tensors, self._cpu_list(tensors), src, tag)


def _create(opts: Any, backend_options: Any = None) -> ProcessGroupHCCLSim:
    # The extended creator API hands over the group id, which DeviceMesh and friends read back as group_name.
    name, host_ok = _FLAVOR.get()
    pg = ProcessGroupHCCLSim(opts.store, opts.group_rank, opts.group_size, opts.timeout, name, host_ok)
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


# --- "gloo" groups on the simulated NPU ------------------------------------------------------------------------
# PyTorch gives an accelerator its own collective in a "gloo" group ("cpu:gloo,cuda:gloo"; "cpu:gloo,npu:hccl"
# with torch_npu). Gloo itself refuses npu tensors ("ProcessGroupGloo::allgather: unsupported device type npu"),
# and c10d cannot hold a Python backend for one device next to a C++ one: a Python group replaces the whole group.
# So on the simulator a "gloo" group (and the explicit "cpu:gloo,npu:hccl") is this class in host mode: npu
# tensors go through gloo on zero-copy CPU views, CPU tensors straight to gloo; get_backend() still says "gloo".

# Every simulated group also takes CPU tensors: it registers its gloo backend for the cpu device (c10d reads the
# group's name from there), so c10d picks "cpu" for object collectives (all_gather_object, broadcast_object_list:
# accelerate and DeepSpeed call them on "nccl" groups) and hands those CPU tensors to this class.
_FLAVOR: contextvars.ContextVar[tuple[str, bool]] = contextvars.ContextVar(
    "ascend_compat_hccl", default=("hccl", True)
)


def _wants_host_mode(backend: Any) -> bool:
    text = str(backend).lower().replace(" ", "")
    if text in ("gloo", "undefined", "none", ""):  # init_process_group() without a backend: every device's default
        return True
    pairs = dict(p.split(":", 1) for p in text.split(",") if ":" in p) if ":" in text else {}
    # other devices' entries ("cuda:nccl" in torch's default list) name devices the simulator does not have
    return pairs.get("cpu") == "gloo" and pairs.get("npu", "hccl") in ("hccl", "gloo")


def _install_gloo_for_npu() -> None:
    c10d = dist.distributed_c10d
    original = c10d._new_process_group_helper
    if getattr(original, "_ascend_compat", False):
        return

    @functools.wraps(original)
    def helper(group_size: int, group_rank: int, global_ranks: list[int], backend: Any, *args: Any, **kw: Any) -> Any:
        device_id = kw.get("device_id")
        if device_id is not None and torch.device(device_id).type == "npu":
            # init_process_group(device_id=npu:N) binds the group to a device's C++ backend (eager connect,
            # splitting); a simulated group has none for the npu, so it stays unbound (as without device_id).
            # Binding also makes it the process's current device, as torch_npu's HCCL group does (the NPU
            # runtime sets the device before it creates the communicator); FSDP2 takes its device from
            # current_device() and DeviceMesh leaves an initialized device alone.
            index = torch.device(device_id).index
            if index is not None:
                vars(torch)["npu"].set_device(index)  # torch.npu: set by the simulator, unknown to torch's stubs
            kw["device_id"] = None
        if not _wants_host_mode(backend):
            return original(group_size, group_rank, global_ranks, backend, *args, **kw)
        name = "gloo" if str(backend).lower() == "gloo" else "hccl"
        token = _FLAVOR.set((name, True))
        try:
            pg, store = original(group_size, group_rank, global_ranks, "npu:hccl", *args, **kw)
        finally:
            _FLAVOR.reset(token)
        if pg is not None and pg in c10d._world.pg_map:  # record what the script asked for
            c10d._world.pg_map[pg] = (backend, c10d._world.pg_map[pg][1])
            c10d._world.pg_backend_config[pg] = "cpu:gloo,npu:" + ("gloo" if name == "gloo" else "hccl")
        return pg, store

    helper._ascend_compat = True  # type: ignore[attr-defined]
    setattr(c10d, "_new_process_group_helper", helper)  # noqa: B010 - the wrapper's signature is wider


def register() -> None:
    """Register ``hccl`` with torch.distributed (once per process; a real torch_npu would do the same)."""
    _install_gloo_for_npu()
    if "hccl" in dist.Backend.backend_list or hasattr(dist.Backend, "HCCL"):
        return
    dist.Backend.register_backend("hccl", _create, extended_api=True, devices=["npu"])
    atexit.register(_destroy_at_exit)
