"""``ndarray.flags`` (C/F contiguity, ownership) and ``ndarray.data`` (a device memory pointer), as CuPy's
``cupy._core.flags.Flags`` and ``cupy.cuda.MemoryPointer``. Re-exported by ``_core``."""

from __future__ import annotations

import operator
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascend_compat.cupy._core import ndarray


class Flags:
    """``a.flags``: C/F contiguity and ownership, as CuPy's ``cupy._core.flags.Flags``."""

    __slots__ = ("_c", "_f", "_own")
    _NAMES = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous", "OWNDATA": "owndata",  # noqa: RUF012
              "C": "c_contiguous", "F": "f_contiguous"}

    def __init__(self, c_contiguous: Any, f_contiguous: Any, owndata: Any) -> None:
        self._c, self._f, self._own = c_contiguous, f_contiguous, owndata

    c_contiguous = property(lambda self: self._c)  # read-only, as in CuPy
    f_contiguous = property(lambda self: self._f)
    owndata = property(lambda self: self._own)

    @classmethod
    def of(cls, a: ndarray) -> Flags:
        if a._is_flip:  # negative strides: contiguous only where every reversed axis has length 1
            from ascend_compat.cupy._core_flip import layout

            _, shape, stride = layout(a)
            return cls(_contiguous(shape, stride, False), _contiguous(shape, stride, True), False)
        shape, stride = a._t.shape, a._t.stride()
        return cls(_contiguous(shape, stride, False), _contiguous(shape, stride, True), a._base is None)

    @property
    def forc(self) -> bool:
        return bool(self.c_contiguous or self.f_contiguous)

    @property
    def fnc(self) -> bool:
        return bool(self.f_contiguous and not self.c_contiguous)

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, self._NAMES[key.upper()])
        except KeyError:
            raise KeyError(f"{key} is not defined for cupy.ndarray.flags") from None

    def __repr__(self) -> str:
        return "\n".join(f"  {k} : {getattr(self, v)}" for k, v in list(self._NAMES.items())[:3])


def _contiguous(shape: Any, stride: Any, reverse: bool) -> bool:
    if 0 in shape:  # an empty array is both C- and F-contiguous, whatever its strides (as in NumPy)
        return True
    expected = 1
    dims = range(len(shape)) if reverse else range(len(shape) - 1, -1, -1)
    for d in dims:
        n = shape[d]
        if n != 1 and stride[d] != expected:
            return False
        expected *= n
    return True


class _MemoryPointer:
    """The ``.data`` of an array: its device address (``ptr``), ``offset`` bytes into the array's memory."""

    __slots__ = ("_a", "offset")

    def __init__(self, a: ndarray, offset: int = 0) -> None:
        self._a, self.offset = a, offset

    @property
    def ptr(self) -> int:
        from ascend_compat.cupy._core_flip import first_ptr

        return first_ptr(self._a) + self.offset

    @property
    def mem(self) -> Any:
        """The allocation (``size`` in bytes) holding the array."""
        from ascend_compat.cupy._core_flip import memory_tensor

        t = memory_tensor(self._a)
        return types.SimpleNamespace(size=t.untyped_storage().nbytes(), ptr=t.data_ptr())

    @property
    def device_id(self) -> int:
        return self._a._t.device.index or 0

    def __add__(self, nbytes: int) -> _MemoryPointer:
        return _MemoryPointer(self._a, self.offset + operator.index(nbytes))

    def __sub__(self, nbytes: int) -> _MemoryPointer:
        return _MemoryPointer(self._a, self.offset - operator.index(nbytes))

    def __int__(self) -> int:
        return self.ptr


__all__ = ["Flags", "_MemoryPointer", "_contiguous"]
