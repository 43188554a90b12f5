"""The legacy CUDA tensor types (``torch.cuda.HalfTensor``, ...: :func:`legacy_tensor_type`) and
``torch.set_default_tensor_type`` with them.

Imported on first use only: the types are among the torch.cuda names built when first asked for, and the wrapper
of :mod:`~ascend_compat.cuda_shim.cuda_functions` defers to :func:`set_default_type`.
"""

from __future__ import annotations

from typing import Any, Callable

from ascend_compat._legacy_ctor import set_default_dtype_of
from ascend_compat.cuda_shim.cuda_functions import _DEFAULT_DEVICE_FROM_TYPE
from ascend_compat.cuda_shim.devices import TARGET, count, target_device

LEGACY_DTYPES = {
    "BFloat16": "bfloat16", "Bool": "bool", "Byte": "uint8", "Char": "int8", "Double": "float64", "Float": "float32",
    "Half": "float16", "Int": "int32", "Long": "int64", "Short": "int16",
}  # fmt: skip


class _LegacyMeta(type):
    """The metaclass of the legacy tensor types: one for all of them (each type carries its ``dtype``)."""

    dtype: Any

    def __instancecheck__(cls, obj: Any) -> bool:
        import torch

        return isinstance(obj, torch.Tensor) and obj.dtype == cls.dtype and obj.device.type == TARGET.device_type

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        import torch

        count(f"torch.cuda.{cls.__name__}")
        if len(args) == 1 and not isinstance(args[0], int):
            return torch.as_tensor(args[0], dtype=cls.dtype, device=target_device())
        return torch.empty(*args, dtype=cls.dtype, device=target_device())


def legacy_tensor_type(name: str) -> type:
    """``torch.cuda.FloatTensor`` and friends (``name`` ends in ``Tensor``): build tensors of that dtype on the
    target; isinstance works.

    Like CUDA's tensor types they carry ``dtype`` and ``is_cuda``; ``torch.set_default_tensor_type`` reads them
    (see :mod:`~ascend_compat.cuda_shim._cuda_legacy`).
    """
    import torch

    dtype = getattr(torch, LEGACY_DTYPES[name[: -len("Tensor")]])
    attrs = {
        "__module__": "torch.cuda",
        "__doc__": f"Legacy {dtype} tensor type on the target.",
        "dtype": dtype,
        "is_cuda": True,
        "is_sparse": False,
        "_ascend_compat_legacy": True,
    }
    return _LegacyMeta(name, (), attrs)


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
