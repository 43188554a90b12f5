"""What each classified ``torch.cuda`` name becomes under the shim (``cuda_api.json`` says which kind it is).

Every replacement keeps CUDA's calling convention: where the target's function names or orders its parameters
differently (``torch_npu.npu.stream(s)`` against ``torch.cuda.stream(stream)``), a thin adapter with CUDA's
signature stands in front of it, so keyword and positional forms both work (see :func:`conform`).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from typing import Any, Callable, Optional

from ascend_compat.cuda_shim.devices import TARGET, count, map_device, target_device, wrapping, wraps


class UnsupportedCudaAPIError(RuntimeError):
    """A torch.cuda API with no equivalent on the target backend."""


@functools.lru_cache(maxsize=1)
def _cuda_api_data() -> dict[str, Any]:
    """``cuda_api.json``, read and parsed once per process (package data does not change under a running shim).

    Read beside this file when it is a file (a plain open costs half of ``importlib.resources`` on activation's
    path), through ``importlib.resources`` otherwise (a zip)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), "cuda_api.json"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        from importlib import resources

        text = resources.files("ascend_compat.cuda_shim").joinpath("cuda_api.json").read_text("utf-8")
    return dict(json.loads(text))


def cuda_api_table() -> dict[str, dict[str, str]]:
    """The classification of torch.cuda names (``cuda_api.json``)."""
    return dict(_cuda_api_data()["names"])


def cuda_available() -> bool:
    """``torch.cuda.is_available()`` under the shim: ``ASCEND_COMPAT_CUDA_AVAILABLE=auto|true|false``.

    ``auto`` (the default) answers True whenever the shim is active, on an accelerator and on CPU fallback alike:
    a script gated on CUDA (``assert torch.cuda.is_available()``, ``mp.spawn(nprocs=torch.cuda.device_count())``)
    runs on the target, as it would on a GPU machine.
    """
    policy = os.environ.get("ASCEND_COMPAT_CUDA_AVAILABLE", "auto").strip().lower()
    return policy in ("", "auto", "1", "true", "yes")


def capability() -> tuple[int, ...]:
    """What ``get_device_capability()`` answers: ``ASCEND_COMPAT_CUDA_CAPABILITY``, else (8, 0) where the target
    computes bf16 and (7, 5) where it does not (the reason is in cuda_api.json, ``get_device_capability``)."""
    env = os.environ.get("ASCEND_COMPAT_CUDA_CAPABILITY", "").strip()
    if env:
        try:
            return tuple(int(p) for p in env.split("."))
        except ValueError:
            raise ValueError(f"ASCEND_COMPAT_CUDA_CAPABILITY must look like 8.0, got {env!r}") from None
    backend = TARGET.backend
    return (8, 0) if backend is None or backend.autocast_bf16() else (7, 5)


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


LEGACY_DTYPES = {
    "BFloat16": "bfloat16", "Bool": "bool", "Byte": "uint8", "Char": "int8", "Double": "float64", "Float": "float32",
    "Half": "float16", "Int": "int32", "Long": "int64", "Short": "int16",
}  # fmt: skip


class _LegacyMeta(type):
    """The metaclass of the legacy tensor types: one for all of them (each type carries its ``dtype``)."""

    dtype: Any

    def __instancecheck__(cls, obj: Any) -> bool:
        import torch

        return isinstance(obj, torch.Tensor) and obj.dtype == cls.dtype and obj.device.type == TARGET.device_type

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        import torch

        count(f"torch.cuda.{cls.__name__}")
        if len(args) == 1 and not isinstance(args[0], int):
            return torch.as_tensor(args[0], dtype=cls.dtype, device=target_device())
        return torch.empty(*args, dtype=cls.dtype, device=target_device())


def _legacy_tensor_type(name: str, dtype: Any) -> type:
    """``torch.cuda.FloatTensor`` and friends: build tensors of that dtype on the target; isinstance works.

    Like CUDA's tensor types they carry ``dtype`` and ``is_cuda``; ``torch.set_default_tensor_type`` reads them
    (see :func:`set_default_tensor_type`).
    """
    attrs = {
        "__module__": "torch.cuda",
        "__doc__": f"Legacy {dtype} tensor type on the target.",
        "dtype": dtype,
        "is_cuda": True,
        "is_sparse": False,
        "_ascend_compat_legacy": True,
    }
    return _LegacyMeta(name, (), attrs)


_DEFAULT_DEVICE_FROM_TYPE: list[bool] = []  # set_default_tensor_type(torch.cuda.XTensor) set the default device


def set_default_tensor_type(original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.set_default_tensor_type(torch.cuda.HalfTensor)`` (or its name): default dtype, and the target as
    default device when it is an accelerator, as CUDA does; non-floating types are refused in torch's words."""

    @wrapping(original)
    def wrapper(t: Any, /) -> None:
        import warnings

        import torch
        from torch._utils import _import_dotted_name

        resolved = _import_dotted_name(t) if isinstance(t, str) else t
        if not getattr(resolved, "_ascend_compat_legacy", False):
            if _DEFAULT_DEVICE_FROM_TYPE:  # back to a CPU type: undo the device the CUDA type set
                _DEFAULT_DEVICE_FROM_TYPE.clear()
                torch.set_default_device(None)
            return original(t)
        if not resolved.dtype.is_floating_point:
            raise TypeError("invalid type object: only floating-point types are supported as the default type")
        warnings.warn(
            "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype() "
            "and torch.set_default_device() as alternatives.",
            UserWarning,
            stacklevel=2,
        )
        count("set_default_tensor_type(torch.cuda)")
        torch.set_default_dtype(resolved.dtype)
        if TARGET.accelerator:
            torch.set_default_device(target_device())
            if not _DEFAULT_DEVICE_FROM_TYPE:
                _DEFAULT_DEVICE_FROM_TYPE.append(True)

    return wrapper


def legacy_tensor_new(base_new: Callable[..., Any]) -> Any:
    """``torch.Tensor.__new__``: after ``set_default_tensor_type(torch.cuda.HalfTensor)``, the legacy constructor
    ``torch.Tensor(2, 3)`` / ``torch.Tensor([1, 2])`` builds on the target, as CUDA's default type does (Llama's
    fairscale layers build their weights this way). torch's own constructor ignores the default device."""
    import torch

    # (*args, **kwargs) only, no named ``cls``: torch._dynamo checks that its polyfill for Tensor.__new__ has the
    # signature of what it replaces, and accepts this wildcard one.
    def __new__(*args: Any, **kwargs: Any) -> Any:  # noqa: N807
        cls, args = args[0], args[1:]
        if cls is torch.Tensor and TARGET.active and _DEFAULT_DEVICE_FROM_TYPE and "device" not in kwargs:
            from ascend_compat._legacy_ctor import construct

            made = construct(args, torch.get_default_dtype(), target_device())
            if made is not None:
                return made
        return base_new(cls, *args, **kwargs)

    return staticmethod(__new__)


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


def _device_properties(backend_module: Any, cap: tuple[int, ...]) -> Callable[..., Any]:
    def get_device_properties(device: Any = None) -> Any:
        from ascend_compat.cuda_shim.properties import cuda_style_properties

        mapped = None if device is None else map_device(device)
        inner = backend_module.get_device_properties(mapped)
        return cuda_style_properties(inner, cap, mapped)

    return get_device_properties


def _noops() -> dict[str, Any]:
    """No-op stand-ins, with CUDA's parameter names (keyword calls keep working)."""
    return {
        "is_tf32_supported": lambda: False,
        "get_arch_list": lambda: [],
        "ipc_collect": lambda: None,
        "is_current_stream_capturing": lambda: False,
        "can_device_access_peer": lambda device, peer_device: False,
        "check_error": lambda res: None,
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
        "memory_snapshot": lambda mempool_id=None, include_traces=True: [],
        "memory_usage": lambda device=None: 0,
    }


def nvtx_noops() -> dict[str, Any]:
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


def _shape(fn: Any) -> Optional[tuple[Any, ...]]:
    """Parameter names, kinds and how many have defaults, read from the code object (no ``inspect`` cost)."""
    fn = inspect.unwrap(fn) if hasattr(fn, "__wrapped__") else fn
    code = getattr(fn, "__code__", None)
    if code is None or isinstance(fn, type):
        return None
    n = code.co_argcount + code.co_kwonlyargcount
    flags = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    return (code.co_varnames[:n], code.co_posonlyargcount, code.co_kwonlyargcount, flags, len(fn.__defaults__ or ()))


def conform(fn: Callable[..., Any], cuda_fn: Any) -> Callable[..., Any]:
    """``fn`` as it is when its parameters match ``cuda_fn``'s, else an adapter with CUDA's signature.

    The adapter binds keyword calls against the CUDA signature (so a wrong call fails as it would on CUDA) and
    passes the arguments positionally, in CUDA's order, which the target's own names need not match.
    """
    mine, theirs = _shape(fn), _shape(cuda_fn)
    if mine is None or theirs is None or mine == theirs:
        return fn
    sig = inspect.signature(cuda_fn)
    own = list(mine[0])
    rename = {p: own[i] for i, p in enumerate(sig.parameters) if i < len(own) and own[i] != p}

    def adapter(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            bound = sig.bind(*args, **kwargs)
            args, kwargs = bound.args, {rename.get(k, k): v for k, v in bound.kwargs.items()}
        return fn(*args, **kwargs)

    adapter.__name__ = getattr(cuda_fn, "__name__", "adapter")
    adapter.__qualname__ = getattr(cuda_fn, "__qualname__", adapter.__name__)
    adapter.__doc__ = getattr(cuda_fn, "__doc__", None)
    adapter.__module__ = "torch.cuda"
    adapter.__signature__ = sig  # type: ignore[attr-defined]
    adapter.__wrapped__ = fn  # type: ignore[attr-defined]  # inspect.getsource shows the implementation
    return adapter


def _table_entries(backend_module: Any, table: dict[str, dict[str, str]]) -> dict[str, Any]:
    import torch

    noops = _noops()
    out: dict[str, Any] = {}
    for name, entry in table.items():
        kind = entry["kind"]
        if entry.get("delegate") == "backend":  # the backend's own, or a clear refusal (never a made-up answer)
            own = getattr(backend_module, name, None)
            out[name] = own if callable(own) else _refusal_like(name, entry, getattr(torch.cuda, name, None))
        elif kind == "direct":
            out[name] = getattr(backend_module, name)
        elif kind == "unsupported":
            out[name] = _unsupported(name, entry, getattr(torch.cuda, name, None))
        elif kind == "noop":
            out[name] = noops[name]
        elif name.endswith("Tensor") and kind == "adapted":
            out[name] = _legacy_tensor_type(name, getattr(torch, LEGACY_DTYPES[name[: -len("Tensor")]]))
    return out


def cuda_functions(backend_module: Any) -> dict[str, Any]:
    """The replacement for each classified torch.cuda name, given the target's device module."""
    import torch

    table = cuda_api_table()
    out = _table_entries(backend_module, table)
    available = cuda_available()
    cap = capability()
    out["is_available"] = _counted("torch.cuda.is_available", _is_available(available, torch.cuda.is_available))
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
    if "is_initialized" in out:
        out["is_initialized"] = _own_lazy_init_sees_torch(out["is_initialized"], torch.cuda.is_initialized)
    for name, fn in out.items():
        if table.get(name, {}).get("kind") in ("direct", "adapted", "noop") and callable(fn):
            out[name] = conform(fn, getattr(torch.cuda, name, None))
    patched_kinds = ("direct", "adapted", "noop", "unsupported")
    missing = [n for n, e in table.items() if e["kind"] in patched_kinds and n not in out]
    if missing:  # the data table and the code disagree: a packaging or editing error, never user input
        raise RuntimeError(f"cuda_api.json classifies names with no implementation: {missing}")
    return out


def submodule_functions(replacements: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Replacements inside torch.cuda's submodules (``torch.cuda.random.manual_seed`` and the like)."""
    table = _cuda_api_data()
    out: dict[str, dict[str, Any]] = {"nvtx": nvtx_noops()}
    for sub, spec in table["submodules"].items():
        if spec == "top-level":
            out[sub] = {}
            import torch

            module = getattr(torch.cuda, sub)
            for name in getattr(module, "__all__", []):
                if name in replacements and hasattr(module, name):
                    out[sub][name] = replacements[name]
    return out


def _own_lazy_init_sees_torch(target: Callable[[], bool], native: Callable[[], bool]) -> Callable[[], bool]:
    """``torch.cuda.is_initialized`` for the script, but torch's own answer to ``torch.cuda._lazy_init``.

    torch's C++ runs ``torch.cuda._lazy_init()`` before its first CUDA operation and, when that returns, marks
    CUDA initialized for the rest of the process. ``_lazy_init`` returns at once when ``is_initialized()`` (looked
    up in torch.cuda, so the shim's) says True: a native CUDA call made while the shim is active (another thread's,
    or one no wrapper sees) would then latch torch into "PyTorch is not linked with support for cuda devices"
    for good, the shim off included.
    """

    def is_initialized() -> bool:
        if not TARGET.active or sys._getframe(1).f_globals.get("__name__") == "torch.cuda":
            return native()
        return target()

    return is_initialized


def _is_available(available: bool, native: Callable[[], bool]) -> Callable[[], bool]:
    """On an accelerator, every caller gets ``available``. On CPU fallback only the script does: torch's own code
    (Inductor's and Triton's device probes, dynamo's CUDA interface) gets torch's answer, or it would pick CUDA
    code generation and the CUDA driver for what are CPU tensors (``libcuda.so cannot found``)."""
    if TARGET.accelerator:
        return lambda: available
    from ascend_compat.cuda_shim.fallback import caller_is_torch

    return lambda: native() if caller_is_torch() else available


def _counted(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        count(label)
        return fn(*args, **kwargs)

    return wraps(wrapper, fn)


def _refusal_like(name: str, entry: dict[str, str], cuda_fn: Any) -> Any:
    """A refusal with CUDA's signature, for a name the backend may or may not provide (``delegate: backend``).

    It names the CUDA function as ``__wrapped__``, so ``inspect.signature`` reads CUDA's own parameters when
    asked, instead of an adapter computing them on every activation."""
    raiser = _unsupported(name, entry, None)
    if callable(cuda_fn) and not isinstance(cuda_fn, type):
        raiser.__wrapped__ = cuda_fn
    return raiser


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
