"""How each classified ``torch.cuda`` name is built under the shim: one :class:`Builder` per activation.

The builder makes one name's replacement at a time, so activation builds only the names torch's own code needs at
once and the rest on first use (:mod:`~ascend_compat.cuda_shim.cuda_functions`). Every replacement keeps CUDA's
calling convention: where the target's function names or orders its parameters differently
(``torch_npu.npu.stream(s)`` against ``torch.cuda.stream(stream)``), a thin adapter with CUDA's signature stands in
front of it, so keyword and positional forms both work (see :func:`conform`).
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import Any, Callable, Optional

from ascend_compat.cuda_shim.devices import TARGET, count, map_device, wraps

#: Names whose replacement is not read from the table's kind alone (``device_count`` only with no device).
_SPECIAL = (
    "is_available", "get_device_capability", "is_bf16_supported", "get_device_properties", "memory_cached",
    "max_memory_cached", "reset_max_memory_cached", "device_memory_used", "get_per_process_memory_fraction",
    "memory_stats_as_nested_dict", "default_generators", "StreamContext",
)  # fmt: skip
_CONFORMED = ("direct", "adapted", "noop")
_REPLACED = ("direct", "noop", "unsupported")  # every name of these kinds; "adapted" only for the *Tensor types


class Builder:
    """The replacements of one activation: ``names()`` says which top-level names are replaced, ``get(name)``
    builds one (once; ``nvtx.<name>`` for torch.cuda.nvtx's). Thread-safe; ``originals`` is torch.cuda as it was."""

    def __init__(self, backend_module: Any, table: dict[str, dict[str, str]], available: bool,
                 cap: tuple[int, ...]) -> None:  # fmt: skip
        import torch

        self.module, self.table, self.available, self.cap = backend_module, table, available, cap
        self.originals = dict(vars(torch.cuda))  # before any name is replaced or removed
        self.no_devices = not TARGET.accelerator and not available
        self.noops = _noops()
        self._built: dict[str, Any] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """Every top-level name replaced (the table's, then the special ones); a table name of a patched kind with
        no implementation is a packaging or editing error, never user input."""
        out: list[str] = []
        missing: list[str] = []
        for n, e in self.table.items():  # one pass: activation runs this over every name
            kind = e["kind"]
            if kind == "noop" and n not in self.noops:
                missing.append(n)
            if e.get("delegate") == "backend" or kind in _REPLACED or (kind == "adapted" and n.endswith("Tensor")):
                out.append(n)
            elif kind == "adapted" and n not in _SPECIAL:
                missing.append(n)
        seen = set(out)
        out += [n for n in _SPECIAL if n not in seen]
        if missing:
            raise RuntimeError(f"cuda_api.json classifies names with no implementation: {missing}")
        return out

    def get(self, key: str) -> Any:
        """The replacement for ``key`` (built on the first call; two threads racing get the same object)."""
        try:
            return self._built[key]
        except KeyError:
            pass
        value = nvtx_noops()[key[5:]] if key.startswith("nvtx.") else self._build(key)
        with self._lock:
            return self._built.setdefault(key, value)

    def _build(self, name: str) -> Any:
        entry = self.table.get(name)
        fn = self._special(name) if name in _SPECIAL or (name == "device_count" and self.no_devices) else None
        if fn is None:
            fn = self._entry(name, entry or {})
        if name == "is_initialized":
            fn = _own_lazy_init_sees_torch(fn, self.originals["is_initialized"])
        if entry is not None and entry["kind"] in _CONFORMED and callable(fn):
            fn = conform(fn, self.originals.get(name))
        return fn

    def _entry(self, name: str, entry: dict[str, str]) -> Any:
        kind, original = entry.get("kind"), self.originals.get(name)
        if entry.get("delegate") == "backend":  # the backend's own, or a clear refusal (never a made-up answer)
            own = getattr(self.module, name, None)
            return own if callable(own) else _refusal_like(name, entry, original)
        if kind == "direct":
            return getattr(self.module, name)
        if kind == "unsupported":
            return _unsupported(name, entry, original)
        if kind == "noop":
            return self.noops[name]
        from ascend_compat.cuda_shim._cuda_legacy import legacy_tensor_type  # built on first use only

        return legacy_tensor_type(name)  # adapted *Tensor

    def _special(self, name: str) -> Any:
        m, cap = self.module, self.cap
        if name == "is_available":
            return _counted("torch.cuda.is_available", _is_available(self.available, self.originals["is_available"]))
        if name == "get_device_capability":
            return lambda device=None: cap
        if name == "is_bf16_supported":
            return lambda including_emulation=True: bool(m.is_bf16_supported())
        if name == "get_device_properties":
            return _device_properties(m, cap)
        if name in ("memory_cached", "device_memory_used"):
            return m.memory_reserved
        if name == "max_memory_cached":
            return m.max_memory_reserved
        if name == "reset_max_memory_cached":
            return m.reset_peak_memory_stats
        if name == "get_per_process_memory_fraction":
            return getattr(m, "get_per_process_memory_fraction", lambda device=None: 1.0)
        if name == "memory_stats_as_nested_dict":
            return lambda device=None: _nested(m.memory_stats(device))
        if name == "default_generators":
            import torch

            return getattr(m, "default_generators", None) or (torch.default_generator,)
        if name == "StreamContext":
            return type("StreamContext", (_StreamContext,), {"module": m})
        return lambda: 0  # device_count on CPU fallback with ASCEND_COMPAT_CUDA_AVAILABLE=false


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


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
    """``torch.cuda.nvtx``'s functions as no-ops (``range`` stays a context manager)."""
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
        from ascend_compat.cuda_shim.cuda_functions import UnsupportedCudaAPIError

        raise UnsupportedCudaAPIError(
            f"torch.cuda.{name} ({entry['note']}) has no equivalent on the {TARGET.device_type} backend; "
            f"alternative: {entry.get('alternative', 'none')}"
        )

    if isinstance(original, type):
        return type(name, (), {"__new__": raiser, "__doc__": f"Unsupported on this backend: {entry['note']}."})
    return raiser
