"""``transformers_patch.apply()``: the transformers patches of :mod:`ascend_compat.ecosystem.transformers`, now.

```python
import ascend_compat
ascend_compat.activate()

from ascend_compat.ecosystem import transformers_patch
transformers_patch.apply()
```

The shim already applies these patches by itself, each when the transformers module it patches is imported; this
is the explicit form for scripts that want them in place before they build a model. ``apply()``:

- activates the shim first when it is not active (as ``ascend_compat.activate()``; ``ascend_compat.deactivate()``
  undoes it, and the patches with it);
- imports the modules the waiting patches need, so each applies through its post-import hook, inside a savepoint of
  the shim's ledger (one mechanism: ``ascend-compat info`` and ``run --report`` show them the same way);
- is idempotent: a patch applies once; later calls return the same states.

What transformers already does on the NPU (device and hccl choice, so ``device_map="auto"`` places on npu; its own
NPU flash-attention path; ``flash_attention_2`` detection through the flash_attn drop-in the shim provides) is not
duplicated. What is patched: sliding-window / softcap flash attention on the NPU, and ``flash_attention_2`` →
``sdpa`` on CPU fallback (see :mod:`ascend_compat.ecosystem.transformers`).
"""

from __future__ import annotations

from ascend_compat._dist import version_of
from ascend_compat.ecosystem import patching

__all__ = ["LIBRARY", "apply", "patches", "status"]

LIBRARY = "transformers"


def patches() -> list[patching.LibraryPatch]:
    """The documented transformers patches (why, how, tested versions, upstream issue)."""
    patching._load_builtin()
    return [p for p in patching.PATCHES if p.library == LIBRARY]


def status() -> dict[str, str]:
    """Each transformers patch's state: applied / waiting / not needed / failed, or inactive (shim not active)."""
    states = patching.status()
    return {p.name: states.get(p.name, "inactive") for p in patches()}


def apply() -> dict[str, str]:
    """Apply the transformers patches now (activating the shim if needed); returns each patch's state.

    Raises ImportError when transformers is not installed. Where activation is a no-op (real CUDA, or
    ``ASCEND_COMPAT_NO_PATCH=1``) nothing is patched and every state says why."""
    if version_of(LIBRARY) is None:
        raise ImportError("ascend_compat.ecosystem.transformers_patch: transformers is not installed "
                          "(pip install transformers)")  # fmt: skip
    from ascend_compat import cuda_shim

    if not cuda_shim.is_activated():
        cuda_shim.activate()
        if not cuda_shim.is_activated():  # a no-op activation: give the reference back, patch nothing
            reason = cuda_shim.noop_reason() or "the shim is not active"
            cuda_shim.deactivate()
            return {p.name: f"inactive: {reason}" for p in patches()}
    return patching.apply_now(LIBRARY)
