"""DeepSpeed patches. What DeepSpeed already does on the NPU is left alone (see ``natively_handled``).

DeepSpeed's accelerator abstraction picks ``NPU_Accelerator`` (device ``npu``, backend ``hccl``) whenever torch_npu
is importable, ``init_distributed()`` then initialises torch.distributed with hccl, and its NPU op builders need no
compilation for FusedAdam (``NPUFusedAdam`` calls ``torch._fused_adamw_``). One gap remains, patched here:

- ``deepspeed.npu-cann-path-unset``: ``NPUOpBuilder.installed_cann_path`` tests
  ``"ASCEND_HOME_PATH" in os.environ or os.path.exists(os.environ["ASCEND_HOME_PATH"])`` (``or`` where ``and`` is
  meant), so with ``ASCEND_HOME_PATH`` unset every NPU op builder's constructor raises ``KeyError``. torch_npu
  itself only warns when the variable is unset (``_cann_package_check``), so a working torch_npu without CANN's
  ``set_env.sh`` sourced is possible, and then ``deepspeed.init_distributed()`` fails: ``TorchBackend`` builds the
  shared-memory comm op's builder (``NotImplementedBuilder`` on NPU) at every initialisation, and the default
  ``"optimizer": {"type": "AdamW"}`` builds ``FusedAdamBuilder``. The patch returns the path only when it is set
  and exists, else None, which the builders already handle ("ascend_cann is missing, npu ops cannot be compiled",
  and FusedAdam still loads: it compiles nothing on NPU). The ops that do compile on the NPU (``cpu_adam`` for
  ZeRO-Offload, ``cpu_adagrad``, ``cpu_lion``, ``async_io``) join that path into their include and library flags,
  where None failed as ``TypeError: expected str, bytes or os.PathLike object, not NoneType``; with the patch their
  build fails with an error naming ``ASCEND_HOME_PATH`` instead.

The patch is declared in :mod:`ascend_compat.ecosystem.patching`, which names ``_apply_cann_path`` by path: this
module is imported only when DeepSpeed's NPU op builder is.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any, Optional

from ascend_compat import settings
from ascend_compat._dist import version_of
from ascend_compat.cuda_shim.ledger import Ledger
from ascend_compat.ecosystem.patching import DEEPSPEED_TESTED

TESTED = DEEPSPEED_TESTED


def natively_handled() -> list[str]:
    """What the installed DeepSpeed does on the NPU by itself (for ``ascend-compat info``)."""
    if version_of("deepspeed") is None:
        return []
    return [
        "get_accelerator() is NPU_Accelerator (device npu, backend hccl) when torch_npu is importable",
        "init_distributed() initialises torch.distributed with hccl",
        "ZeRO stages 1 and 2, bf16/fp16, and FusedAdam (torch._fused_adamw_ on NPU, nothing to compile)",
    ]


def _apply_cann_path(ledger: Ledger, module: ModuleType, backend: Any) -> None:
    cls = module.NPUOpBuilder
    original = cls.__dict__["installed_cann_path"]

    @functools.wraps(original)
    def installed_cann_path(self: Any) -> Optional[str]:
        # What the upstream condition means: the CANN toolkit path, when it is set and exists.
        path = settings.ASCEND_HOME_PATH.raw()
        return path if path and os.path.exists(path) else None

    ledger.setattr(cls, "installed_cann_path", installed_cann_path,
                   label="DeepSpeed NPUOpBuilder: no KeyError when ASCEND_HOME_PATH is unset")  # fmt: skip
    # The compile flags join the CANN path: without one, say what is missing instead of a TypeError on None.
    for name in _CANN_FLAGS:
        ledger.setattr(cls, name, _needs_cann(cls.__dict__[name]),
                       label=f"DeepSpeed NPUOpBuilder.{name}: a clear error without CANN")  # fmt: skip


#: NPUOpBuilder's methods that join the CANN path (``self._ascend_path``) into compiler and linker flags.
_CANN_FLAGS = ("include_paths", "cxx_args", "extra_ldflags")


def _needs_cann(original: Any) -> Any:
    @functools.wraps(original)
    def method(self: Any) -> Any:
        if getattr(self, "_ascend_path", None) is None:
            path = settings.ASCEND_HOME_PATH.raw()
            state = f"ASCEND_HOME_PATH={path} does not exist" if path else "ASCEND_HOME_PATH is not set"
            raise RuntimeError(f"DeepSpeed's NPU op {self.name} is compiled against the CANN toolkit, and {state}: "
                               "source CANN's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) before "
                               "starting")
        return original(self)

    return method
