"""Map CUDA device arguments to the target device, by argument type (never by substring).

Only a ``str`` that *is* a CUDA device spec (``"cuda"``, ``"cuda:1"``), a ``torch.device`` of type cuda, or an
int ordinal in a device position is translated. ``"/data/cuda_ckpt.pt"`` is just a string and is never touched.

Also here: the stand-ins for ``torch.device`` and ``torch.Generator`` that translate at construction, and the
wrapping helper every module of the shim uses.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

_NOT_CUDA = object()


def _cuda_index(spec: str) -> Any:
    r"""``"cuda"`` -> None, ``"cuda:3"`` -> ``"3"``, anything else -> ``_NOT_CUDA``.

    Exactly what ``re.match(r"^cuda(?::(\d+))?$", spec)`` and its group would say (``$`` also matches before one
    trailing newline; ``\d`` is any Unicode decimal digit), without compiling a regex on ``activate()``'s path.
    """
    if spec.endswith("\n"):
        spec = spec[:-1]
    if spec == "cuda":
        return None
    if spec.startswith("cuda:") and spec[5:].isdecimal():
        return spec[5:]
    return _NOT_CUDA


class Target:
    """The device the shim redirects to. Activation sets these fields through the ledger (so deactivation, and a
    failed activation, put the defaults back); ``active`` is set last and restored first: every wrapper reads it,
    so other threads see the old behaviour or the new one, never a half-applied mix."""

    # Slots, not a __dict__: the ledger reads an instance's __dict__, which materialises it, and CPython 3.11 then
    # reads these fields unspecialised (~20-40 ns more per read; every wrapper reads ``active`` on every call).
    __slots__ = ("accelerator", "active", "backend", "device_type", "real_device")

    def __init__(self) -> None:
        self.device_type = "cpu"
        self.accelerator = False  # False on CPU fallback
        self.real_device: Any = None  # torch's C device type, kept while torch.device is proxied
        self.backend: Any = None  # the BackendInfo subclass in use
        self.active = False  # the wrappers redirect only while this is True


TARGET = Target()
COUNTS: Counter[str] = Counter()
REPORTING = False


DEBUG = False  # ASCEND_COMPAT_LOG_LEVEL=DEBUG: log every translation


def count(name: str) -> None:
    if REPORTING:
        COUNTS[name] += 1
    if DEBUG:
        import logging

        logging.getLogger("ascend_compat").debug("redirected %s to %s", name, TARGET.device_type)


# torch.device objects are immutable, so translations are cached (cleared whenever the target changes).
_MADE: dict[Any, Any] = {}
_MAPPED: dict[Any, Any] = {}
_CACHE_LIMIT = 512


def reset_caches() -> None:
    _MADE.clear()
    _MAPPED.clear()


def _make(index: Any) -> Any:
    try:
        return _MADE[index]
    except KeyError:
        pass
    real = TARGET.real_device or _torch_device()
    backend = TARGET.backend
    if backend is not None:  # what an ordinal means is the backend's (on CPU fallback, every one is the host)
        dev = backend.cuda_device(real, index)
    else:  # a call racing deactivate(): the class defaults, the host
        dev = real(TARGET.device_type)
    _MADE[index] = dev
    return dev


def _torch_device() -> Any:
    """torch's own device type, for a call that began while active and ends after deactivate() cleared
    ``TARGET.real_device`` (another thread's): it finishes with the target it started with."""
    import torch

    return torch._C.device


def map_device(dev: Any, allow_int: bool = True) -> Any:
    """Translate one device argument; anything that is not a CUDA device comes back unchanged."""
    if allow_int and type(dev) is not bool:
        try:
            return _MAPPED[dev]
        except (KeyError, TypeError):
            pass
        out = _map_device(dev, True)
        if len(_MAPPED) < _CACHE_LIMIT:
            try:
                _MAPPED[dev] = out
            except TypeError:
                pass
        return out
    return _map_device(dev, allow_int)


def _map_device(dev: Any, allow_int: bool) -> Any:
    real = TARGET.real_device
    if isinstance(dev, str):
        index = _cuda_index(dev)
        if index is _NOT_CUDA:
            return dev
        return _make(index)
    if real is not None and type(dev) is real:
        return _make(dev.index) if dev.type == "cuda" else dev
    if allow_int and isinstance(dev, int) and not isinstance(dev, bool):
        return _make(dev)
    return dev


def target_device(index: Any = None) -> Any:
    """``torch.device`` of the target, with the CUDA-style optional index (int, str or device)."""
    if index is None:
        # No index: torch resolves it to the current device itself, exactly as `.cuda()` means.
        return _make(None)
    mapped = map_device(index)
    return mapped if not isinstance(mapped, str) else (TARGET.real_device or _torch_device())(mapped)


def map_location(loc: Any) -> Any:
    """``torch.load(map_location=...)``: str, device, dict (values) or callable; None maps CUDA tags."""
    if loc is None:
        return _cuda_tags_to_target
    if isinstance(loc, dict):
        return {k: _as_str(map_device(v)) for k, v in loc.items()}
    if callable(loc):
        return loc
    return map_device(loc)


def _as_str(dev: Any) -> Any:
    return str(dev) if TARGET.real_device is not None and type(dev) is TARGET.real_device else dev


def _cuda_tags_to_target(storage: Any, location: str) -> Any:
    """Default restore for checkpoints saved on CUDA: place their storages on the target instead."""
    if _cuda_index(location) is not _NOT_CUDA:
        target = str(map_device(location))
        if target == "cpu":
            return storage
        return storage.to(target) if hasattr(storage, "to") else storage
    return None  # let torch restore other locations as usual


# -- stand-ins for torch.device and torch.Generator (types, so isinstance, annotations and pickling keep working) ---


def make_device_proxy(real: type) -> type:
    """A stand-in for ``torch.device`` that stays a type: isinstance, ``int | torch.device`` and pickling work."""

    cache: dict[tuple[Any, ...], tuple[Any, bool]] = {}

    class _DeviceMeta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

        # Equal to (and hashing as) the type it stands for: ``type(d) == torch.device`` holds, and torch.fx's code
        # generation, which skips ``obj != torch.device``, still binds the name ``device`` it prints.
        def __eq__(cls, other: object) -> bool:
            return other is cls or other is real

        __hash__ = type.__hash__  # identity, as before: only equality is widened

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if not kwargs:
                # Fast path: torch.device("cuda:1") / torch.device("cuda", 1); devices are immutable. The cache
                # is emptied on deactivation, so a stand-in kept past it takes the path below.
                try:
                    hit = cache[args]
                except (KeyError, TypeError):
                    pass
                else:
                    if hit[1]:
                        count("torch.device")
                    return hit[0]
            if not TARGET.active:
                return real(*args, **kwargs)
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
    proxy._ascend_compat_cache = cache  # type: ignore[attr-defined]  # emptied on restore (core_patches)
    return proxy


def make_generator_proxy(real: type) -> type:
    """``torch.Generator(device="cuda")`` on the target; the stand-in stays a type for isinstance checks."""

    class _GeneratorMeta(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

        def __call__(cls, device: Any = "cpu") -> Any:
            if not TARGET.active:
                return real(device=device)
            mapped = map_device(device)
            if mapped is not device:
                count("torch.Generator(device=cuda)")
            return real(device=mapped)

    attrs = {"__module__": "torch", "__qualname__": "Generator", "__doc__": real.__doc__}
    return _GeneratorMeta("Generator", (), attrs)


def reduce_device(dev: Any) -> tuple[Any, tuple[Any, ...]]:
    # Pickle names torch.device (whichever object it is now), so checkpoints load without ascend-compat.
    import torch

    return torch.device, ((dev.type,) if dev.index is None else (dev.type, dev.index))


# -- wrapping (shared by every module of the shim that wraps a torch function) ---------------------------------

_ABSENT = object()


def wraps(wrapper: Callable[..., Any], fn: Any) -> Callable[..., Any]:
    """What ``functools.wraps(fn)(wrapper)`` does (name, qualname, module, doc, annotations, attributes,
    ``__wrapped__``), without its partial object and exceptions: activation wraps a few dozen functions."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__"):
        value = getattr(fn, attr, _ABSENT)
        if value is not _ABSENT:
            setattr(wrapper, attr, value)
    own = getattr(fn, "__dict__", None)
    if own:
        wrapper.__dict__.update(own)
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def wrapping(fn: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@wrapping(fn)``: the decorator form of :func:`wraps` (``functools.wraps``, cheaper)."""
    return lambda wrapper: wraps(wrapper, fn)
