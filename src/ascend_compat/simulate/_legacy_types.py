"""torch_npu's legacy tensor types, ``torch.npu.FloatTensor`` and friends (re-exported by the simulated
``torch.npu``): what DeepSpeed's ``NPU_Accelerator`` and older scripts still call."""

from __future__ import annotations

import warnings
from typing import Any, Union

import torch

from ascend_compat._legacy_ctor import construct, set_default_dtype_of

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


# Set while a torch.npu legacy type is torch's default tensor type: the device the factories and torch.Tensor(...)
# build on. torch_npu does this in C++ (its types are torch's default-type candidates); here it is emulated.
_DEFAULT_DEVICE: list[torch.device] = []
# The constructor hook is in torch.Tensor only while such a type is the default: (hook, what it replaced).
_CTOR: list[Any] = []
_ABSENT = object()


def _legacy_new(base_new: Any) -> Any:
    # (*args, **kwargs) only: torch._dynamo checks that a Tensor.__new__ replacement has a wildcard signature.
    def __new__(*args: Any, **kwargs: Any) -> Any:  # noqa: N807
        cls, rest = args[0], args[1:]
        if cls is torch.Tensor and _DEFAULT_DEVICE and "device" not in kwargs:
            made = construct(rest, torch.get_default_dtype(), _DEFAULT_DEVICE[0])
            if made is not None:
                return made
        return base_new(cls, *rest, **kwargs)

    return staticmethod(__new__)


def _hook_constructor(on: bool) -> None:
    """Put the legacy-constructor hook into torch.Tensor, or take it out (only if it is still the one there)."""
    tensor = torch.Tensor
    if on and not _CTOR:
        previous = tensor.__dict__.get("__new__", _ABSENT)
        hook = _legacy_new(tensor.__new__)
        tensor.__new__ = hook  # type: ignore[assignment]
        _CTOR[:] = [tensor.__dict__["__new__"], previous]
    elif not on and _CTOR:
        hook, previous = _CTOR
        _CTOR.clear()
        if tensor.__dict__.get("__new__") is hook:
            if previous is _ABSENT:
                delattr(tensor, "__new__")
            else:
                tensor.__new__ = previous  # type: ignore[assignment]


def install(torch_module: Any) -> None:
    """Make ``torch.set_default_tensor_type(torch.npu.HalfTensor)`` (or ``"torch.npu.HalfTensor"``) work as in
    torch_npu: the type's dtype becomes the default dtype, and factories and the legacy constructor
    ``torch.Tensor(2, 3)`` build on the current npu; any other type hands back to torch. Idempotent."""
    original = torch_module.set_default_tensor_type
    if getattr(original, "_ascend_compat_sim", False):
        return

    def set_default_tensor_type(t: Any, /) -> None:
        from torch._utils import _import_dotted_name

        resolved = _import_dotted_name(t) if isinstance(t, str) else t
        if not isinstance(resolved, _NPUTensorType):
            if _DEFAULT_DEVICE:  # back to a CPU type: undo the device the npu type set
                _DEFAULT_DEVICE.clear()
                _hook_constructor(False)
                torch.set_default_device(None)
            return original(t)  # type: ignore[no-any-return]
        set_default_dtype_of(resolved, stacklevel=2)
        device = torch.device("npu")  # no ordinal: the current device at each call, as torch_npu's type does
        torch.set_default_device(device)
        _DEFAULT_DEVICE[:] = [device]
        _hook_constructor(True)

    set_default_tensor_type.__doc__ = original.__doc__
    set_default_tensor_type._ascend_compat_sim = True  # type: ignore[attr-defined]
    torch_module.set_default_tensor_type = set_default_tensor_type
