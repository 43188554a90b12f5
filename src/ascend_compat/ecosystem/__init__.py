"""Layer 3: the libraries that hard-code CUDA (flash_attn, transformers, accelerate, DeepSpeed, vLLM, Triton).

Activation registers the library patches without importing them. :data:`TRIGGERS` is a small static table of the
built-in patches of :mod:`~ascend_compat.ecosystem.patching` (where each is documented and implemented): the import
that triggers each and the backends it applies to. :func:`install` waits for those imports, so ``patching`` (and
the patch's own module) loads only when a patched library is imported. Once ``patching`` is imported, its registry
is read instead (it may hold patches registered at run time). The patches' state (``patching.status()``) and the
hooks still waiting are kept here; deactivation cancels the hooks and forgets the state.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from ascend_compat.cuda_shim.ledger import Ledger

__all__ = ["DROP_IN", "TRIGGERS", "drop_in_wanted", "install", "only_on_cpu_fallback", "only_on_npu", "uninstall"]

#: The built-in library patches: name, the module whose import applies it, the backends it applies to ("npu" or
#: "cpu fallback"). A test keeps this equal to the patches declared in ``patching``.
TRIGGERS: tuple[tuple[str, str, str], ...] = (
    ("deepspeed.npu-cann-path-unset", "deepspeed.ops.op_builder.npu.builder", "npu"),
    ("transformers.npu-flash-attention-window", "transformers.integrations.npu_flash_attention", "npu"),
    ("transformers.cpu-flash-attention-fallback", "transformers.modeling_utils", "cpu fallback"),
    ("triton.npu-driver", "triton.runtime.driver", "npu"),
    ("triton.cpu-fallback-driver", "triton.runtime.driver", "cpu fallback"),
)

DROP_IN = "flash_attn.drop-in"
DROP_IN_TARGET = "ascend_compat.ecosystem.flash_attn"
#: flash-attn's own module names that the drop-in provides (anything else under flash_attn is not found).
DROP_IN_SUBMODULES = ("flash_attn_interface", "bert_padding", "layers", "layers.rotary")
DROP_IN_NAMES = frozenset({"flash_attn", *(f"flash_attn.{s}" for s in DROP_IN_SUBMODULES)})

_PATCHING = __name__ + ".patching"
_LOCK = threading.RLock()
_STATUS: dict[str, str] = {}  # patch name (or DROP_IN) -> its state in this process
_HOOKS: list[tuple[str, Callable[[ModuleType], None]]] = []  # (module awaited, its hook)


def only_on_npu(backend: Any) -> Optional[str]:
    """``when`` for patches that matter only when the target is an NPU."""
    return None if getattr(backend, "device_type", None) == "npu" else "the target is not an NPU"


def only_on_cpu_fallback(backend: Any) -> Optional[str]:
    """``when`` for patches that matter only on CPU fallback."""
    return None if getattr(backend, "name", None) == "cpu" else "only needed on CPU fallback"


_WHEN = {"npu": only_on_npu, "cpu fallback": only_on_cpu_fallback}


def drop_in_wanted(backend: Any) -> Optional[str]:
    """None when the flash_attn drop-in should be provided for this backend, else why not."""
    from ascend_compat import _setting

    if _setting("ASCEND_COMPAT_FLASH_ATTN") is False:  # unset: on
        return "ASCEND_COMPAT_FLASH_ATTN=0"
    if getattr(backend, "device_type", None) != "npu":
        return f"the target is {getattr(backend, 'device_type', 'unknown')}, not an NPU (no fused attention op)"
    return None


def _entries() -> list[tuple[str, str, Callable[[Any], Optional[str]]]]:
    """(name, module, when) of every registered patch: :data:`TRIGGERS` until ``patching`` is imported."""
    patching = sys.modules.get(_PATCHING)
    if patching is None:  # nothing can have registered a patch of its own
        return [(name, module, _WHEN[where]) for name, module, where in TRIGGERS]
    return [(p.name, p.module, p.when_function()) for p in patching.PATCHES]


def install(ledger: Ledger, backend: Any) -> None:
    """Register every applicable patch to apply when its library is imported (now, if it already is). Everything
    goes through ``ledger``: restoring it cancels the hooks still waiting and forgets the status."""
    from ascend_compat import _import_hooks

    with _LOCK:
        ledger.on_restore(uninstall, "library patches: hooks and status")
        reason = drop_in_wanted(backend)
        if reason is None:
            from ascend_compat.ecosystem.drop_in import provide_drop_in

            provide_drop_in(ledger)
            _STATUS[DROP_IN] = "provided: `import flash_attn` gives the NPU drop-in"
        else:
            _STATUS[DROP_IN] = f"not provided: {reason}"
        for name, module, when in _entries():
            reason = when(backend)
            if reason is not None:
                _STATUS[name] = f"not needed: {reason}"
                continue
            _STATUS[name] = f"waiting for `import {module}`"
            hook = _hook(name, ledger, backend)
            _HOOKS.append((module, hook))
            _import_hooks.when_imported(module, hook)


def _hook(name: str, ledger: Ledger, backend: Any) -> Callable[[ModuleType], None]:
    def hook(module: ModuleType) -> None:
        from ascend_compat.ecosystem import patching

        patching.apply_patch(name, ledger, module, backend)

    return hook


def uninstall() -> None:
    """Cancel the hooks still waiting (the ledger's restore undoes what was applied)."""
    from ascend_compat import _import_hooks

    with _LOCK:
        for module, hook in _HOOKS:
            _import_hooks.cancel(module, hook)
        _HOOKS.clear()
        _STATUS.clear()
