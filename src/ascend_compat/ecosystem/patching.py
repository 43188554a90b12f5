"""Library patches: each documents itself, applies only when its library is imported, and goes through the ledger.

A :class:`LibraryPatch` is data: why it exists, what it changes, the library versions it was tested on, the upstream
issue or PR it works around, the module whose import triggers it, and its ``apply`` function, given as a
``"module:function"`` path (or a callable). The built-in patches are declared here, at the end of this module;
``activate()`` does not import this module: it registers a post-import hook per patch from the static table
:data:`ascend_compat.ecosystem.TRIGGERS` (kept equal to these declarations by a test), so this module and a patch's
implementation (``ecosystem/transformers.py``, ``ecosystem/deepspeed.py``) are imported only when its library is.
When the library is imported the patch applies inside a ledger savepoint (:func:`apply_patch`), so a patch that
fails part-way (or whose implementation fails to import) leaves nothing behind and never breaks the user's import.
Deactivation restores the ledger, which undoes every applied patch, and cancels the hooks still waiting.

The flash_attn drop-in is the one exception that must be in place before any import: on an NPU, ``install()`` registers
the drop-in with the package's import finder (:mod:`~ascend_compat.ecosystem.drop_in`), which loads
:mod:`~ascend_compat.ecosystem.flash_attn_provider` on the first question about ``flash_attn`` (an import, or its
distribution metadata).
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ascend_compat import _import_hooks
from ascend_compat._value import FieldValue
from ascend_compat.cuda_shim.ledger import Ledger
from ascend_compat.ecosystem import (  # noqa: F401  (their home is the package, on activate()'s path)
    _HOOKS,
    _LOCK,
    _STATUS,
    DROP_IN,
    DROP_IN_NAMES,
    DROP_IN_SUBMODULES,
    DROP_IN_TARGET,
    drop_in_wanted,
    install,
    only_on_cpu_fallback,
    only_on_npu,
    uninstall,
)

__all__ = ["PATCHES", "LibraryPatch", "apply_now", "apply_patch", "drop_in_wanted", "install", "register", "status",
           "uninstall"]

log = logging.getLogger("ascend_compat")

# apply(ledger, module, backend) -> None; applies(backend) -> None when it should apply, else why it does not.
# Either may be given as a "package.module:function" path, imported when first called.
if TYPE_CHECKING:  # runtime aliases cost typing subscriptions on activate()'s path
    ApplyFn = Union[Callable[[Ledger, ModuleType, Any], None], str]
    WhenFn = Union[Callable[[Any], Optional[str]], str]


class LibraryPatch(FieldValue):
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

    def __hash__(self) -> int:  # frozen: hashable by value, as a frozen dataclass
        return hash(self._fields())

    def apply_function(self) -> Callable[[Ledger, ModuleType, Any], None]:
        """``apply`` as a function (importing its module when it is a ``"module:function"`` path)."""
        return _resolve(self.apply)  # type: ignore[no-any-return]

    def when_function(self) -> Callable[[Any], Optional[str]]:
        return _resolve(self.when)  # type: ignore[no-any-return]

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


def _resolve(target: Any) -> Any:
    if not isinstance(target, str):
        return target
    module, _, name = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


PATCHES: list[LibraryPatch] = []


def register(patch: LibraryPatch) -> LibraryPatch:
    """Add a patch to the registry (ids are unique)."""
    if any(p.name == patch.name for p in PATCHES):
        raise ValueError(f"library patch {patch.name!r} is registered twice")
    PATCHES.append(patch)
    return patch


def _load_builtin() -> None:
    """Kept for callers: the built-in patches are declared (as data) when this module is imported."""


def apply_patch(name: str, ledger: Ledger, module: ModuleType, backend: Any) -> None:
    """Apply the registered patch ``name`` to the just-imported ``module`` (its post-import hook, set by
    :func:`~ascend_compat.ecosystem.install`) inside a ledger savepoint: a failure is rolled back, logged and kept
    as its status, never raised into the user's import."""
    patch = next(p for p in PATCHES if p.name == name)
    try:
        with ledger.savepoint():
            patch.apply_function()(ledger, module, backend)
    except Exception as exc:  # a broken patch must not break the user's import
        _STATUS[name] = f"failed: {type(exc).__name__}: {exc}"
        log.warning("ascend-compat: patch %s failed and was rolled back: %s", name, exc)
        return
    _STATUS[name] = "applied"
    log.debug("ascend-compat: applied %s", name)


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


def __getattr__(name: str) -> Any:
    # The drop-in's registration lives in ecosystem/drop_in.py (imported on an NPU only); it stays reachable here.
    if name == "forget_drop_in_modules":
        from ascend_compat.ecosystem import drop_in

        return getattr(drop_in, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the built-in library patches: data only; each ``apply`` is imported when its library is ------------------------

TRANSFORMERS_TESTED = ("transformers 5.23.0",)
DEEPSPEED_TESTED = ("deepspeed 0.19.8",)
TRITON_TESTED = ("triton 3.9.0",)

register(
    LibraryPatch(
        name="deepspeed.npu-cann-path-unset",
        library="deepspeed",
        # The module that defines NPUOpBuilder, imported by NPU_Accelerator on its first create_op_builder call.
        # A source checkout that ships a top-level ``op_builder`` package uses op_builder.npu.builder instead and
        # is not covered.
        module="deepspeed.ops.op_builder.npu.builder",
        why="NPUOpBuilder.installed_cann_path reads os.environ['ASCEND_HOME_PATH'] when it is unset ('or' where "
        "'and' is meant), so deepspeed.init_distributed() and FusedAdam raise KeyError: 'ASCEND_HOME_PATH' on an "
        "NPU whose CANN set_env.sh was not sourced (torch_npu itself only warns then)",
        how="NPUOpBuilder.installed_cann_path returns ASCEND_HOME_PATH when it is set and exists, else None (which "
        "init_distributed and FusedAdam handle); the ops that compile against CANN (cpu_adam for ZeRO-Offload, "
        "cpu_adagrad, cpu_lion, async_io) then fail with an error naming ASCEND_HOME_PATH instead of a TypeError "
        "on None (include_paths, cxx_args, extra_ldflags)",
        tested=DEEPSPEED_TESTED,
        upstream="none found; the same condition is in deepspeed/env_report.py (ds_report), not patched here",
        apply="ascend_compat.ecosystem.deepspeed:_apply_cann_path",
        when=only_on_npu,
    )
)

register(
    LibraryPatch(
        name="transformers.npu-flash-attention-window",
        library="transformers",
        module="transformers.integrations.npu_flash_attention",
        why="transformers' NPU flash-attention functions declare no window_size/softcap, so transformers drops the "
        "sliding window silently (wrong outputs past the window) and rejects softcap on the NPU",
        how="npu_flash_attn_func / npu_flash_attn_varlen_func gain window_size and softcap; calls that use them go "
        "to the flash_attn drop-in (sparse_mode 4 band on npu_fusion_attention; softcap in plain torch)",
        tested=TRANSFORMERS_TESTED,
        upstream="none found (transformers integrations/npu_flash_attention.py has no window support)",
        apply="ascend_compat.ecosystem.transformers:_apply_window",
        when=only_on_npu,
    )
)

register(
    LibraryPatch(
        name="transformers.cpu-flash-attention-fallback",
        library="transformers",
        module="transformers.modeling_utils",
        why="on CPU fallback no flash attention exists, and attn_implementation='flash_attention_2' raises an "
        "ImportError at model creation",
        how="PreTrainedModel._check_and_adjust_attn_implementation asks for 'sdpa' instead, with one warning",
        tested=TRANSFORMERS_TESTED,
        upstream="not a transformers bug: the fallback is ascend-compat's choice for unchanged scripts",
        apply="ascend_compat.ecosystem.transformers:_apply_cpu_fallback",
        when=only_on_cpu_fallback,
    )
)

register(
    LibraryPatch(
        name="triton.npu-driver",
        library="triton",
        module="triton.runtime.driver",
        why="triton picks the backend whose driver says it is active, and the CUDA driver asks "
        "torch.cuda.is_available(), which the shim answers True: with the community wheel on an NPU a kernel "
        "launch fails with AssertionError: libcuda.so cannot found!, and beside an Ascend backend two drivers "
        "claim the device",
        how="triton.runtime.driver._create_driver returns the Ascend backend's driver when it is active; without "
        "an Ascend backend it raises a RuntimeError naming the installed build and how to install triton-ascend; "
        "TRITON_DEFAULT_BACKEND is left to triton",
        tested=TRITON_TESTED,
        upstream="not a triton bug: the CUDA driver's question is answered by the shim",
        apply="ascend_compat.ecosystem.triton:_apply_driver",
        when=only_on_npu,
    )
)

register(
    LibraryPatch(
        name="triton.cpu-fallback-driver",
        library="triton",
        module="triton.runtime.driver",
        why="on CPU fallback the shim also answers torch.cuda.is_available() True, so the community wheel's CUDA "
        "driver claims the CPU tensors and a kernel launch fails with AssertionError: libcuda.so cannot found!",
        how="triton.runtime.driver._create_driver returns triton's CPU backend's driver (triton-cpu) when it is "
        "installed and active, else raises a RuntimeError saying Triton kernels cannot run on the CPU fallback; "
        "TRITON_DEFAULT_BACKEND is left to triton",
        tested=TRITON_TESTED,
        upstream="not a triton bug: the CUDA driver's question is answered by the shim",
        apply="ascend_compat.ecosystem.triton:_apply_cpu_driver",
        when=only_on_cpu_fallback,
    )
)
