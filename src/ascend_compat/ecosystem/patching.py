"""Library patches: each documents itself, applies only when its library is imported, and goes through the ledger.

A :class:`LibraryPatch` is data plus one ``apply`` function: why it exists, what it changes, the library versions
it was tested on, and the upstream issue or PR it works around. ``install()`` (called by ``activate()``) registers
a post-import hook per patch; when the library is imported the patch applies inside a ledger savepoint, so a patch
that fails part-way leaves nothing behind and never breaks the user's import. Deactivation restores the ledger,
which undoes every applied patch, and cancels the hooks still waiting.
"""

from __future__ import annotations

import importlib
import logging
import threading
from types import ModuleType
from typing import Any, Callable, Optional

from ascend_compat import _import_hooks
from ascend_compat.cuda_shim.ledger import Ledger

__all__ = ["PATCHES", "LibraryPatch", "apply_now", "install", "register", "status", "uninstall"]

log = logging.getLogger("ascend_compat")

# apply(ledger, module, backend) -> None; applies(backend) -> None when it should apply, else why it does not.
ApplyFn = Callable[[Ledger, ModuleType, Any], None]
WhenFn = Callable[[Any], Optional[str]]


class LibraryPatch:
    """One documented patch of a third-party library (immutable; keyword or positional fields, as a dataclass).

    A plain class rather than a frozen dataclass: building one costs about half a millisecond at import, and this
    module is imported by every ``activate()``.
    """

    # Declaration order (repr, equality, positional arguments).
    _FIELDS = ("name", "library", "module", "why", "how", "tested", "upstream", "apply", "when")
    __slots__ = _FIELDS
    name: str  # stable id, e.g. "transformers.cpu-flash-attention-fallback"
    library: str  # distribution name, for its version
    module: str  # the import that triggers it (a library's submodule when that is what is patched)
    why: str
    how: str
    tested: tuple[str, ...]  # versions it was tested on, e.g. ("transformers 5.23.0",)
    upstream: str  # issue/PR it works around, or why there is none
    apply: ApplyFn
    when: WhenFn

    def __init__(
        self,
        name: str,
        library: str,
        module: str,
        why: str,
        how: str,
        tested: tuple[str, ...],
        upstream: str,
        apply: ApplyFn,
        when: WhenFn,
    ) -> None:
        for field, value in zip(self._FIELDS, (name, library, module, why, how, tested, upstream, apply, when)):
            object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "LibraryPatch(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS) + ")"

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


def apply_now(library: str) -> dict[str, str]:
    """Apply ``library``'s waiting patches now instead of at its import: import the module each one patches, so
    its post-import hook applies it (in a ledger savepoint, as always). Patches already applied, not needed or
    failed are left as they are, so calling this again changes nothing. Returns the state of each of the library's
    patches; without ``install()`` (the shim inactive) nothing waits, and they read ``inactive``."""
    _load_builtin()
    mine = [p for p in PATCHES if p.library == library]
    with _LOCK:
        waiting = [p for p in mine if _STATUS.get(p.name, "").startswith("waiting")]
    for patch in waiting:
        try:
            importlib.import_module(patch.module)
        except ImportError as exc:
            with _LOCK:
                for module, hook in [h for h in _HOOKS if h[0] == patch.module]:
                    _import_hooks.cancel(module, hook)
                    _HOOKS.remove((module, hook))
                if isinstance(exc, ModuleNotFoundError) and exc.name == patch.module:  # an older release
                    _STATUS[patch.name] = f"not needed: this {patch.library} has no {patch.module}"
                else:
                    _STATUS[patch.name] = f"failed: `import {patch.module}` raised {type(exc).__name__}: {exc}"
    with _LOCK:
        return {p.name: _STATUS.get(p.name, "inactive") for p in mine}


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


