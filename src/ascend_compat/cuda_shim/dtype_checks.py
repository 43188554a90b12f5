"""What the dtype policy checks, and where: the dtypes each device lacks, and the hook the wrappers call.

The checks are data the shim's wrappers consult (:data:`~ascend_compat.cuda_shim.patches.DTYPE_HOOK`), never a
second layer of wrappers: ``Tensor.to``, ``Tensor.cuda`` and the factories have one wrapper each
(:func:`~ascend_compat.cuda_shim.patches.move_sites`, :func:`~ascend_compat.cuda_shim.patches.factory_sites`),
which calls :class:`DtypeHook` while a policy is in force. ``Tensor.npu``, ``Tensor.double`` and
``Tensor.bfloat16``, which the shim leaves alone, get a wrapper of the same kind (:func:`policy_sites`) only then.
The policy's state and lifetimes are :mod:`~ascend_compat.cuda_shim.dtype_policy`.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ascend_compat.cuda_shim import patches
from ascend_compat.cuda_shim.devices import TARGET, wraps

SUBSTITUTES = {"float64": "float32", "bfloat16": "float16"}


class DtypePolicyWarning(UserWarning):
    """A dtype the device lacks was kept (``warn``) or replaced (``substitute``)."""


@dataclass(frozen=True)
class DtypeSupport:
    """One dtype's status on a device."""

    dtype: str
    status: str  # "supported" | "limited" | "unsupported"
    note: str
    source: str


# What each backend lacks or limits, by dtype name ("supported" when not listed): dtype_support.json.
@functools.lru_cache(maxsize=1)
def _backend_dtypes() -> dict[str, dict[str, dict[str, str]]]:
    from importlib import resources

    text = resources.files("ascend_compat.cuda_shim").joinpath("dtype_support.json").read_text("utf-8")
    return json.loads(text)["backends"]  # type: ignore[no-any-return]


def _chip_bf16(chip: Optional[str]) -> Optional[tuple[bool, str, str]]:
    """(bf16 supported, which chip, source) for a simulated chip profile, or for the running simulator's chip."""
    from ascend_compat.simulate import _state

    profiles = _state.chip_profiles()
    if chip is None:
        sim = sys.modules.get("ascend_compat.simulate")
        if sim is not None and sim.is_installed():
            chip = sim.config().chip
    if chip is None or chip not in profiles:
        return None
    return bool(profiles[chip]["bf16"]), f"chip {chip}", f"simulate/chips.json {chip}: {profiles[chip]['source']}"


def device_dtype_support(device_type: str, chip: Optional[str] = None) -> dict[str, DtypeSupport]:
    """The dtypes ``device_type`` lacks or limits (``{"float64": DtypeSupport(...), ...}``); others are supported.

    ``chip`` picks a simulated chip profile (``910B``, ``910B4``, ``310P``); by default the running simulator's
    chip, else what a loaded torch_npu reports (``torch.npu.is_bf16_supported()``).
    """
    table = _backend_dtypes().get(device_type, {})
    out = {name: DtypeSupport(name, e["status"], e["note"], e["source"]) for name, e in table.items()}
    if device_type == "npu":
        bf16 = _chip_bf16(chip)
        if bf16 is None and chip is None and "torch_npu" in sys.modules:
            try:
                import torch

                npu: Any = getattr(torch, "npu")  # noqa: B009  # torch_npu's module: not in torch's stubs
                bf16 = (bool(npu.is_bf16_supported()), "this NPU", "torch.npu.is_bf16_supported()")
            except Exception:  # a broken runtime: say nothing rather than guess
                bf16 = None
        if bf16 is not None and not bf16[0]:
            out["bfloat16"] = DtypeSupport("bfloat16", "unsupported", f"no bf16 compute on {bf16[1]}", bf16[2])
    return out


def substitution_map(device_type: str) -> dict[Any, Any]:
    """torch dtype -> replacement, for the dtypes ``substitute`` replaces on ``device_type``."""
    import torch

    out = {}
    for name, sup in device_dtype_support(device_type).items():
        if name in SUBSTITUTES and sup.status in ("limited", "unsupported"):
            out[getattr(torch, name)] = getattr(torch, SUBSTITUTES[name])
    return out


def standalone_device() -> Optional[str]:
    """The device a policy outside the shim watches: ``npu`` when the simulator or torch_npu is there."""
    sim = sys.modules.get("ascend_compat.simulate")
    if (sim is not None and sim.is_installed()) or "torch_npu" in sys.modules:
        return "npu"
    return None


# --- counts --------------------------------------------------------------------------------------------------------

_COUNT_LOCK = threading.Lock()
COUNTS: Counter[tuple[str, str, str]] = Counter()  # (site, from, to) -> count
WARNED: set[tuple[str, str, str]] = set()
_SKIP_DIRS: tuple[str, ...] = ()


def _site() -> tuple[str, int]:
    """The first frame outside torch and ascend_compat: where the user's code asked for the dtype."""
    global _SKIP_DIRS
    if not _SKIP_DIRS:
        import torch

        import ascend_compat

        _SKIP_DIRS = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(ascend_compat.__file__) + os.sep)
    f: Any = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_SKIP_DIRS):
        f = f.f_back
    if f is None:
        return "<unknown>", 0
    return f.f_code.co_filename, f.f_lineno


def _device_type(dev: Any) -> Optional[str]:
    if dev is None:
        return None
    if isinstance(dev, str):
        return dev.split(":", 1)[0]
    if isinstance(dev, int) and not isinstance(dev, bool):
        return "cuda"  # an ordinal means the accelerator
    return getattr(dev, "type", None)


# --- the hook ------------------------------------------------------------------------------------------------------


class DtypeHook:
    """The policy's checks, called by the one wrapper of each site with that site's torch function ``fn``.

    The device watched is the shim's target while the shim is active, else :func:`standalone_device`; each
    check is one policy lookup when the policy in force is ``keep``."""

    def __init__(self, policy: Callable[[], str]) -> None:
        import torch

        self.policy = policy
        self.base_to = torch._C.TensorBase.to  # skips every wrapper: the checks' own casts are not checked again
        self.parse = torch._C._nn._parse_to
        self._subs: dict[str, dict[Any, Any]] = {}

    def watched(self) -> tuple[Optional[str], frozenset[str], dict[Any, Any]]:
        """(device, device types that count as it, its substitution map) now."""
        device = TARGET.device_type if TARGET.active else standalone_device()
        if device is None:
            return None, frozenset(), {}
        subs = self._subs.get(device)
        if subs is None:
            subs = self._subs[device] = substitution_map(device)
        return device, frozenset((device, "cuda")), subs

    def decide(self, dtype: Any, what: str) -> Optional[Any]:
        """Apply the policy to ``dtype`` landing on the device: the replacement dtype, or None to keep it."""
        policy = self.policy()
        device, _, subs = self.watched()
        sub = subs.get(dtype)
        if policy == "keep" or sub is None:
            return None
        filename, lineno = _site()
        site = f"{filename}:{lineno}"
        src, dst = str(dtype).replace("torch.", ""), str(sub).replace("torch.", "")
        with _COUNT_LOCK:
            COUNTS[(site, src, dst if policy == "substitute" else src)] += 1
            first = (site, src, policy) not in WARNED
            WARNED.add((site, src, policy))
        if first:
            if policy == "substitute":
                msg = (f"ascend-compat dtype policy 'substitute': {src} -> {dst} for {what} "
                       f"({src} is limited on {device})")
            else:
                msg = (f"ascend-compat dtype policy 'warn': {src} {what} on {device}, which has limited {src} "
                       f"support; the 'substitute' policy would use {dst}")
            warnings.warn_explicit(msg, DtypePolicyWarning, filename, lineno)
        return sub if policy == "substitute" else None

    def to(self, fn: Callable[..., Any], tensor: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> Any:
        """``Tensor.to`` (devices already mapped by the shim)."""
        if self.policy() == "keep":
            return fn(tensor, *args, **kwargs)
        try:
            device, dtype, non_blocking, memory_format = self.parse(*args, **kwargs)
        except Exception:  # let torch raise its own error for bad arguments
            return fn(tensor, *args, **kwargs)
        dev_type = device.type if device is not None else tensor.device.type
        if dev_type not in self.watched()[1]:
            return fn(tensor, *args, **kwargs)
        sub = self.decide(dtype if dtype is not None else tensor.dtype, what)
        if sub is None:
            return fn(tensor, *args, **kwargs)
        extra: dict[str, Any] = {"non_blocking": non_blocking, "copy": bool(kwargs.get("copy", False))}
        if memory_format is not None:
            extra["memory_format"] = memory_format
        if device is None:
            return fn(tensor, sub, **extra)
        return fn(tensor, device, sub, **extra)

    def move(self, fn: Callable[..., Any], tensor: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
             what: str) -> Any:  # fmt: skip
        """``Tensor.cuda`` / ``Tensor.npu``: the tensor keeps its dtype on the way to the device."""
        if self.policy() != "keep" and tensor.dtype in self.watched()[2]:
            sub = self.decide(tensor.dtype, what)
            if sub is not None:
                return fn(self.base_to(tensor, sub), *args, **kwargs)
        return fn(tensor, *args, **kwargs)

    def cast(self, fn: Callable[..., Any], tensor: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: Any,
             what: str) -> Any:  # fmt: skip
        """``Tensor.double`` / ``Tensor.bfloat16`` of a tensor on the device."""
        if self.policy() != "keep" and tensor.device.type in self.watched()[1]:
            sub = self.decide(dtype, what)
            if sub is not None:
                return self.base_to(tensor, sub)
        return fn(tensor, *args, **kwargs)

    def factory(self, fn: Callable[..., Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``torch.zeros(..., device=...)`` and the other factories."""
        if self.policy() == "keep" or _device_type(kwargs.get("device")) not in self.watched()[1]:
            return fn(*args, **kwargs)
        dtype = kwargs.get("dtype")
        if dtype is not None:
            sub = self.decide(dtype, f"torch.{name}(dtype=...)")
            if sub is not None:
                kwargs["dtype"] = sub
            return fn(*args, **kwargs)
        # dtype inferred (from data, fill value or the default dtype): check what came out.
        out = fn(*args, **kwargs)
        if getattr(out, "dtype", None) in self.watched()[2]:
            sub = self.decide(out.dtype, f"torch.{name}()")
            if sub is not None:
                # A cast of a requires_grad tensor is not a leaf: give back the leaf the caller asked for.
                cast = self.base_to(out.detach(), sub)
                return cast.requires_grad_(True) if out.requires_grad else cast
        return out


# --- the sites the shim leaves alone -------------------------------------------------------------------------------


def _move(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    def move(self: Any, *args: Any, **kwargs: Any) -> Any:
        hook = patches.DTYPE_HOOK
        if hook is None:  # a reference kept past the policy's end
            return fn(self, *args, **kwargs)
        return hook.move(fn, self, args, kwargs, what)

    return wraps(move, fn)


def _cast(fn: Callable[..., Any], dtype: Any, what: str) -> Callable[..., Any]:
    def cast(self: Any, *args: Any, **kwargs: Any) -> Any:
        hook = patches.DTYPE_HOOK
        if hook is None:
            return fn(self, *args, **kwargs)
        return hook.cast(fn, self, args, kwargs, dtype, what)

    return wraps(cast, fn)


def policy_sites(torch: Any) -> list[tuple[Any, str, Any]]:
    """``Tensor.npu`` (simulator or torch_npu), ``Tensor.double`` and ``Tensor.bfloat16``, each with its one
    wrapper (``torch.from_numpy`` takes no device: the move that follows it is checked instead)."""
    tensor = torch.Tensor
    out = []
    if hasattr(tensor, "npu"):
        out.append((tensor, "npu", patches.site(tensor, "npu", lambda fn: _move(fn, "Tensor.npu"))))
    for name, dtype in (("double", torch.float64), ("bfloat16", torch.bfloat16)):
        cast = functools.partial(_cast, dtype=dtype, what=f"Tensor.{name}")
        out.append((tensor, name, patches.site(tensor, name, cast)))
    return out
