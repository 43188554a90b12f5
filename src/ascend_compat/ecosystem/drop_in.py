"""The flash_attn drop-in, provided at activation on an NPU through the package's one import finder.

Kept apart from :mod:`ascend_compat.ecosystem` so that activation elsewhere (CPU fallback) does not load
it. :func:`provide_drop_in` registers ``flash_attn`` with :mod:`ascend_compat._import_hooks` (mode "replace") by a
``"module:function"`` factory, so :mod:`~ascend_compat.ecosystem.flash_attn_provider` is imported only on the first
question about ``flash_attn`` (an import, or its distribution metadata).
"""

from __future__ import annotations

import sys

from ascend_compat import _import_hooks
from ascend_compat.cuda_shim.ledger import Ledger
from ascend_compat.ecosystem import DROP_IN_NAMES, DROP_IN_TARGET  # not .patching: activation never loads it

__all__ = ["PROVIDER", "forget_drop_in_modules", "provide_drop_in"]

#: The drop-in's provider factory, for :func:`ascend_compat._import_hooks.provide`.
PROVIDER = "ascend_compat.ecosystem.flash_attn_provider:provider"


def forget_drop_in_modules() -> None:
    """Drop the drop-in's ``flash_attn`` entries from ``sys.modules`` (the provider's ``forget``, on withdrawal)."""
    for name in list(sys.modules):
        if name in DROP_IN_NAMES and getattr(sys.modules[name], "__name__", "").startswith(DROP_IN_TARGET):
            del sys.modules[name]


def _real_flash_attn_present() -> bool:
    """A flash_attn module imported or importable before the drop-in (a CUDA build), which provide() reports."""
    if any(name in sys.modules for name in DROP_IN_NAMES):
        return True
    import importlib.util

    try:
        return importlib.util.find_spec("flash_attn") is not None
    except (ImportError, ValueError):
        return True


def provide_drop_in(ledger: Ledger) -> None:
    """Provide the drop-in through ``ledger`` (or, shadowing a real flash_attn, the provider's full path)."""
    if _real_flash_attn_present():  # shadowing a real package: the full path warns and hides its modules
        from ascend_compat.ecosystem import flash_attn_provider

        flash_attn_provider.provide(ledger)
        return
    # No importlib.invalidate_caches() (a few hundred finders' caches after torch): nothing was cached about
    # flash_attn, which no finder found, and the package finder comes first.
    _import_hooks.provide("flash_attn", PROVIDER, ledger=ledger, metadata=True, label="flash_attn drop-in")
