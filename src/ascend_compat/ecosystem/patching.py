"""Library patches: each documents itself, applies only when its library is imported, and goes through the ledger.

A :class:`LibraryPatch` is data plus one ``apply`` function: why it exists, what it changes, the library versions
it was tested on, and the upstream issue or PR it works around. ``install()`` (called by ``activate()``) registers
a post-import hook per patch; when the library is imported the patch applies inside a ledger savepoint, so a patch
that fails part-way leaves nothing behind and never breaks the user's import. Deactivation restores the ledger,
which undoes every applied patch, and cancels the hooks still waiting.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Optional

from ascend_compat import _import_hooks
from ascend_compat.cuda_shim.ledger import Ledger

__all__ = ["PATCHES", "LibraryPatch", "install", "register", "status", "uninstall"]

log = logging.getLogger("ascend_compat")

# apply(ledger, module, backend) -> None; applies(backend) -> None when it should apply, else why it does not.
ApplyFn = Callable[[Ledger, ModuleType, Any], None]
WhenFn = Callable[[Any], Optional[str]]


@dataclass(frozen=True)
class LibraryPatch:
    """One documented patch of a third-party library."""

    name: str  # stable id, e.g. "transformers.cpu-flash-attention-fallback"
    library: str  # distribution name, for its version
    module: str  # the import that triggers it (a library's submodule when that is what is patched)
    why: str
    how: str
    tested: tuple[str, ...]  # versions it was tested on, e.g. ("transformers 5.23.0",)
    upstream: str  # issue/PR it works around, or why there is none
    apply: ApplyFn
    when: WhenFn

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "library": self.library,
            "module": self.module,
            "why": self.why,
            "how": self.how,
            "tested": list(self.tested),
            "upstream": self.upstream,
        }


PATCHES: list[LibraryPatch] = []
DROP_IN = "flash_attn.drop-in"
_LOCK = threading.RLock()
_STATUS: dict[str, str] = {}
_HOOKS: list[tuple[str, Callable[[ModuleType], None]]] = []


def register(patch: LibraryPatch) -> LibraryPatch:
    """Add a patch to the registry (ids are unique)."""
    if any(p.name == patch.name for p in PATCHES):
        raise ValueError(f"library patch {patch.name!r} is registered twice")
    PATCHES.append(patch)
    return patch


def _load_builtin() -> None:
    # Importing the modules registers their patches; none of them imports its library.
    from ascend_compat.ecosystem import deepspeed, transformers  # noqa: F401


def install(ledger: Ledger, backend: Any) -> None:
    """Register every applicable patch to apply when its library is imported (now, if it already is)."""
    _load_builtin()
    from ascend_compat.ecosystem import flash_attn_provider

    with _LOCK:
        reason = flash_attn_provider.wanted(backend)
        if reason is None:
            flash_attn_provider.provide(ledger)
            _STATUS[DROP_IN] = "provided: `import flash_attn` gives the NPU drop-in"
        else:
            _STATUS[DROP_IN] = f"not provided: {reason}"
        for patch in PATCHES:
            reason = patch.when(backend)
            if reason is not None:
                _STATUS[patch.name] = f"not needed: {reason}"
                continue
            _STATUS[patch.name] = f"waiting for `import {patch.module}`"
            hook = _make_hook(patch, ledger, backend)
            _HOOKS.append((patch.module, hook))
            _import_hooks.when_imported(patch.module, hook)


def _make_hook(patch: LibraryPatch, ledger: Ledger, backend: Any) -> Callable[[ModuleType], None]:
    def hook(module: ModuleType) -> None:
        try:
            with ledger.savepoint():
                patch.apply(ledger, module, backend)
        except Exception as exc:  # a broken patch must not break the user's import
            _STATUS[patch.name] = f"failed: {type(exc).__name__}: {exc}"
            log.warning("ascend-compat: patch %s failed and was rolled back: %s", patch.name, exc)
            return
        _STATUS[patch.name] = "applied"
        log.debug("ascend-compat: applied %s", patch.name)

    return hook


def uninstall() -> None:
    """Cancel the hooks still waiting (the ledger's restore undoes what was applied)."""
    with _LOCK:
        for module, hook in _HOOKS:
            _import_hooks.cancel(module, hook)
        _HOOKS.clear()
        _STATUS.clear()


def status() -> dict[str, str]:
    """Each registered patch's state in this process: applied / waiting / not needed / failed."""
    with _LOCK:
        return dict(_STATUS)


def only_on_npu(backend: Any) -> Optional[str]:
    """``when`` for patches that matter only when the target is an NPU."""
    return None if getattr(backend, "device_type", None) == "npu" else "the target is not an NPU"


def only_on_cpu_fallback(backend: Any) -> Optional[str]:
    """``when`` for patches that matter only on CPU fallback."""
    return None if getattr(backend, "name", None) == "cpu" else "only needed on CPU fallback"


