"""Distributed under the shim: ``init_process_group("nccl")`` becomes the target's collective, DDP and DeviceMesh
take CUDA devices, and process groups are torn down before interpreter exit (gloo needs it)."""

from __future__ import annotations

import atexit
import time
from typing import TYPE_CHECKING, Any, Callable

from ascend_compat.cuda_shim.devices import TARGET, count, map_device, wrapping

if TYPE_CHECKING:  # a runtime alias costs a typing subscription on activate()'s path
    Patch = Callable[[Any, str, Any], None]

_EXIT_HOOK: list[bool] = []


def _destroy_groups_at_exit() -> None:
    # A CUDA script may end without destroy_process_group(): NCCL tolerates that, but gloo (what nccl becomes on
    # CPU fallback) can abort at interpreter teardown while its threads are still joinable ("terminate called
    # without an active exception", SIGABRT after the script finished). atexit runs while they can be joined.
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # at exit, a failed clean-up must not mask the script's own outcome
            pass
    # Even after destroy_process_group(), a gloo worker thread may still be dropping its last reference to a
    # finished work, which needs the GIL; finalization would end it there (the same abort, seen in 3 of 12
    # concurrent torchrun runs). Releasing the GIL briefly lets it finish (0 of 24 after).
    time.sleep(0.05)


def _register_exit_hook() -> None:
    """``atexit`` through the shim's ledger: deactivation unregisters it (the interpreter is left as it was)."""
    from ascend_compat import cuda_shim

    def register() -> None:
        _EXIT_HOOK.append(True)
        atexit.register(_destroy_groups_at_exit)

    def unregister() -> None:
        atexit.unregister(_destroy_groups_at_exit)
        _EXIT_HOOK.clear()

    cuda_shim._LEDGER.call(register, unregister, "atexit: destroy process groups")


def _init_process_group(original: Callable[..., Any], collective: str) -> Callable[..., Any]:
    @wrapping(original)
    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not TARGET.active:
            return original(backend, *args, **kwargs)
        # No backend means "every device's default" ("cpu:gloo,cuda:nccl" on CUDA): left as it is, CPU tensors
        # keep gloo and the target's tensors get the collective its backend registered for its device.
        if backend is not None and str(backend).lower() in ("nccl", "cuda:nccl"):
            count("init_process_group(nccl)")
            backend = collective
            if not _EXIT_HOOK:
                _register_exit_hook()
        if kwargs.get("device_id") is not None:
            kwargs["device_id"] = map_device(kwargs["device_id"])
            if TARGET.active and not TARGET.accelerator and str(kwargs["device_id"]).startswith("cpu"):
                # On CPU fallback the CUDA device is the host, and torch binds groups to accelerators only
                # ("device_id parameter must be an accelerator with an index"): unbound, as a CPU script is.
                count("init_process_group(device_id)")
                kwargs["device_id"] = None
        return original(backend, *args, **kwargs)

    return init_process_group


def _ddp_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @wrapping(original)
    def __init__(self: Any, module: Any, device_ids: Any = None, output_device: Any = None, *args: Any, **kw: Any):  # noqa: N807
        if TARGET.active and not TARGET.accelerator and (device_ids is not None or output_device is not None):
            # CUDA ordinals all mean the one CPU, and DDP wants no device_ids for CPU modules.
            count("DistributedDataParallel(device_ids)")
            device_ids = output_device = None
        original(self, module, device_ids, output_device, *args, **kw)

    return __init__


def apply(patch: Patch, collective: str, first_arg_device: Callable[..., Any], self_first_arg_device: Any) -> None:
    """The distributed patches, through ``patch(owner, name, value)`` (the shim's ledger)."""
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        return
    from torch.distributed import distributed_c10d

    wrapped = _init_process_group(distributed_c10d.init_process_group, collective)
    patch(dist, "init_process_group", wrapped)
    patch(distributed_c10d, "init_process_group", wrapped)
    patch(dist, "is_nccl_available", lambda: True)
    device_mesh: Any
    try:
        from torch.distributed import device_mesh
    except ImportError:  # torch < 2.2
        device_mesh = None
    if device_mesh is not None:
        mesh_init = first_arg_device(device_mesh.init_device_mesh, "init_device_mesh(cuda)", "device_type")
        patch(device_mesh, "init_device_mesh", mesh_init)
        if hasattr(dist, "init_device_mesh"):
            patch(dist, "init_device_mesh", mesh_init)
        mesh_cls = device_mesh.DeviceMesh
        patch(mesh_cls, "__init__", self_first_arg_device(mesh_cls.__init__, "DeviceMesh(cuda)", "device_type"))
    ddp = torch.nn.parallel.DistributedDataParallel
    patch(ddp, "__init__", _ddp_init(ddp.__init__))
