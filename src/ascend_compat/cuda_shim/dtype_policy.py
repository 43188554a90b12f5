"""dtype policy: what to do when code puts a dtype on the device that the device does not (fully) support.

Ascend NPUs have no float64 compute on the AI Core (float64 operators run slowly on the AI CPU or not at all) and
the 310P has no bfloat16. CUDA code uses both freely. Policies:

* ``keep`` (default): change nothing, never touch numerics silently.
* ``warn``: warn once per call site where such a dtype lands on the device; values unchanged.
* ``substitute``: float64 -> float32 and (where the chip has none) bfloat16 -> float16 at those places, one
  warning per call site, counted for ``ascend-compat run --report`` (:func:`substitutions`).

Select at activation (``cuda_shim.activate(dtype_policy=...)``, ``ASCEND_COMPAT_DTYPE_POLICY``,
``ascend-compat run --dtype-policy``) or for a block (``with dtype_policy("substitute"):``, also without the shim,
for code that names the ``npu`` device itself).

Where a dtype is checked: ``Tensor.to`` (so ``Module.to`` too), ``Tensor.cuda``/``Tensor.npu`` (so
``Module.cuda``), ``Tensor.double``/``Tensor.bfloat16`` on the device (so ``Module.double``/``bfloat16``), and the
tensor factories given a device (``dtype=`` replaced before creation; a float64 inferred from data or from the
default dtype is cast after it). Not checked: ops that compute in float64 from device tensors given
``dtype=`` (``x.sum(dtype=torch.float64)``), ``Tensor.type(...)``, and ``torch.set_default_device`` factories
without ``device=``.

How: the checks (:mod:`~ascend_compat.cuda_shim.dtype_checks`) are a hook the shim's own wrappers call, in force
only while a non-``keep`` policy can apply and the device lacks a dtype. They are a scope of the package's ledger:
installed by the first block or activation that needs them, sharing the shim's wrappers (one per attribute), and
restored exactly; a block that ends under an activation leaves them to it (they end with its last deactivation).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from ascend_compat import cuda_shim
from ascend_compat.cuda_shim import dtype_checks, patches
from ascend_compat.cuda_shim.devices import TARGET
from ascend_compat.cuda_shim.dtype_checks import DtypePolicyWarning, DtypeSupport, device_dtype_support
from ascend_compat.cuda_shim.ledger import Ledger

__all__ = [
    "POLICIES",
    "DtypePolicyWarning",
    "DtypeSupport",
    "current_policy",
    "device_dtype_support",
    "dtype_policy",
    "is_installed",
    "reset_substitutions",
    "set_default_policy",
    "substitutions",
]

POLICIES = ("keep", "warn", "substitute")

# The activation's policy, and the policy before each nested activation: a nested ``activate(dtype_policy=...)``
# lasts until its own ``deactivate()``, and the last ``deactivate()`` goes back to ``keep``.
_DEFAULT = "keep"
_OUTER: list[str] = []
_CONTEXT: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("ascend_compat_dtype_policy", default=None)
_LOCK = cuda_shim._LOCK  # one lock for activation and policy state: no order to get wrong between two
_BLOCKS = 0  # open ``with dtype_policy(...)`` blocks, every thread
_SCOPE: Optional[Ledger] = None  # the checks' scope while blocks own it (an activation's goes with the shim's)


def _check(policy: str) -> str:
    p = str(policy).strip().lower()
    if p not in POLICIES:
        raise ValueError(f"dtype policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    return p


def policy_from_env() -> Optional[str]:
    """``ASCEND_COMPAT_DTYPE_POLICY``, validated, or None when unset."""
    from ascend_compat import settings

    return settings.DTYPE_POLICY.get()


def current_policy() -> str:
    """The policy in force here: the innermost ``with dtype_policy(...)``, else the activation's."""
    return _CONTEXT.get() or _DEFAULT


def set_default_policy(policy: str) -> None:
    """Set the process-wide policy (what ``activate(dtype_policy=...)`` does)."""
    global _DEFAULT
    _DEFAULT = _check(policy)


def is_installed() -> bool:
    """True while the dtype checks are in force."""
    return patches.DTYPE_HOOK is not None


def substitutions() -> list[dict[str, Any]]:
    """Each substitution (``substitute``) or kept dtype (``warn``): site, from, to, count; most frequent first."""
    rows: list[dict[str, Any]] = [
        {"site": s, "from": a, "to": b, "count": n} for (s, a, b), n in dtype_checks.COUNTS.items()
    ]
    rows.sort(key=lambda r: (-r["count"], r["site"]))
    return rows


def reset_substitutions() -> None:
    """Forget counts and warned sites."""
    with dtype_checks._COUNT_LOCK:
        dtype_checks.COUNTS.clear()
        dtype_checks.WARNED.clear()


# --- lifetimes -----------------------------------------------------------------------------------------------------


def _install() -> Optional[Ledger]:
    """Put the checks in force, as a new scope of the package ledger; None when the device watched lacks nothing
    (CPU fallback), or when they are in force already."""
    if is_installed():
        return None
    device = TARGET.device_type if cuda_shim.is_activated() else dtype_checks.standalone_device()
    if device is None or not dtype_checks.substitution_map(device):
        return None
    import torch

    _default_device_constructors()
    scope = cuda_shim._LEDGER.child()
    with scope.transaction():
        scope.setattr(patches, "DTYPE_HOOK", dtype_checks.DtypeHook(current_policy), "dtype policy: checks")
        sites = patches.move_sites(torch) + patches.factory_sites(torch) + dtype_checks.policy_sites(torch)
        for owner, name, wrapper in sites:
            scope.setattr(owner, name, wrapper, f"dtype policy: {getattr(owner, '__name__', owner)}.{name}")
    return scope


def _default_device_constructors() -> None:
    """torch caches, on first use, which functions a default device applies to: fill it with torch's own
    factories before the checks wrap them (the shim does the same for its own patches)."""
    import torch.utils._device

    torch.utils._device._device_constructors()


def enter_activation(policy: Optional[str]) -> None:
    """Called by ``activate()`` (outermost and nested) once the shim is in force: this activation's policy (the
    outermost defaults to ``ASCEND_COMPAT_DTYPE_POLICY``, a nested one to the policy in force), and the checks when
    it can apply; checks put in force here end with the shim's last deactivation."""
    global _DEFAULT
    with _LOCK:
        _OUTER.append(_DEFAULT)
        default = (policy_from_env() or "keep") if len(_OUTER) == 1 else _DEFAULT
        _DEFAULT = _check(policy or default)
        if current_policy() != "keep":
            scope = _install()
            if scope is not None:
                scope.hand_over(cuda_shim._LEDGER)


def exit_activation(last: bool) -> None:
    """Called by ``deactivate()``: back to the policy of the enclosing activation (``keep`` after the last)."""
    global _DEFAULT
    with _LOCK:
        _DEFAULT = _OUTER.pop() if _OUTER else "keep"
        if last:
            _OUTER.clear()
            _DEFAULT = "keep"


@contextmanager
def dtype_policy(policy: str) -> Iterator[str]:
    """``with dtype_policy("substitute"):`` — the policy for this block (this thread/task), restored after it."""
    global _BLOCKS, _SCOPE
    p = _check(policy)
    token = _CONTEXT.set(p)
    try:
        with _LOCK:
            _BLOCKS += 1
            if p != "keep" and _SCOPE is None:
                _SCOPE = _install()  # atomic: when it raises, the block ends here having changed nothing
        yield p
    finally:
        _CONTEXT.reset(token)
        with _LOCK:
            _BLOCKS -= 1
            if _BLOCKS == 0 and _SCOPE is not None:
                scope, _SCOPE = _SCOPE, None
                if cuda_shim.is_activated():
                    scope.hand_over(cuda_shim._LEDGER)  # blocks in a loop under the shim patch torch once
                else:
                    scope.restore()
