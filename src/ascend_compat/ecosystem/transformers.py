"""transformers patches. What transformers already does on the NPU is left alone (see ``natively_handled``).

transformers picks the NPU and hccl itself when torch_npu is importable, and ships its own NPU flash-attention
path (``integrations/npu_flash_attention.py``, bottom-right causal by default). Two gaps remain, patched here:

- ``transformers.npu-flash-attention-window``: that NPU path declares no ``window_size`` or ``softcap``
  parameter, and transformers passes only the parameters a flash function declares, so sliding-window models
  (Mistral, Qwen2 with ``use_sliding_window``, Gemma 2) silently attend to the whole context on the NPU, and
  softcap raises. The patch gives the two functions those parameters and sends calls that use them to the
  flash_attn drop-in (band mask on the NPU op); other calls go to transformers' own function unchanged.
- ``transformers.cpu-flash-attention-fallback``: on CPU fallback there is no flash attention at all, and
  ``attn_implementation="flash_attention_2"`` raises at model creation. The patch asks for ``sdpa`` instead,
  with one warning, so the unchanged script still runs.

The patches are declared (why, how, tested versions, upstream) in :mod:`ascend_compat.ecosystem.patching`, which
names the ``_apply_*`` functions here by path: this module is imported only when transformers is.
"""

from __future__ import annotations

import functools
import logging
import warnings
from types import ModuleType
from typing import Any, Callable

from ascend_compat._dist import version_of
from ascend_compat.cuda_shim.ledger import Ledger
from ascend_compat.ecosystem.patching import TRANSFORMERS_TESTED

log = logging.getLogger("ascend_compat")
TESTED = TRANSFORMERS_TESTED


def natively_handled() -> list[str]:
    """What the installed transformers does on the NPU by itself (for ``ascend-compat info``)."""
    import importlib.util

    if version_of("transformers") is None:
        return []
    notes = ["device and hccl selection when torch_npu is importable (through accelerate's state)"]
    if importlib.util.find_spec("transformers.integrations.npu_flash_attention") is not None:
        notes.append("attn_implementation='flash_attention_2' on the NPU (integrations/npu_flash_attention.py)")
    return notes


def _is_flash(name: Any) -> bool:
    return isinstance(name, str) and name.startswith("flash_attention")


def _windowed(original: Callable[..., Any], dropin: Callable[..., Any], varlen: bool) -> Callable[..., Any]:
    """A version of transformers' NPU flash function that also takes window_size and softcap."""
    if varlen:

        @functools.wraps(original)
        def npu_flash_attn_varlen_func(
            q: Any, k: Any, v: Any, cu_seqlens_q: Any, cu_seqlens_k: Any, max_seqlen_q: Any = None,
            max_seqlen_k: Any = None, dropout_p: float = 0.0, softmax_scale: Any = None, causal: bool = False,
            window_size: Any = (-1, -1), softcap: Any = None, **kwargs: Any,
        ) -> Any:  # fmt: skip
            if tuple(window_size) == (-1, -1) and not softcap:
                return original(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                softmax_scale, causal, **kwargs)  # fmt: skip
            return dropin(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale,
                          causal, tuple(window_size), float(softcap or 0.0))  # fmt: skip

        # transformers reads the declared parameters with inspect.signature, which would follow __wrapped__.
        del npu_flash_attn_varlen_func.__wrapped__  # type: ignore[attr-defined]
        return npu_flash_attn_varlen_func

    @functools.wraps(original)
    def npu_flash_attn_func(
        q: Any, k: Any, v: Any, dropout_p: float = 0.0, softmax_scale: Any = None, causal: bool = False,
        window_size: Any = (-1, -1), softcap: Any = None, **kwargs: Any,
    ) -> Any:  # fmt: skip
        if tuple(window_size) == (-1, -1) and not softcap:
            return original(q, k, v, dropout_p, softmax_scale, causal, **kwargs)
        return dropin(q, k, v, dropout_p, softmax_scale, causal, tuple(window_size), float(softcap or 0.0))

    del npu_flash_attn_func.__wrapped__  # type: ignore[attr-defined]
    return npu_flash_attn_func


def _apply_window(ledger: Ledger, module: ModuleType, backend: Any) -> None:
    from ascend_compat.ecosystem.flash_attn import flash_attn_func, flash_attn_varlen_func

    fixed = _windowed(module.npu_flash_attn_func, flash_attn_func, varlen=False)
    fixed_varlen = _windowed(module.npu_flash_attn_varlen_func, flash_attn_varlen_func, varlen=True)
    ledger.setattr(module, "npu_flash_attn_func", fixed, label="transformers NPU flash attention: window/softcap")
    ledger.setattr(module, "npu_flash_attn_varlen_func", fixed_varlen, label="transformers NPU varlen: window/softcap")


_WARNED = False


def _apply_cpu_fallback(ledger: Ledger, module: ModuleType, backend: Any) -> None:
    cls = module.PreTrainedModel
    original = cls.__dict__["_check_and_adjust_attn_implementation"]

    @functools.wraps(original)
    def _check_and_adjust_attn_implementation(self: Any, attn_implementation: Any, *args: Any, **kwargs: Any) -> Any:
        global _WARNED
        if _is_flash(attn_implementation):
            if not _WARNED:
                _WARNED = True
                warnings.warn(
                    f"ascend-compat: attn_implementation={attn_implementation!r} needs an NPU or a CUDA GPU; "
                    "running on CPU fallback with 'sdpa' instead",
                    RuntimeWarning,
                    stacklevel=3,
                )
            attn_implementation = "sdpa"
        return original(self, attn_implementation, *args, **kwargs)

    ledger.setattr(cls, "_check_and_adjust_attn_implementation", _check_and_adjust_attn_implementation,
                   label="transformers: flash attention → sdpa on CPU fallback")  # fmt: skip
