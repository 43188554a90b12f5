"""The runtime shim: unchanged CUDA PyTorch code runs on the detected backend (NPU, other accelerators, CPU).

``activate()`` / ``deactivate()`` / ``with activated():`` are reference counted; the first activation applies the
core patches (:mod:`~ascend_compat.cuda_shim.core_patches`, documented data) and registers the library patches,
all through one :class:`~ascend_compat.cuda_shim.ledger.Ledger`, atomically and with SIGINT deferred; the last
deactivation restores every original exactly. The wrappers redirect only while ``TARGET.active`` is set (last on
activation, first off on deactivation): other threads, and references kept across ``deactivate()``, see the old
behaviour or the new one, never a mix. With real CUDA or ROCm present, activation is a no-op.

The dtype policy (:mod:`~ascend_compat.cuda_shim.dtype_policy`) and the fallback monitor are hooks and child
scopes of the same ledger (:func:`package_ledger`): one wrapper per patched attribute, whatever is in force.

Environment (:mod:`ascend_compat.settings`): ``ASCEND_COMPAT_NO_PATCH=1`` (activation does nothing),
``ASCEND_COMPAT_BACKEND`` (override detection), ``ASCEND_COMPAT_CUDA_AVAILABLE=auto|true|false``,
``ASCEND_COMPAT_CUDA_CAPABILITY`` (default 8.0), ``ASCEND_COMPAT_LOG_LEVEL=DEBUG``,
``ASCEND_COMPAT_DTYPE_POLICY=keep|warn|substitute`` (dtypes the device lacks).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from ascend_compat import _setting
from ascend_compat.cuda_shim import devices
from ascend_compat.cuda_shim.ledger import Ledger, signals_deferred

__all__ = ["activate", "activated", "active_backend", "deactivate", "is_activated", "redirect_counts"]

log = logging.getLogger("ascend_compat")
_LOCK = threading.RLock()
_DEPTH = 0
_LEDGER = Ledger()
_BACKEND: Any = None  # the BackendInfo subclass in use
_NOOP_REASON: Optional[str] = None
_DTYPES_MODULE = "ascend_compat.cuda_shim.dtype_policy"


def _configure_logging() -> None:
    level = _setting("ASCEND_COMPAT_LOG_LEVEL")
    if level:
        logging.basicConfig()
        log.setLevel(level)
        devices.DEBUG = level == "DEBUG"


def _no_patch() -> bool:
    return bool(_setting("ASCEND_COMPAT_NO_PATCH"))


def package_ledger() -> Ledger:
    """The package's one ledger: the shim's activation; the dtype policy's checks and the fallback monitor are
    child scopes of it (see :mod:`~ascend_compat.cuda_shim.ledger`)."""
    return _LEDGER


def activate(backend: Optional[str] = None, *, dtype_policy: Optional[str] = None) -> Optional[str]:
    """Activate the shim (nested calls are counted); returns the target device type, or None for a no-op.

    ``dtype_policy``: ``keep`` (default), ``warn`` or ``substitute`` (see :mod:`ascend_compat.cuda_shim.dtype_policy`;
    default from ``ASCEND_COMPAT_DTYPE_POLICY``). Atomic: when it raises (KeyboardInterrupt included), nothing of
    it stays applied (a Ctrl-C arriving during the call is delivered after this activation is undone).
    """
    global _DEPTH, _NOOP_REASON
    _configure_logging()
    dtypes = _dtype_module(dtype_policy)
    if dtypes is not None:  # bad names fail before anything is patched
        dtype_policy = dtypes._check(dtype_policy) if dtype_policy is not None else None
        dtypes.policy_from_env()
    if not _no_patch():
        # Importing torch runs post-import hooks: ASCEND_COMPAT_AUTO_ACTIVATE's activation completes there first,
        # and this call then nests inside it (run under the lock, it would detect its own patched torch.cuda).
        import torch  # noqa: F401
    with _LOCK, signals_deferred() as guard:
        if _DEPTH > 0:
            _DEPTH += 1
            guard.rollback = deactivate  # a Ctrl-C meanwhile: this activation is undone before it is delivered
        elif _no_patch():
            _NOOP_REASON, _DEPTH = "ASCEND_COMPAT_NO_PATCH is set", 1
            guard.rollback = deactivate
            return None
        else:
            if len(_LEDGER):  # an earlier restore failed part-way: retry it before patching anything again
                _LEDGER.restore()
            _first_activation(backend)
            guard.rollback = deactivate
        if _BACKEND is None:
            return None
        if dtypes is not None:
            try:
                dtypes.enter_activation(dtype_policy)
            except Exception as exc:  # the dtype checks are an extra: the redirection itself works without them
                log.warning("ascend-compat: dtype policy not applied: %s", exc)
        target: str = _BACKEND.device_type
        return target


def _first_activation(backend: Optional[str]) -> None:
    global _DEPTH, _BACKEND, _NOOP_REASON
    if _setting("ASCEND_COMPAT_SIMULATE"):
        from ascend_compat import simulate

        simulate.install_from_env()
    from ascend_compat import backends

    found = backends.detect(backend)
    if found.backend is None:
        _NOOP_REASON, _DEPTH = found.reason, 1
        log.info("ascend-compat: %s", found.reason)
        return
    chosen = found.backend
    chosen.load()
    from ascend_compat import ecosystem  # the library patches, as a table (their modules load with the libraries)
    from ascend_compat.cuda_shim import core_patches

    with _LEDGER.transaction():
        core_patches.apply(_LEDGER, chosen)
        ecosystem.install(_LEDGER, chosen)
        _LEDGER.setattr(devices.TARGET, "active", True, label="shim active")  # last: every wrapper switches
    _BACKEND, _NOOP_REASON, _DEPTH = chosen, None, 1
    log.info("ascend-compat: redirecting CUDA to %s (%s)", chosen.device_type, found.reason)


def _dtype_module(requested: Optional[str]) -> Any:
    """The dtype-policy module, or None when no policy can be in play (saves importing it on every activation).

    Until something imports it (a ``dtype_policy=`` argument, ``ASCEND_COMPAT_DTYPE_POLICY``, ``with
    dtype_policy(...)``, the report), its state is the default: policy ``keep``, no checks, no open block, so
    there is nothing for activation or deactivation to tell it.
    """
    module = sys.modules.get(_DTYPES_MODULE)
    if module is None and (requested is not None or _setting("ASCEND_COMPAT_DTYPE_POLICY")):
        from ascend_compat.cuda_shim import dtype_policy as module
    return module


def deactivate() -> None:
    """Undo one activation; the last one restores every original exactly. If a restore fails, what could not be
    restored stays recorded, and calling ``deactivate()`` (or ``activate()``) again retries it."""
    global _DEPTH, _BACKEND
    with _LOCK, signals_deferred():
        if _DEPTH == 0:
            if len(_LEDGER):
                _LEDGER.restore()
            return
        _DEPTH -= 1
        dtypes = sys.modules.get(_DTYPES_MODULE)  # never imported: nothing of it to undo
        if _BACKEND is not None and dtypes is not None:
            dtypes.exit_activation(last=_DEPTH == 0)
        if _DEPTH == 0:
            try:
                _LEDGER.restore()
            finally:
                _BACKEND = None
                devices.reset_caches()


@contextmanager
def activated(backend: Optional[str] = None) -> Iterator[Optional[str]]:
    """``with activated():`` — activate for the block, restore after it."""
    target = activate(backend)
    try:
        yield target
    finally:
        deactivate()


def is_activated() -> bool:
    """True while at least one activation is open and patches are applied."""
    return _DEPTH > 0 and _BACKEND is not None


def active_backend() -> Optional[type]:
    return _BACKEND


def noop_reason() -> Optional[str]:
    return _NOOP_REASON


def redirect_counts() -> dict[str, int]:
    """How often each redirection ran (counted only while reporting is on: ``run --report``)."""
    return dict(devices.COUNTS)


def set_reporting(on: bool) -> None:
    devices.REPORTING = on
