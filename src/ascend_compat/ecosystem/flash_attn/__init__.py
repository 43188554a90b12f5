"""A flash-attn 2 drop-in for Ascend NPUs, built on ``torch_npu.npu_fusion_attention``.

Under ``ascend_compat.activate()`` on an NPU (real or simulated), ``import flash_attn`` gives this package; it can
also be imported directly as ``ascend_compat.ecosystem.flash_attn`` (what ``ascend-compat port --mode native``
writes). It has only names the real package has: the seven attention functions, ``flash_attn_interface``,
``bert_padding`` and ``layers.rotary`` (``apply_rotary_emb`` and friends, ``RotaryEmbedding``). Semantics are
flash-attn ≥ 2.1's (bottom-right causal alignment); see ``flash_attn_interface`` for the mapping onto the NPU op.
"""

from __future__ import annotations

# The submodules are loaded with the package, so the rewrite of ``import flash_attn.bert_padding`` by ``port`` is
# ``import ascend_compat.ecosystem.flash_attn as flash_attn``: it binds no other name (an extra ``ascend_compat``
# binding would make that name local in a function that uses the global).
from ascend_compat.ecosystem.flash_attn import bert_padding, flash_attn_interface, layers  # noqa: F401
from ascend_compat.ecosystem.flash_attn.flash_attn_interface import (
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
    flash_attn_with_kvcache,
)
from ascend_compat.ecosystem.flash_attn.layers import rotary as _rotary  # loads flash_attn.layers.rotary

del _rotary  # the real package has no top-level `rotary`

# The flash-attn release whose Python API this drop-in follows; the local label says it is not the CUDA build.
__version__ = "2.8.3+ascendcompat"

__all__ = [
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
]
