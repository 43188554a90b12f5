"""dtype policy: what to do when code puts a dtype on the device that the device does not (fully) support.

Ascend NPUs have no float64 compute on the AI Core (float64 operators run slowly on the AI CPU or not at all) and
the 310P has no bfloat16. CUDA code uses both freely. Policies:

* ``keep`` (default): change nothing, never touch numerics silently.
* ``warn``: warn once per call site where such a dtype lands on the device; values unchanged.
* ``substitute``: float64 -> float32 and (where the chip has none) bfloat16 -> float16 at those places, one
  warning per call site, counted for ``ascend-compat run --report`` (:func:`substitutions`).

Select at activation (``cuda_shim.activate(dtype_policy=...)``, ``ASCEND_COMPAT_DTYPE_POLICY``,
``ascend-compat run --dtype-policy``) or for a block (``with dtype_policy("substitute"):``).

Where a dtype is checked: ``Tensor.to`` (so ``Module.to`` too), ``Tensor.cuda``/``Tensor.npu`` (so
``Module.cuda``), ``Tensor.double``/``Tensor.bfloat16`` on the device (so ``Module.double``/``bfloat16``), and the
tensor factories given a device (``dtype=`` replaced before creation; a float64 inferred from data or from the
default dtype is cast after it). Not checked: ops that compute in float64 from device tensors given
``dtype=`` (``x.sum(dtype=torch.float64)``), ``Tensor.type(...)``, and ``torch.set_default_device`` factories
without ``device=``. Patches exist only while a non-``keep`` policy can apply and the target lacks a dtype; they
go through a :class:`~ascend_compat.cuda_shim.ledger.Ledger` of their own, applied on top of the shim's patches
and restored before them, exactly.
"""

from __future__ import annotations

import contextvars
import functools
import json
import os
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ascend_compat.cuda_shim.ledger import Ledger

__all__ = [
    "POLICIES",
    "DtypePolicyWarning",
    "current_policy",
    "device_dtype_support",
    "dtype_policy",
    "is_installed",
    "reset_substitutions",
    "set_default_policy",
    "substitutions",
]

POLICIES = ("keep", "warn", "substitute")
SUBSTITUTES = {"float64": "float32", "bfloat16": "float16"}

# What each backend lacks or limits, by dtype name ("supported" when not listed): dtype_support.json.
@functools.lru_cache(maxsize=1)
def _backend_dtypes() -> dict[str, dict[str, dict[str, str]]]:
    from importlib import resources

    text = resources.files("ascend_compat.cuda_shim").joinpath("dtype_support.json").read_text("utf-8")
    return json.loads(text)["backends"]


class DtypePolicyWarning(UserWarning):
    """A dtype the device lacks was kept (``warn``) or replaced (``substitute``)."""


@dataclass(frozen=True)
class DtypeSupport:
    """One dtype's status on a device."""

    dtype: str
    status: str  # "supported" | "limited" | "unsupported"
    note: str
    source: str


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

                bf16 = (bool(torch.npu.is_bf16_supported()), "this NPU", "torch.npu.is_bf16_supported()")
            except Exception:  # a broken runtime: say nothing rather than guess
                bf16 = None
        if bf16 is not None and not bf16[0]:
            out["bfloat16"] = DtypeSupport("bfloat16", "unsupported", f"no bf16 compute on {bf16[1]}", bf16[2])
    return out


def _substitution_map(device_type: str) -> dict[Any, Any]:
    """torch dtype -> replacement, for the dtypes ``substitute`` replaces on ``device_type``."""
    import torch

    out = {}
    for name, sup in device_dtype_support(device_type).items():
        if name in SUBSTITUTES and sup.status in ("limited", "unsupported"):
            out[getattr(torch, name)] = getattr(torch, SUBSTITUTES[name])
    return out


# --- policy state ------------------------------------------------------------------------------------------------

_LOCK = threading.RLock()
_DEFAULT = "keep"
_CONTEXT: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("ascend_compat_dtype_policy", default=None)
_LEDGER = Ledger()
_OWNER: Optional[str] = None  # "activation" or "context" while patches are installed
_CONTEXT_DEPTH = 0
_SUBS: dict[Any, Any] = {}
_TARGETS: frozenset[str] = frozenset()
_COUNTS: Counter[tuple[str, str, str]] = Counter()  # (site, from, to) -> count
_WARNED: set[tuple[str, str, str]] = set()


def _check(policy: str) -> str:
    p = str(policy).strip().lower()
    if p not in POLICIES:
        raise ValueError(f"dtype policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    return p


def policy_from_env() -> Optional[str]:
    """``ASCEND_COMPAT_DTYPE_POLICY``, validated, or None when unset."""
    value = os.environ.get("ASCEND_COMPAT_DTYPE_POLICY", "").strip()
    if not value:
        return None
    try:
        return _check(value)
    except ValueError as exc:
        raise ValueError(f"ASCEND_COMPAT_DTYPE_POLICY: {exc}") from None


def current_policy() -> str:
    """The policy in force here: the innermost ``with dtype_policy(...)``, else the activation's."""
    return _CONTEXT.get() or _DEFAULT


def set_default_policy(policy: str) -> None:
    """Set the process-wide policy (what ``activate(dtype_policy=...)`` does)."""
    global _DEFAULT
    _DEFAULT = _check(policy)


def is_installed() -> bool:
    """True while the dtype checks are patched in."""
    return _OWNER is not None


def substitutions() -> list[dict[str, Any]]:
    """Each substitution (``substitute``) or kept dtype (``warn``): site, from, to, count; most frequent first."""
    rows = [{"site": s, "from": a, "to": b, "count": n} for (s, a, b), n in _COUNTS.items()]
    rows.sort(key=lambda r: (-r["count"], r["site"]))
    return rows


def reset_substitutions() -> None:
    """Forget counts and warned sites."""
    with _LOCK:
        _COUNTS.clear()
        _WARNED.clear()


# --- install / uninstall ---------------------------------------------------------------------------------------


def _shim_targets() -> Optional[frozenset[str]]:
    from ascend_compat import cuda_shim

    if cuda_shim.is_activated():
        backend = cuda_shim.active_backend()
        return frozenset({backend.device_type, "cuda"})
    return None


def _standalone_targets() -> frozenset[str]:
    sim = sys.modules.get("ascend_compat.simulate")
    if (sim is not None and sim.is_installed()) or "torch_npu" in sys.modules:
        return frozenset({"npu"})
    return frozenset()


def install(owner: str) -> bool:
    """Patch the dtype checks in for the current target (no-op when the target lacks nothing); True if patched."""
    global _OWNER, _SUBS, _TARGETS
    with _LOCK:
        if _OWNER is not None:
            if owner == "activation":
                _OWNER = owner
            return True
        targets = _shim_targets() if owner == "activation" else (_shim_targets() or _standalone_targets())
        if not targets:
            return False
        device = next(t for t in sorted(targets) if t != "cuda")
        subs = _substitution_map(device)
        if not subs:
            return False
        _SUBS, _TARGETS = subs, targets
        with _LEDGER.transaction():
            _apply(_LEDGER, subs)
        _OWNER = owner
        return True


def uninstall(owner: Optional[str] = None) -> None:
    """Restore every original (only if ``owner`` installed them, when given)."""
    global _OWNER
    with _LOCK:
        if _OWNER is None or (owner is not None and owner != _OWNER):
            return
        try:
            _LEDGER.restore()
        finally:
            _OWNER = None


def suspend_for_activation() -> None:
    """Called by ``activate()`` before the shim patches: context-owned checks come off so that they can go back
    on top of the shim's patches (the ledger order must stay last-in, first-out)."""
    uninstall("context")


def after_failed_activation() -> None:
    """Called by ``activate()`` when its patches failed: put back what :func:`suspend_for_activation` took off."""
    if _CONTEXT_DEPTH > 0 and _context_wants_patches():
        install("context")


# The policy in force before each activation: a nested ``activate(dtype_policy=...)`` lasts until its own
# ``deactivate()``, and the last ``deactivate()`` goes back to ``keep``.
_OUTER: list[str] = []


def after_activation(policy: Optional[str]) -> None:
    """Called by ``activate()`` (outermost and nested) after the shim patches: set this activation's policy (the
    outermost one defaults to ``ASCEND_COMPAT_DTYPE_POLICY``, a nested one to the policy in force) and patch in
    when it can apply."""
    with _LOCK:
        _OUTER.append(_DEFAULT)
        default = (policy_from_env() or "keep") if len(_OUTER) == 1 else _DEFAULT
        set_default_policy(policy or default)
        if _DEFAULT != "keep" or (_CONTEXT_DEPTH > 0 and _context_wants_patches()):
            install("activation")


def before_deactivation(last: bool) -> None:
    """Called by ``deactivate()`` before it restores anything: back to the policy of the enclosing activation; the
    last one takes the checks off (they sit on top of the shim's patches)."""
    with _LOCK:
        set_default_policy(_OUTER.pop() if _OUTER else "keep")
        if last:
            _OUTER.clear()
            set_default_policy("keep")
            uninstall()


def after_deactivation() -> None:
    """Called by the last ``deactivate()`` after the shim's originals are back: an open ``with dtype_policy(...)``
    block keeps its checks, now on their own."""
    if _CONTEXT_DEPTH > 0 and _context_wants_patches():
        install("context")


def _context_wants_patches() -> bool:
    return current_policy() != "keep"


@contextmanager
def dtype_policy(policy: str) -> Iterator[str]:
    """``with dtype_policy("substitute"):`` — the policy for this block (this thread/task), restored after it."""
    global _CONTEXT_DEPTH
    p = _check(policy)
    token = _CONTEXT.set(p)
    installed_here = False
    with _LOCK:
        _CONTEXT_DEPTH += 1
        if p != "keep" and _OWNER is None:
            installed_here = install("activation" if _shim_targets() else "context")
    try:
        yield p
    finally:
        _CONTEXT.reset(token)
        with _LOCK:
            _CONTEXT_DEPTH -= 1
            if installed_here and _CONTEXT_DEPTH == 0:
                uninstall("context")


# --- the checks --------------------------------------------------------------------------------------------------

_SKIP_DIRS: tuple[str, ...] = ()


def _site() -> tuple[str, int]:
    """The first frame outside torch and ascend_compat: where the user's code asked for the dtype."""
    global _SKIP_DIRS
    if not _SKIP_DIRS:
        import torch

        import ascend_compat

        _SKIP_DIRS = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(ascend_compat.__file__) + os.sep)
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_SKIP_DIRS):
        f = f.f_back
    if f is None:
        return "<unknown>", 0
    return f.f_code.co_filename, f.f_lineno


def _decide(dtype: Any, what: str) -> Optional[Any]:
    """Apply the policy to ``dtype`` landing on the device: the replacement dtype, or None to keep it."""
    policy = current_policy()
    sub = _SUBS.get(dtype)
    if policy == "keep" or sub is None:
        return None
    filename, lineno = _site()
    site = f"{filename}:{lineno}"
    src, dst = str(dtype).replace("torch.", ""), str(sub).replace("torch.", "")
    with _LOCK:
        _COUNTS[(site, src, dst if policy == "substitute" else src)] += 1
        first = (site, src, policy) not in _WARNED
        _WARNED.add((site, src, policy))
    if first:
        target = next(t for t in sorted(_TARGETS) if t != "cuda")
        if policy == "substitute":
            msg = f"ascend-compat dtype policy 'substitute': {src} -> {dst} for {what} ({src} is limited on {target})"
        else:
            msg = (f"ascend-compat dtype policy 'warn': {src} {what} on {target}, which has limited {src} support; "
                   f"the 'substitute' policy would use {dst}")
        warnings.warn_explicit(msg, DtypePolicyWarning, filename, lineno)
    return sub if policy == "substitute" else None


def _device_type(dev: Any) -> Optional[str]:
    if dev is None:
        return None
    if isinstance(dev, str):
        return dev.split(":", 1)[0]
    if isinstance(dev, int) and not isinstance(dev, bool):
        return "cuda"  # an ordinal means the accelerator
    return getattr(dev, "type", None)


def _wrap_to(inner: Callable[..., Any]) -> Callable[..., Any]:
    import torch

    parse = torch._C._nn._parse_to

    @functools.wraps(inner)
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if current_policy() == "keep":
            return inner(self, *args, **kwargs)
        try:
            device, dtype, non_blocking, memory_format = parse(*args, **kwargs)
        except Exception:  # let torch raise its own error for bad arguments
            return inner(self, *args, **kwargs)
        dev_type = device.type if device is not None else self.device.type
        if dev_type not in _TARGETS:
            return inner(self, *args, **kwargs)
        sub = _decide(dtype if dtype is not None else self.dtype, "Tensor.to")
        if sub is None:
            return inner(self, *args, **kwargs)
        extra: dict[str, Any] = {"non_blocking": non_blocking, "copy": bool(kwargs.get("copy", False))}
        if memory_format is not None:
            extra["memory_format"] = memory_format
        if device is None:
            return inner(self, sub, **extra)
        return inner(self, device, sub, **extra)  # a cuda device is mapped by the shim's Tensor.to below this one

    return to


def _wrap_move(inner: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``Tensor.cuda`` / ``Tensor.npu``: the tensor keeps its dtype on the way to the device."""
    import torch

    base_to = torch._C.TensorBase.to

    @functools.wraps(inner)
    def move(self: Any, *args: Any, **kwargs: Any) -> Any:
        if current_policy() != "keep" and self.dtype in _SUBS:
            sub = _decide(self.dtype, label)
            if sub is not None:
                return inner(base_to(self, sub), *args, **kwargs)
        return inner(self, *args, **kwargs)

    return move


def _wrap_cast(inner: Callable[..., Any], dtype: Any, label: str) -> Callable[..., Any]:
    """``Tensor.double`` / ``Tensor.bfloat16`` on a device tensor."""
    import torch

    base_to = torch._C.TensorBase.to

    @functools.wraps(inner)
    def cast(self: Any, *args: Any, **kwargs: Any) -> Any:
        if current_policy() != "keep" and self.device.type in _TARGETS:
            sub = _decide(dtype, label)
            if sub is not None:
                return base_to(self, sub)
        return inner(self, *args, **kwargs)

    return cast


def _wrap_factory(inner: Callable[..., Any], name: str) -> Callable[..., Any]:
    import torch

    base_to = torch._C.TensorBase.to

    @functools.wraps(inner)
    def factory(*args: Any, **kwargs: Any) -> Any:
        if current_policy() == "keep" or _device_type(kwargs.get("device")) not in _TARGETS:
            return inner(*args, **kwargs)
        dtype = kwargs.get("dtype")
        if dtype is not None:
            sub = _decide(dtype, f"torch.{name}(dtype=...)")
            if sub is not None:
                kwargs["dtype"] = sub
            return inner(*args, **kwargs)
        # dtype inferred (from data, fill value or the default dtype): check what came out.
        out = inner(*args, **kwargs)
        if isinstance(out, torch.Tensor) and out.dtype in _SUBS:
            sub = _decide(out.dtype, f"torch.{name}()")
            if sub is not None:
                # A cast of a requires_grad tensor is not a leaf: give back the leaf the caller asked for.
                cast = base_to(out.detach(), sub)
                return cast.requires_grad_(True) if out.requires_grad else cast
        return out

    return factory


def _apply(ledger: Ledger, subs: dict[Any, Any]) -> None:
    import torch

    from ascend_compat.cuda_shim.patches import FACTORIES

    tensor = torch.Tensor
    ledger.setattr(tensor, "to", _wrap_to(tensor.to), label="dtype policy: Tensor.to")
    for name in ("cuda", "npu"):
        if hasattr(tensor, name):
            ledger.setattr(tensor, name, _wrap_move(getattr(tensor, name), f"Tensor.{name}"),
                           label=f"dtype policy: Tensor.{name}")
    for name, dtype in (("double", torch.float64), ("bfloat16", torch.bfloat16)):
        if dtype in subs:
            ledger.setattr(tensor, name, _wrap_cast(getattr(tensor, name), dtype, f"Tensor.{name}"),
                           label=f"dtype policy: Tensor.{name}")
    for name in FACTORIES:  # torch.from_numpy takes no device: the move (Tensor.to/.cuda) is checked instead
        if not hasattr(torch, name):
            continue
        ledger.setattr(torch, name, _wrap_factory(getattr(torch, name), name), label=f"dtype policy: torch.{name}")
