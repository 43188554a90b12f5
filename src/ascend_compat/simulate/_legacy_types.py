"""torch_npu's legacy tensor types, ``torch.npu.FloatTensor`` and friends (re-exported by the simulated
``torch.npu``): what DeepSpeed's ``NPU_Accelerator`` and older scripts still call."""

from __future__ import annotations

import warnings
from typing import Any, Union

import torch

DeviceLike = Union[torch.device, str, int, None]

_LEGACY_WARNED = False


class _NPUTensorType(type):
    """The metaclass of ``torch.npu.FloatTensor`` and friends (torch_npu's ``torch.tensortype``, TensorType.cpp).

    As in torch_npu: the constructor follows torch's legacy constructor (no arguments: an empty tensor; sizes:
    an uninitialised tensor; data: a copy; a tensor of the same type: an alias) on the current npu device and
    warns once that it is no longer recommended; ``isinstance`` is true for strided npu tensors of the dtype;
    the class has ``dtype``, ``layout``, ``is_npu`` and ``is_sparse``.
    """

    dtype: torch.dtype

    @property
    def layout(cls) -> torch.layout:
        return torch.strided

    @property
    def is_npu(cls) -> bool:
        return True

    @property
    def is_sparse(cls) -> bool:
        return False

    def __instancecheck__(cls, obj: Any) -> bool:
        return (
            isinstance(obj, torch.Tensor)
            and obj.device.type == "npu"
            and obj.layout == torch.strided
            and obj.dtype == cls.dtype
        )

    def __call__(cls, *args: Any, device: DeviceLike = None) -> torch.Tensor:  # type: ignore[override]
        global _LEGACY_WARNED
        if not _LEGACY_WARNED:  # torch_npu's TORCH_NPU_WARN_ONCE
            _LEGACY_WARNED = True
            warnings.warn(
                "Warning: The torch.npu.*DtypeTensor constructors are no longer recommended. It's best to use "
                "methods such as torch.tensor(data, dtype=*, device='npu') to create tensors.",
                UserWarning,
                stacklevel=2,
            )
        from ascend_compat.simulate.npu_module import _index  # the module re-exports these types

        dev = torch.device("npu", _index(device))
        if not args:
            return torch.empty(0, dtype=cls.dtype, device=dev)
        if all(isinstance(a, int) for a in args) or (len(args) == 1 and isinstance(args[0], torch.Size)):
            return torch.empty(*args, dtype=cls.dtype, device=dev)
        if len(args) == 1 and isinstance(args[0], torch.Tensor):
            if not isinstance(args[0], cls):
                raise TypeError(f"expected {cls.__module__}.{cls.__qualname__} (got {args[0].type()})")
            return torch.ops.aten.alias(args[0])
        if len(args) == 1:
            return torch.tensor(args[0], dtype=cls.dtype, device=dev)
        raise TypeError(f"{cls.__qualname__}() takes sizes, a sequence of data or a tensor; got {args!r}")


def _legacy_type(name: str, dtype: torch.dtype) -> _NPUTensorType:
    cls = _NPUTensorType(name, (), {"__module__": "torch.npu", "dtype": dtype, "__doc__": f"Legacy {dtype} npu type."})
    # ``x.type(torch.npu.HalfTensor)`` parses the class's C-level tp_name, which is the full "torch.npu.HalfTensor"
    # for torch's own (static) types and for torch_npu's; a Python class's tp_name is its __name__.
    cls.__name__ = f"torch.npu.{name}"
    cls.__qualname__ = name
    return cls


# The ten types torch_npu declares (all_declared_types_npu in TensorType.cpp).
BFloat16Tensor = _legacy_type("BFloat16Tensor", torch.bfloat16)
BoolTensor = _legacy_type("BoolTensor", torch.bool)
ByteTensor = _legacy_type("ByteTensor", torch.uint8)
CharTensor = _legacy_type("CharTensor", torch.int8)
DoubleTensor = _legacy_type("DoubleTensor", torch.float64)
FloatTensor = _legacy_type("FloatTensor", torch.float32)
HalfTensor = _legacy_type("HalfTensor", torch.float16)
IntTensor = _legacy_type("IntTensor", torch.int32)
LongTensor = _legacy_type("LongTensor", torch.int64)
ShortTensor = _legacy_type("ShortTensor", torch.int16)
