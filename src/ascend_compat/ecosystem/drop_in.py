"""The flash_attn drop-in's finder, put first on ``sys.meta_path`` at activation on an NPU.

Kept apart from :mod:`~ascend_compat.ecosystem.patching` so that activation elsewhere (CPU fallback) does not load
it. :class:`DropInFinder` answers ``flash_attn`` imports and metadata through
:class:`~ascend_compat.ecosystem.flash_attn_provider.FlashAttnFinder`, importing that module on the first question
about ``flash_attn``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any, Optional

from ascend_compat.cuda_shim.ledger import Ledger
from ascend_compat.ecosystem.patching import DROP_IN_NAMES, DROP_IN_TARGET

__all__ = ["DropInFinder", "forget_drop_in_modules", "provide_drop_in"]


def _provider() -> ModuleType:
    from ascend_compat.ecosystem import flash_attn_provider

    return flash_attn_provider


class DropInFinder:
    """First on ``sys.meta_path`` while the drop-in is provided: answers ``flash_attn`` imports and metadata through
    :class:`~ascend_compat.ecosystem.flash_attn_provider.FlashAttnFinder`, importing that module on the first
    question about ``flash_attn`` (every other name is answered at once: not ours)."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
                  ) -> Any:  # fmt: skip
        if fullname != "flash_attn" and not fullname.startswith("flash_attn."):
            return None
        return _provider().FlashAttnFinder().find_spec(fullname, path, target)

    def find_distributions(self, context: Any = None) -> Iterable[Any]:
        name = getattr(context, "name", None)
        if name is not None and name.replace("-", "_").lower() != "flash_attn":
            return []
        return _provider().FlashAttnFinder().find_distributions(context)  # type: ignore[no-any-return]

    def invalidate_caches(self) -> None:
        return None


def forget_drop_in_modules() -> None:
    """Drop the drop-in's ``flash_attn`` entries from ``sys.modules`` (the ledger runs this on restore)."""
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
    """Provide the drop-in through ``ledger``: the finder first on ``sys.meta_path`` (or, shadowing a real
    flash_attn, the provider's full path)."""
    if _real_flash_attn_present():  # shadowing a real package: the full path warns and hides its modules
        _provider().provide(ledger)
        return
    # No importlib.invalidate_caches() (a few hundred finders' caches after torch): nothing was cached about
    # flash_attn, which no finder found, and this finder comes first.
    ledger.on_restore(forget_drop_in_modules, "sys.modules: flash_attn drop-in")
    ledger.insert(sys.meta_path, DropInFinder(), 0, label="flash_attn drop-in finder")
