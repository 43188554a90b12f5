"""``torch.set_default_tensor_type`` with the legacy CUDA tensor types (``torch.cuda.HalfTensor``, built by
:func:`~ascend_compat.cuda_shim._cuda_table.legacy_tensor_type`).

Imported on the first call only: the wrapper of :mod:`~ascend_compat.cuda_shim.cuda_functions` defers to
:func:`set_default_type`.
"""

from __future__ import annotations

from typing import Any, Callable

from ascend_compat._legacy_ctor import set_default_dtype_of
from ascend_compat.cuda_shim.cuda_functions import _DEFAULT_DEVICE_FROM_TYPE
from ascend_compat.cuda_shim.devices import TARGET, count, target_device


def set_default_type(original: Callable[..., Any], t: Any) -> None:
    """``torch.set_default_tensor_type(t)`` under the shim: for a legacy CUDA type (or its name) the default dtype,
    and the target as default device when it is an accelerator, as CUDA does; non-floating types are refused in
    torch's words; any other type goes to torch (a CPU type undoes the device a CUDA type set)."""
    import torch
    from torch._utils import _import_dotted_name

    resolved = _import_dotted_name(t) if isinstance(t, str) else t
    if not getattr(resolved, "_ascend_compat_legacy", False):
        if _DEFAULT_DEVICE_FROM_TYPE:  # back to a CPU type: undo the device the CUDA type set
            _DEFAULT_DEVICE_FROM_TYPE.clear()
            torch.set_default_device(None)
        original(t)
        return
    set_default_dtype_of(resolved, stacklevel=3)
    count("set_default_tensor_type(torch.cuda)")
    if TARGET.accelerator:
        torch.set_default_device(target_device())
        if not _DEFAULT_DEVICE_FROM_TYPE:
            _DEFAULT_DEVICE_FROM_TYPE.append(True)
