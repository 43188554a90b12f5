"""The shim's core torch patches, as documented data: what each patches, why, the torch versions it was tested on,
the upstream issue where there is one, and the backends it applies to. ``apply`` is a loop over the list.

Each entry has the shape of a library patch (:class:`~ascend_compat.ecosystem.patching.LibraryPatch`); its
``apply(plan, torch, backend)`` makes its changes through ``plan`` (the shim's ledger). ``ascend-compat info
--patches [--json]`` lists them. The wrappers themselves are in :mod:`~ascend_compat.cuda_shim.patches` (the
``torch.device`` / ``torch.Generator`` stand-ins in :mod:`~ascend_compat.cuda_shim.devices`), the
torch.cuda replacements in :mod:`~ascend_compat.cuda_shim.cuda_functions`, distributed in
:mod:`~ascend_compat.cuda_shim.distributed`, the CPU-fallback policy in :mod:`~ascend_compat.cuda_shim.fallback`.
"""

from __future__ import annotations

import functools
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional

from ascend_compat import _FieldValue as FieldValue  # ascend_compat._value's class, one module less
from ascend_compat.cuda_shim import cuda_functions, devices, patches
from ascend_compat.cuda_shim.devices import TARGET
from ascend_compat.cuda_shim.ledger import Ledger

__all__ = ["CORE_PATCHES", "TESTED", "CorePatch", "Plan", "apply"]

#: Every core patch was tested on this torch (CPU build), on the simulated NPU and on CPU fallback.
TESTED = ("torch 2.13.0",)
ALL = ("all",)
#: Backends with no accelerator (``BackendInfo.accelerator`` False): the host is the device.
HOST = ("cpu fallback",)
#: Backends with an accelerator of their own (npu, mlu, ...).
ACCELERATOR = ("accelerators",)


class Plan:
    """The ledger as the core patches use it. TorchScript resolves a call such as ``torch.tensor(...)`` by the
    identity of the function it finds, in its table of builtin operators; a Python wrapper standing in for a
    builtin is not in it, and TorchScript would try to compile the wrapper (``torch.distributed.optim`` does at
    import). Every module-level replacement of a builtin is therefore registered as that same operator; one
    ledger record takes them all out again (some thirty, one record each cost ~0.2 ms on ``activate()``'s path)."""

    def __init__(self, ledger: Ledger) -> None:
        from torch.jit import _builtins

        self.ledger = ledger
        self.builtins = _builtins._get_builtin_table()
        self._registered: Optional[list[int]] = None  # ids this plan added to the builtin table

    def item(self, mapping: Any, key: Any, value: Any, label: str = "") -> None:
        self.ledger.setitem(mapping, key, value, label)

    def patch(self, owner: Any, name: str, value: Any) -> None:
        original = self.ledger.setattr(owner, name, value)
        op = self.builtins.get(id(original)) if original is not None and not isinstance(owner, type) else None
        if op is not None and id(value) not in self.builtins:
            self._register_builtin(id(value), op)

    def _register_builtin(self, key: int, op: Any) -> None:
        added = self._registered
        if added is None:  # the record first, then the changes it undoes
            added = self._registered = []
            table = self.builtins

            def unregister() -> None:
                while added:
                    table.pop(added.pop(), None)

            self.ledger.on_restore(unregister, "torch.jit builtins: the wrappers standing in for builtin operators")
        added.append(key)
        self.builtins[key] = op


if TYPE_CHECKING:  # a runtime alias costs a typing subscription on activate()'s path
    ApplyFn = Callable[[Plan, Any, Any], None]


class CorePatch(FieldValue):
    """One documented core patch (immutable)."""

    _FIELDS = ("name", "patches", "why", "tested", "upstream", "backends", "apply")
    __slots__ = _FIELDS
    name: str
    patches: str  # what it changes
    why: str
    tested: tuple[str, ...]
    upstream: str
    backends: tuple[str, ...]  # ("all",) or ("cpu fallback",)
    apply: ApplyFn

    def __init__(self, name: str, patches: str, why: str, upstream: str = "", backends: tuple[str, ...] = ALL,
                 apply: Any = None, tested: tuple[str, ...] = TESTED) -> None:  # fmt: skip
        put = object.__setattr__  # one call per field, no loop: the module builds these at import
        put(self, "name", name)
        put(self, "patches", patches)
        put(self, "why", why)
        put(self, "tested", tested)
        put(self, "upstream", upstream)
        put(self, "backends", backends)
        put(self, "apply", apply)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __hash__(self) -> int:
        return hash(self.name)

    def applies_to(self, backend: Any) -> bool:
        if self.backends == HOST:
            return not backend.accelerator
        if self.backends == ACCELERATOR:
            return bool(backend.accelerator)
        return self.backends == ALL

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "patches": self.patches, "why": self.why, "tested": list(self.tested),
                "upstream": self.upstream or None, "backends": list(self.backends)}  # fmt: skip


# --- what each entry does ----------------------------------------------------------------------------------------


def _device(plan: Plan, torch: Any, backend: Any) -> None:
    import copyreg

    real = TARGET.real_device
    proxy: Any = devices.make_device_proxy(real)
    plan.ledger.on_restore(proxy._ascend_compat_cache.clear, "torch.device stand-in: its cache")
    plan.patch(torch, "device", proxy)
    plan.item(copyreg.dispatch_table, real, devices.reduce_device, "copyreg")


def _generator(plan: Plan, torch: Any, backend: Any) -> None:
    plan.patch(torch, "Generator", devices.make_generator_proxy(torch.Generator))


def _default_device(plan: Plan, torch: Any, backend: Any) -> None:
    if hasattr(torch, "set_default_device"):  # torch >= 2.0
        fn = patches._first_arg_device(torch.set_default_device, "set_default_device", "device")
        plan.patch(torch, "set_default_device", fn)
    plan.patch(torch, "set_default_tensor_type", patches.set_default_tensor_type(torch.set_default_tensor_type))
    plan.patch(torch.Tensor, "__new__", cuda_functions.legacy_tensor_new(torch._C.TensorBase.__new__))


def _dataloader(plan: Plan, torch: Any, backend: Any) -> None:
    loader = torch.utils.data.DataLoader
    plan.patch(loader, "__init__", patches._dataloader_init(loader.__init__))


def _factories(plan: Plan, torch: Any, backend: Any) -> None:
    if not backend.accelerator:  # CPU fallback: the factories' one wrapper also drops pin_memory=True
        plan.ledger.setattr(patches, "UNPIN", True, "factories drop pin_memory")
    for owner, name, wrapper in patches.factory_sites(torch):
        plan.patch(owner, name, wrapper)


def _tensor_new(plan: Plan, torch: Any, backend: Any) -> None:
    for name in patches.TENSOR_NEW:
        if hasattr(torch.Tensor, name):
            wrapper = patches._device_kw(getattr(torch.Tensor, name), f"Tensor.{name}(device=cuda)")
            plan.patch(torch.Tensor, name, wrapper)


def _tensor_moves(plan: Plan, torch: Any, backend: Any) -> None:
    for owner, name, wrapper in patches.move_sites(torch):
        plan.patch(owner, name, wrapper)
    plan.patch(torch.Tensor, "is_cuda", patches._tensor_is_cuda(torch.Tensor.is_cuda))


def _module_moves(plan: Plan, torch: Any, backend: Any) -> None:
    module = torch.nn.Module
    plan.patch(module, "to", patches._positional_device(module.to, "Module.to(cuda)"))
    plan.patch(module, "cuda", patches._module_cuda(module.cuda))
    plan.patch(module, "to_empty", patches._device_kw(module.to_empty, "Module.to_empty(device=cuda)"))


def _load(plan: Plan, torch: Any, backend: Any) -> None:
    plan.patch(torch, "load", patches._torch_load(torch.load))


def _autocast(plan: Plan, torch: Any, backend: Any) -> None:
    cls = torch.amp.autocast_mode.autocast
    plan.patch(cls, "__init__", patches._autocast_init(cls.__init__))


def _grad_scaler(plan: Plan, torch: Any, backend: Any) -> None:
    # torch.amp.GradScaler appeared in torch 2.3; before that the CUDA one is the class to patch.
    cls = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler
    plan.patch(cls, "__init__", patches._grad_scaler_init(cls.__init__))


def _cuda_names(plan: Plan, torch: Any, backend: Any) -> None:
    cuda_functions.apply(plan, torch, backend)  # the names torch's own code calls now, the rest on first use


def _cupy_alias(plan: Plan, torch: Any, backend: Any) -> None:
    # A fallback provider: asked only when no other finder finds a cupy (an installed CuPy always wins). Named by
    # its path, so _cupy_alias (and numpy, ascend_compat.cupy) load at `import cupy`, never at activation.
    from ascend_compat import _import_hooks

    _import_hooks.provide(("cupy", "cupyx"), "ascend_compat._cupy_alias:shim_provider", "fallback",
                          ledger=plan.ledger, label="import cupy/cupyx -> ascend_compat.cupy")


def _host_fallback(plan: Plan, torch: Any, backend: Any) -> None:
    from ascend_compat.cuda_shim import fallback

    fallback.apply(plan.patch, patches.cuda_available())


def _accelerator_face(plan: Plan, torch: Any, backend: Any) -> None:
    accelerator = getattr(torch, "accelerator", None)
    native = getattr(accelerator, "current_accelerator", None)
    if native is None:  # torch < 2.6
        return
    from ascend_compat.cuda_shim.fallback import caller_is_script

    def current_accelerator(check_available: bool = False) -> Any:
        """The script sees the accelerator a CUDA machine reports (``device(type='cuda')``, which every patched
        entry point maps to the target); torch's own code and installed libraries get the native answer."""
        found = native(check_available)
        if found is None or not TARGET.active or not caller_is_script():
            return found
        return TARGET.real_device("cuda")

    current_accelerator.__wrapped__ = native  # type: ignore[attr-defined]
    plan.patch(accelerator, "current_accelerator", current_accelerator)


def _distributed(plan: Plan, torch: Any, backend: Any) -> None:
    from ascend_compat.cuda_shim import distributed

    distributed.apply(plan.patch, backend.collective_backend, patches._first_arg_device,
                      patches._self_first_arg_device)  # fmt: skip


def _visible_devices(plan: Plan, torch: Any, backend: Any) -> None:
    env = backend.visible_devices_env
    if env and "CUDA_VISIBLE_DEVICES" in os.environ and not os.environ.get(env):  # settings only when it is set
        from ascend_compat import settings

        visible = settings.CUDA_VISIBLE_DEVICES.get()
        if visible:
            plan.item(os.environ, env, visible)


_NO_ISSUE = "none: CUDA code meeting another device, not a torch bug"

CORE_PATCHES: tuple[CorePatch, ...] = (
    CorePatch("torch.device", "torch.device (a type-preserving stand-in) and its copyreg reducer",
              "torch.device('cuda:1') must name the target; the stand-in stays a type (isinstance, `int | "
              "torch.device`, pickling, torch.fx codegen) and checkpoints pickle torch.device by name",
              _NO_ISSUE, apply=_device),
    CorePatch("torch.Generator", "torch.Generator(device=...)", "Generator(device='cuda') on the target",
              _NO_ISSUE, apply=_generator),
    CorePatch("default-device", "torch.set_default_device, torch.set_default_tensor_type, torch.Tensor.__new__",
              "set_default_device('cuda') and set_default_tensor_type(torch.cuda.HalfTensor) select the target; "
              "after the latter the legacy constructor torch.Tensor(sizes) builds there too, as on CUDA",
              _NO_ISSUE, apply=_default_device),
    CorePatch("DataLoader", "torch.utils.data.DataLoader.__init__",
              "pin_memory_device='cuda' names the target; with no accelerator nothing is pinned (a CPU-only build "
              "has no pinned allocator)", _NO_ISSUE, apply=_dataloader),
    CorePatch("factories", "torch.zeros/ones/empty/... (device=)", "factories given device='cuda' create on the "
              "target; on CPU fallback pin_memory=True is dropped", _NO_ISSUE, apply=_factories),
    CorePatch("Tensor.new_*", "Tensor.new_zeros/new_ones/new_empty/new_full/new_tensor/new_empty_strided",
              "device='cuda' on the target", _NO_ISSUE, apply=_tensor_new),
    CorePatch("Tensor moves", "Tensor.to, Tensor.cuda, Tensor.is_cuda",
              "x.cuda() / x.to('cuda') move to the target; is_cuda is True for tensors on it", _NO_ISSUE,
              apply=_tensor_moves),
    CorePatch("Module moves", "nn.Module.to, nn.Module.cuda, nn.Module.to_empty",
              "model.cuda() / model.to('cuda') / to_empty(device='cuda') move to the target", _NO_ISSUE,
              apply=_module_moves),
    CorePatch("torch.load", "torch.load(map_location=)", "checkpoints saved on CUDA load onto the target (the "
              "default map_location maps CUDA storage tags)", _NO_ISSUE, apply=_load),
    CorePatch("autocast", "torch.amp.autocast.__init__", "autocast('cuda') on the target; bf16 becomes fp16 "
              "where the device has no bf16 (backend.autocast_bf16())", _NO_ISSUE, apply=_autocast),
    CorePatch("GradScaler", "torch.amp.GradScaler.__init__", "GradScaler('cuda') scales on the target",
              _NO_ISSUE, apply=_grad_scaler),
    CorePatch("torch.cuda", "every name of torch.cuda.__all__ and its submodules, as cuda_api.json classifies it",
              "torch.cuda.* answers for the target: direct, adapted, documented no-op or a clear unsupported error",
              _NO_ISSUE, apply=_cuda_names),
    CorePatch("import cupy", "sys.meta_path (cupy/cupyx served by the package's import finder)",
              "CuPy code (import cupy as cp) runs on the target through ascend_compat.cupy when no CuPy is "
              "installed; an installed CuPy is never shadowed (ascend_compat.cupy.install_as_cupy() replaces one "
              "that cannot run)", _NO_ISSUE, apply=_cupy_alias),
    CorePatch("host fallback", "Tensor.pin_memory, torch.accelerator gates",
              "on CPU fallback the CPU is the device CUDA gates find; pinning is a no-op (no accelerator)",
              _NO_ISSUE, backends=HOST, apply=_host_fallback),
    CorePatch("accelerator face", "torch.accelerator.current_accelerator",
              "scripts written for CUDA branch on current_accelerator().type == 'cuda' (PyTorch's ImageNet example "
              "moves the model only there); the script gets device('cuda'), torch and installed libraries the "
              "native device", _NO_ISSUE, backends=ACCELERATOR, apply=_accelerator_face),
    CorePatch("distributed", "init_process_group, is_nccl_available, init_device_mesh, DeviceMesh, DDP.__init__",
              "'nccl' becomes the backend's collective; device meshes and DDP take CUDA devices; process groups are "
              "destroyed before exit (gloo aborts otherwise)", _NO_ISSUE, apply=_distributed),
    CorePatch("visible devices", "os.environ[backend.visible_devices_env]",
              "CUDA_VISIBLE_DEVICES is honoured through the backend's own variable (ASCEND_RT_VISIBLE_DEVICES)",
              _NO_ISSUE, apply=_visible_devices),
)  # fmt: skip


_DEVICE_MODULE = "torch.utils._device"


def _default_device_constructors(ledger: Ledger) -> None:
    """torch caches, on first use, the set of factory functions that a default device (``set_default_device``,
    ``with torch.device(...)``) applies to; it must hold torch's own factories (which our wrappers call), never
    the wrappers. Already imported: compute it now, before patching. Not yet (nothing used a default device, and
    importing it costs ~0.2 ms on activate()'s path): when it is imported while the shim is active, its set is
    fixed to the originals of whatever stands in torch's namespace then."""
    module = sys.modules.get(_DEVICE_MODULE)
    if module is not None:
        module._device_constructors()
        return
    from ascend_compat import _import_hooks

    def hook(imported: ModuleType) -> None:
        raw = getattr(getattr(imported, "_device_constructors", None), "__wrapped__", None)
        if raw is None:
            return

        @functools.lru_cache(1)
        def _device_constructors() -> set[Any]:
            originals = {id(rec.replacement): rec.original for rec in ledger.claimed() if rec.kind == "attr"}
            return {originals.get(id(fn), fn) for fn in raw()}

        ledger.setattr(imported, "_device_constructors", _device_constructors, "torch.utils._device constructors")

    ledger.call(lambda: _import_hooks.when_imported(_DEVICE_MODULE, hook),
                lambda: _import_hooks.cancel(_DEVICE_MODULE, hook), "import hook: torch.utils._device")  # fmt: skip


def apply(ledger: Ledger, backend: Any) -> None:
    """Point the target at ``backend`` and apply every core patch that applies to it, through ``ledger``."""
    import torch
    import torch.nn  # torch.nn.Module

    devices.reset_caches()
    _default_device_constructors(ledger)
    ledger.setattr(TARGET, "backend", backend)
    ledger.setattr(TARGET, "device_type", backend.device_type)
    ledger.setattr(TARGET, "accelerator", bool(backend.accelerator))
    ledger.setattr(TARGET, "real_device", torch.device)
    plan = Plan(ledger)
    for entry in CORE_PATCHES:
        if entry.applies_to(backend):
            entry.apply(plan, torch, backend)
