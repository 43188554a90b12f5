"""The shim's patch plan: each entry says why it exists, and goes through the ledger.

Tested on torch 2.13 (CPU build) against the simulated NPU and CPU fallback.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import time
import warnings
from importlib import resources
from typing import Any, Callable

from ascend_compat.cuda_shim import devices
from ascend_compat.cuda_shim.devices import TARGET, count, map_device, target_device
from ascend_compat.cuda_shim.devices import map_location as _map_location
from ascend_compat.cuda_shim.ledger import Ledger

# Factories and other functions that take ``device=`` as a keyword.
FACTORIES = (
    "zeros ones empty full rand randn randint randperm arange range linspace logspace eye tensor as_tensor asarray "
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like empty_strided scalar_tensor "
    "tril_indices triu_indices normal"
).split()
TENSOR_NEW = ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "new_empty_strided")


class UnsupportedCudaAPIError(RuntimeError):
    """A torch.cuda API with no equivalent on the target backend."""


@functools.lru_cache(maxsize=1)
def _cuda_api_data() -> dict[str, Any]:
    """``cuda_api.json``, read and parsed once per process (package data does not change under a running shim)."""
    text = resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_text("utf-8")
    return dict(json.loads(text))


def cuda_api_table() -> dict[str, dict[str, str]]:
    """The classification of torch.cuda names (``cuda_api.json``)."""
    return dict(_cuda_api_data()["names"])


def _map_device_kw(kwargs: dict[str, Any], label: str) -> None:
    d = kwargs.get("device")
    if d is not None:
        mapped = map_device(d)
        if mapped is not d:
            kwargs["device"] = mapped
            count(label)


def _device_kw(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    """Functions and methods taking ``device=`` as a keyword (``self`` passes through in ``args``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _map_device_kw(kwargs, label)
        return fn(*args, **kwargs)

    return wrapper


def _positional_device(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``Tensor.to`` / ``Module.to``: the device may be the first positional argument or ``device=``."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args:
            first = args[0]
            mapped = map_device(first)
            if mapped is not first:
                args = (mapped, *args[1:])
                count(label)
        _map_device_kw(kwargs, label)
        return fn(self, *args, **kwargs)

    return wrapper


_ORIGINAL: dict[str, Any] = {}  # originals the replacements call directly (skipping our own wrappers)


def _tensor_cuda(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    count("Tensor.cuda")
    # Keyword arguments cost ~0.7 us in Tensor.to's parser: pass them only when they say something.
    if non_blocking:
        kwargs["non_blocking"] = True
    if kwargs:
        return _ORIGINAL["Tensor.to"](self, target_device(device), **kwargs)
    return _ORIGINAL["Tensor.to"](self, target_device(device))


def _tensor_is_cuda(self: Any) -> bool:
    return self.device.type == TARGET.device_type


def _module_cuda(self: Any, device: Any = None) -> Any:
    count("Module.cuda")
    return self.to(target_device(device))


def _make_device_proxy(real: type) -> type:
    """A stand-in for ``torch.device`` that stays a type: isinstance, ``int | torch.device`` and pickling work."""

    cache: dict[tuple[Any, ...], tuple[Any, bool]] = {}

    class _DeviceMeta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if not kwargs:
                # Fast path: torch.device("cuda:1") / torch.device("cuda", 1); devices are immutable.
                try:
                    hit = cache[args]
                except (KeyError, TypeError):
                    pass
                else:
                    if hit[1]:
                        count("torch.device")
                    return hit[0]
            dev = real(*args, **kwargs)
            if not kwargs and len(cache) < 512:
                mapped = map_device(dev) if dev.type == "cuda" else dev
                try:
                    cache[args] = (mapped, dev.type == "cuda")
                except TypeError:
                    pass
            if dev.type == "cuda":
                count("torch.device")
                return map_device(dev)
            return dev

    proxy = _DeviceMeta("device", (), {"__module__": "torch", "__qualname__": "device", "__doc__": real.__doc__})
    return proxy


def _make_generator_proxy(real: type) -> type:
    """``torch.Generator(device="cuda")`` on the target; the stand-in stays a type for isinstance checks."""

    class _GeneratorMeta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

        def __call__(cls, device: Any = "cpu") -> Any:
            mapped = map_device(device)
            if mapped is not device:
                count("torch.Generator(device=cuda)")
            return real(device=mapped)

    attrs = {"__module__": "torch", "__qualname__": "Generator", "__doc__": real.__doc__}
    return _GeneratorMeta("Generator", (), attrs)


def _first_arg_device(fn: Callable[..., Any], label: str, key: str) -> Callable[..., Any]:
    """Map a device (or device-type string) given as the first argument or as ``key=``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args and args[0] == "cuda":  # a bare device-type string, as DeviceMesh takes
            args = (TARGET.device_type, *args[1:])
            count(label)
        elif args:
            mapped = map_device(args[0], allow_int=False)
            if mapped is not args[0]:
                args = (mapped, *args[1:])
                count(label)
        if key in kwargs:
            value = kwargs[key]
            if value == "cuda":
                kwargs[key] = TARGET.device_type
                count(label)
            else:
                kwargs[key] = map_device(value, allow_int=False)
        return fn(*args, **kwargs)

    return wrapper


def _self_first_arg_device(fn: Callable[..., Any], label: str, key: str) -> Callable[..., Any]:
    inner = _first_arg_device(lambda *a, **k: (a, k), label, key)

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = inner(*args, **kwargs)
        return fn(self, *args, **kwargs)

    return wrapper


def _dataloader_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        dev = kwargs.get("pin_memory_device")
        if isinstance(dev, str) and dev:
            mapped = map_device(dev)
            if mapped is not dev:
                count("DataLoader(pin_memory_device=cuda)")
                # On CPU fallback there is nothing to pin for: drop the device, keep pinning semantics.
                kwargs["pin_memory_device"] = str(mapped) if TARGET.accelerator else ""
        original(self, *args, **kwargs)

    return __init__


def _reduce_device(dev: Any) -> tuple[Any, tuple[Any, ...]]:
    # Pickle names torch.device (whichever object it is now), so checkpoints load without ascend-compat.
    import torch

    return torch.device, ((dev.type,) if dev.index is None else (dev.type, dev.index))


def _autocast_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __init__(self: Any, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: Any = None):  # noqa: N807
        if device_type == "cuda":
            count("autocast")
            device_type = TARGET.device_type
            dtype = _amp_dtype(dtype)
        return original(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    return __init__


def _amp_dtype(dtype: Any) -> Any:
    import torch

    if dtype is torch.bfloat16 and TARGET.accelerator:
        mod = getattr(torch, TARGET.device_type)
        if hasattr(mod, "is_bf16_supported") and not mod.is_bf16_supported():
            warnings.warn(
                f"bfloat16 autocast requested but {TARGET.device_type} has no bf16 here: using float16",
                stacklevel=3,
            )
            return torch.float16
    return dtype


def _grad_scaler_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __init__(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if device == "cuda":
            count("GradScaler")
            device = TARGET.device_type
        original(self, device, *args, **kwargs)

    return __init__


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


def _init_process_group(original: Callable[..., Any], collective: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if backend is None or str(backend).lower() in ("nccl", "cuda:nccl"):
            count("init_process_group(nccl)")
            backend = collective
            if not _EXIT_HOOK:
                _EXIT_HOOK.append(True)
                atexit.register(_destroy_groups_at_exit)
        if kwargs.get("device_id") is not None:
            kwargs["device_id"] = map_device(kwargs["device_id"])
        return original(backend, *args, **kwargs)

    return init_process_group


def _ddp_init(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def __init__(self: Any, module: Any, device_ids: Any = None, output_device: Any = None, *args: Any, **kw: Any):  # noqa: N807
        if not TARGET.accelerator and (device_ids is not None or output_device is not None):
            # CUDA ordinals all mean the one CPU, and DDP wants no device_ids for CPU modules.
            count("DistributedDataParallel(device_ids)")
            device_ids = output_device = None
        original(self, module, device_ids, output_device, *args, **kw)

    return __init__


def _torch_load(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        mapped = _map_location(map_location)
        if mapped is not map_location:
            count("torch.load(map_location)")
        return original(f, mapped, *args, **kwargs)

    return load


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _legacy_tensor_type(name: str, dtype: Any) -> type:
    """``torch.cuda.FloatTensor`` and friends: build tensors of that dtype on the target; isinstance works."""
    import torch

    class _LegacyMeta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, torch.Tensor) and obj.dtype == dtype and obj.device.type == TARGET.device_type

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            count(f"torch.cuda.{name}")
            if len(args) == 1 and not isinstance(args[0], int):
                return torch.as_tensor(args[0], dtype=dtype, device=target_device())
            return torch.empty(*args, dtype=dtype, device=target_device())

    return _LegacyMeta(name, (), {"__module__": "torch.cuda", "__doc__": f"Legacy {dtype} tensor type on the target."})


class _StreamContext:
    """``torch.cuda.StreamContext(s)``: make ``s`` current on the target inside the block."""

    module: Any = None

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self._ctx: Any = None

    def __enter__(self) -> Any:
        self._ctx = self.module.stream(self.stream)
        self._ctx.__enter__()
        return self.stream

    def __exit__(self, *exc: Any) -> Any:
        return self._ctx.__exit__(*exc)


class _CudaStyleProperties:
    """The target's device properties, plus the CUDA fields CUDA code reads (major/minor, SM count)."""

    def __init__(self, inner: Any, cap: tuple[int, ...]) -> None:
        self._inner = inner
        self.major, self.minor = (*cap, 0)[:2]
        cores = getattr(inner, "multi_processor_count", None) or getattr(inner, "cube_core_num", None)
        self.multi_processor_count = int(cores or 1)
        self.is_integrated = False
        self.is_multi_gpu_board = False

    def __getattr__(self, item: str) -> Any:
        return getattr(self._inner, item)

    def __repr__(self) -> str:
        return f"{self._inner!r} (CUDA view: major={self.major}, minor={self.minor})"


def _device_properties(backend_module: Any, cap: tuple[int, ...]) -> Callable[..., Any]:
    def get_device_properties(device: Any = None) -> Any:
        inner = backend_module.get_device_properties(None if device is None else map_device(device))
        return _CudaStyleProperties(inner, cap)

    return get_device_properties


def _noops() -> dict[str, Callable[..., Any]]:
    return {
        "is_tf32_supported": lambda: False,
        "get_arch_list": lambda: [],
        "ipc_collect": lambda: None,
        "utilization": lambda device=None: 0,
        "is_current_stream_capturing": lambda: False,
        "can_device_access_peer": lambda device, peer_device: False,
        "check_error": lambda res: None,
        "clock_rate": lambda device=None: 0,
        "power_draw": lambda device=None: 0,
        "temperature": lambda device=None: 0,
        "get_gencode_flags": lambda: "",
        "get_allocator_backend": lambda: "native",
        "get_sync_debug_mode": lambda: 0,
        "set_sync_debug_mode": lambda debug_mode: None,
        "has_magma": False,
        "host_memory_stats": lambda: {},
        "host_memory_stats_as_nested_dict": lambda: {},
        "reset_accumulated_host_memory_stats": lambda: None,
        "reset_peak_host_memory_stats": lambda: None,
        "list_gpu_processes": lambda device=None: "no CUDA processes (ascend-compat shim)",
        "memory_snapshot": lambda *args, **kwargs: [],
        "memory_usage": lambda device=None: 0,
    }


def _nvtx_noops() -> dict[str, Any]:
    import contextlib

    @contextlib.contextmanager
    def nvtx_range(msg: str, *args: Any, **kwargs: Any) -> Any:
        yield

    return {
        "mark": lambda msg: None,
        "range_push": lambda msg: 0,
        "range_pop": lambda: 0,
        "range_start": lambda msg: 0,
        "range_end": lambda range_id: None,
        "range": nvtx_range,
    }


def cuda_functions(backend_module: Any) -> dict[str, Any]:
    """The replacement for each classified torch.cuda name, given the target's device module."""
    import torch

    table = cuda_api_table()
    noops = _noops()
    out: dict[str, Any] = {}
    for name, entry in table.items():
        kind = entry["kind"]
        if kind == "direct":
            out[name] = getattr(backend_module, name)
        elif kind == "unsupported":
            out[name] = _unsupported(name, entry, getattr(torch.cuda, name, None))
        elif kind == "noop":
            out[name] = noops[name]
        elif name.endswith("Tensor") and kind == "adapted":
            dtype = getattr(torch, {"BFloat16": "bfloat16", "Bool": "bool", "Byte": "uint8", "Char": "int8",
                                    "Double": "float64", "Float": "float32", "Half": "float16", "Int": "int32",
                                    "Long": "int64", "Short": "int16"}[name[: -len("Tensor")]])  # fmt: skip
            out[name] = _legacy_tensor_type(name, dtype)
    policy = os.environ.get("ASCEND_COMPAT_CUDA_AVAILABLE", "auto").lower()
    available = TARGET.accelerator if policy == "auto" else policy in ("1", "true", "yes")
    cap = tuple(int(p) for p in os.environ.get("ASCEND_COMPAT_CUDA_CAPABILITY", "8.0").split("."))
    out["is_available"] = _counted("torch.cuda.is_available", lambda: available)
    out["get_device_capability"] = lambda device=None: cap
    out["is_bf16_supported"] = lambda including_emulation=True: bool(backend_module.is_bf16_supported())
    out["get_device_properties"] = _device_properties(backend_module, cap)
    out["memory_cached"] = backend_module.memory_reserved
    out["max_memory_cached"] = backend_module.max_memory_reserved
    out["reset_max_memory_cached"] = backend_module.reset_peak_memory_stats
    out["device_memory_used"] = backend_module.memory_reserved
    out["get_per_process_memory_fraction"] = getattr(
        backend_module, "get_per_process_memory_fraction", lambda device=None: 1.0
    )
    out["memory_stats_as_nested_dict"] = lambda device=None: _nested(backend_module.memory_stats(device))
    out["default_generators"] = getattr(backend_module, "default_generators", None) or (torch.default_generator,)
    out["StreamContext"] = type("StreamContext", (_StreamContext,), {"module": backend_module})
    if not TARGET.accelerator and not available:
        out["device_count"] = lambda: 0
    patched_kinds = ("direct", "adapted", "noop", "unsupported")
    missing = [n for n, e in table.items() if e["kind"] in patched_kinds and n not in out]
    if missing:  # the data table and the code disagree: a packaging or editing error, never user input
        raise RuntimeError(f"cuda_api.json classifies names with no implementation: {missing}")
    return out


def submodule_functions(replacements: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Replacements inside torch.cuda's submodules (``torch.cuda.random.manual_seed`` and the like)."""
    table = _cuda_api_data()
    out: dict[str, dict[str, Any]] = {"nvtx": _nvtx_noops()}
    for sub, spec in table["submodules"].items():
        if spec == "top-level":
            out[sub] = {}
            import torch

            module = getattr(torch.cuda, sub)
            for name in getattr(module, "__all__", []):
                if name in replacements and hasattr(module, name):
                    out[sub][name] = replacements[name]
    return out


def _counted(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        count(label)
        return fn(*args, **kwargs)

    return wrapper


def _unsupported(name: str, entry: dict[str, str], original: Any) -> Any:
    """A refusing stand-in. Classes stay classes, so annotations like ``torch.cuda.CUDAGraph | None`` and
    isinstance checks keep working; only using them raises."""

    def raiser(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedCudaAPIError(
            f"torch.cuda.{name} ({entry['note']}) has no equivalent on the {TARGET.device_type} backend; "
            f"alternative: {entry.get('alternative', 'none')}"
        )

    if isinstance(original, type):
        return type(name, (), {"__new__": raiser, "__doc__": f"Unsupported on this backend: {entry['note']}."})
    return raiser


def apply(ledger: Ledger, backend: Any, fail_at: int | None = None) -> None:
    """Apply every patch through ``ledger``. ``fail_at`` injects a failure before patch N (for tests)."""
    import copyreg

    import torch
    import torch.distributed as dist
    import torch.nn as nn

    step = 0
    devices.reset_caches()
    try:
        # torch caches the set of factory functions that set_default_device intercepts on first use; compute it
        # now, so it holds torch's own factories (which our wrappers call) rather than the wrappers.
        from torch.utils._device import _device_constructors

        _device_constructors()
    except ImportError:
        pass
    _ORIGINAL["Tensor.to"] = torch.Tensor.to

    def patch(owner: Any, name: str, value: Any) -> None:
        nonlocal step
        if fail_at is not None and step == fail_at:
            raise RuntimeError(f"injected failure at patch {step} ({name})")
        step += 1
        ledger.setattr(owner, name, value)

    real_device = TARGET.real_device
    patch(torch, "device", _make_device_proxy(real_device))
    if fail_at is not None and step == fail_at:
        raise RuntimeError(f"injected failure at patch {step} (copyreg)")
    step += 1
    ledger.setitem(copyreg.dispatch_table, real_device, _reduce_device)
    patch(torch, "Generator", _make_generator_proxy(torch.Generator))
    if hasattr(torch, "set_default_device"):  # torch >= 2.0
        patch(torch, "set_default_device", _first_arg_device(torch.set_default_device, "set_default_device", "device"))
    loader = torch.utils.data.DataLoader
    patch(loader, "__init__", _dataloader_init(loader.__init__))
    for name in FACTORIES:
        if hasattr(torch, name):
            patch(torch, name, _device_kw(getattr(torch, name), f"torch.{name}(device=cuda)"))
    for name in TENSOR_NEW:
        if hasattr(torch.Tensor, name):
            patch(torch.Tensor, name, _device_kw(getattr(torch.Tensor, name), f"Tensor.{name}(device=cuda)"))
    patch(torch.Tensor, "to", _positional_device(torch.Tensor.to, "Tensor.to(cuda)"))
    patch(torch.Tensor, "cuda", _tensor_cuda)
    patch(torch.Tensor, "is_cuda", property(_tensor_is_cuda))
    patch(nn.Module, "to", _positional_device(nn.Module.to, "Module.to(cuda)"))
    patch(nn.Module, "cuda", _module_cuda)
    patch(nn.Module, "to_empty", _device_kw(nn.Module.to_empty, "Module.to_empty(device=cuda)"))
    patch(torch, "load", _torch_load(torch.load))
    autocast_cls = torch.amp.autocast_mode.autocast
    patch(autocast_cls, "__init__", _autocast_init(autocast_cls.__init__))
    # torch.amp.GradScaler appeared in torch 2.3; before that the CUDA one is the class to patch.
    scaler_cls = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler
    patch(scaler_cls, "__init__", _grad_scaler_init(scaler_cls.__init__))
    replacements = cuda_functions(backend.device_module())
    for name, fn in replacements.items():
        patch(torch.cuda, name, fn)
    for sub, fns in submodule_functions(replacements).items():
        module = getattr(torch.cuda, sub)
        for name, fn in fns.items():
            patch(module, name, fn)
    if dist.is_available():
        from torch.distributed import distributed_c10d

        wrapped = _init_process_group(distributed_c10d.init_process_group, backend.collective_backend)
        patch(dist, "init_process_group", wrapped)
        patch(distributed_c10d, "init_process_group", wrapped)
        patch(dist, "is_nccl_available", lambda: True)
        try:
            from torch.distributed import device_mesh
        except ImportError:  # torch < 2.2
            device_mesh = None
        if device_mesh is not None:
            mesh_init = _first_arg_device(device_mesh.init_device_mesh, "init_device_mesh(cuda)", "device_type")
            patch(device_mesh, "init_device_mesh", mesh_init)
            if hasattr(dist, "init_device_mesh"):
                patch(dist, "init_device_mesh", mesh_init)
            mesh_cls = device_mesh.DeviceMesh
            patch(mesh_cls, "__init__", _self_first_arg_device(mesh_cls.__init__, "DeviceMesh(cuda)", "device_type"))
        ddp = torch.nn.parallel.DistributedDataParallel
        patch(ddp, "__init__", _ddp_init(ddp.__init__))
    env = backend.visible_devices_env
    if env and os.environ.get("CUDA_VISIBLE_DEVICES") and not os.environ.get(env):
        ledger.setitem(os.environ, env, os.environ["CUDA_VISIBLE_DEVICES"])


__all__ = ["FACTORIES", "UnsupportedCudaAPIError", "apply", "cuda_api_table"]
