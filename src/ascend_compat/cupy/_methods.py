"""Operators and methods of ``ndarray``, attached here so that each is defined once, beside its function."""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional, SupportsIndex, Union

import numpy
import torch
from numpy.exceptions import ComplexWarning

from ascend_compat.cupy import _alloc, _float64
from ascend_compat.cupy import _indexing as I  # noqa: N812
from ascend_compat.cupy import _manipulation as M  # noqa: N812
from ascend_compat.cupy import _reduction as R  # noqa: N812
from ascend_compat.cupy import _stats as S  # noqa: N812
from ascend_compat.cupy import _ufuncs as U  # noqa: N812
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._core_flip import view_of
from ascend_compat.cupy._dtypes import cast_tensor, storage_dtype, to_numpy_dtype
from ascend_compat.cupy._ufunc import ufunc

if TYPE_CHECKING:
    from ascend_compat.cupy._reduction import DType, Out

_OPERAND_TYPES = (ndarray, int, float, complex, numpy.generic, numpy.ndarray)
#: NumPy's casting rules (``astype(casting=...)``).
Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]


def _binary(uf: ufunc, reflected: bool = False) -> Callable[[ndarray, Any], Any]:
    def op(self: ndarray, other: Any) -> Any:
        if not isinstance(other, _OPERAND_TYPES):
            handler = getattr(type(other), "__array_ufunc__", False)
            if handler is None:  # NEP 13: the other operand opts out of ufuncs
                return NotImplemented
            if handler is not False and getattr(uf, "_np", None) is not None:  # NEP 13: it overrides the ufunc
                return other.__array_ufunc__(uf._np, "__call__", *((other, self) if reflected else (self, other)))
            if isinstance(other, (list, tuple)):
                other = asarray(other)
            elif uf.name in ("equal", "not_equal") and not hasattr(other, "__array_priority__"):
                return _compare_object(self, uf.name, other)
            else:
                return NotImplemented
        return uf(other, self) if reflected else uf(self, other)
    return op


def _compare_object(self: ndarray, name: str, other: Any) -> Any:
    """``a == obj`` / ``a != obj`` for an arbitrary object: NumPy compares elementwise, so an object with its own
    ``__eq__``/``__ne__`` answers (reflected), one without is unequal to every element."""
    own_eq, own_ne = type(other).__eq__ is not object.__eq__, type(other).__ne__ is not object.__ne__
    if (name == "equal" and own_eq) or (name == "not_equal" and own_ne):
        return NotImplemented
    if name == "not_equal" and own_eq:
        raise TypeError(f"cannot compare an array elementwise with {type(other).__name__} (it defines __eq__ only)")
    return _wrap(torch.full(self._t.shape, name == "not_equal", dtype=torch.bool, device=self._t.device))


def _inplace(uf: ufunc) -> Callable[[ndarray, Any], ndarray]:
    def op(self: ndarray, other: Any) -> ndarray:
        if isinstance(other, (list, tuple)):
            other = asarray(other)
        return uf(self, other, out=self)
    return op


_BINOPS = {"add": U.add, "sub": U.subtract, "mul": U.multiply, "truediv": U.true_divide,
           "floordiv": U.floor_divide, "mod": U.remainder, "pow": U.power, "and": U.bitwise_and,
           "or": U.bitwise_or, "xor": U.bitwise_xor, "lshift": U.left_shift, "rshift": U.right_shift}
for _n, _uf in _BINOPS.items():
    setattr(ndarray, f"__{_n}__", _binary(_uf))
    setattr(ndarray, f"__r{_n}__", _binary(_uf, reflected=True))
    setattr(ndarray, f"__i{_n}__", _inplace(_uf))
for _n, _uf in {"eq": U.equal, "ne": U.not_equal, "lt": U.less, "le": U.less_equal, "gt": U.greater,
                "ge": U.greater_equal}.items():
    setattr(ndarray, f"__{_n}__", _binary(_uf))
_int_pow = _binary(U.power)


def _pow(self: ndarray, other: Any) -> Any:
    if type(other) is int and other == -1 and self._dtype.kind in "ib":  # CuPy: 1/x truncated, no error
        return U.power(self, -1.0).astype(numpy.result_type(self._dtype, 1))
    return _int_pow(self, other)


def _neg(self: ndarray) -> ndarray:
    return U.negative(self)


def _pos(self: ndarray) -> ndarray:
    return U.positive(self)


def _abs(self: ndarray) -> ndarray:
    return self.copy() if self._dtype.kind == "u" else U.absolute(self)  # uint64: no sign


def _invert(self: ndarray) -> ndarray:
    return U.invert(self)


def _matmul(self: ndarray, other: Any) -> Any:
    from ascend_compat.cupy._linalg_top import matmul

    return matmul(self, other) if isinstance(other, (ndarray, numpy.ndarray)) else NotImplemented


def _rmatmul(self: ndarray, other: Any) -> Any:
    from ascend_compat.cupy._linalg_top import matmul

    return matmul(other, self) if isinstance(other, numpy.ndarray) else NotImplemented


# The class statement declares these for type checkers only (_core.ndarray), so they are attached by name.
_OPERATORS: dict[str, Callable[..., Any]] = {
    "__pow__": _pow, "__divmod__": _binary(U.divmod), "__rdivmod__": _binary(U.divmod, reflected=True),
    "__neg__": _neg, "__pos__": _pos, "__abs__": _abs, "__invert__": _invert, "__matmul__": _matmul,
    "__rmatmul__": _rmatmul, "__getitem__": I.getitem, "__setitem__": I.setitem,
}
for _n, _f in _OPERATORS.items():
    setattr(ndarray, _n, _f)


def astype(self: ndarray, dtype: DType, order: str = "K", casting: Optional[Casting] = None,
           subok: Optional[bool] = None, copy: bool = True) -> ndarray:
    """A copy cast to ``dtype`` (no copy when ``copy=False`` and nothing changes)."""
    dt = to_numpy_dtype(dtype)
    if dt.kind in "fc":  # float64/complex128 follow ASCEND_COMPAT_CUPY_FLOAT64 on the array's device
        dt = _float64.check_dtype(dt, self._t.device)
    order = order.upper() if isinstance(order, str) else "K"
    if casting is not None and not numpy.can_cast(self._dtype, dt, casting):
        raise TypeError(f"Cannot cast array data from {self._dtype!r} to {dt!r} according to the rule {casting!r}")
    if dt == self._dtype and not copy and (order in ("K", "A") or self.flags[order]):
        return self
    if self._dtype.kind == "c" and dt.kind not in "cb":
        warnings.warn("Casting complex values to real discards the imaginary part", ComplexWarning, stacklevel=2)
    try:
        t = cast_tensor(self._t, self._dtype, dt)
        if order == "A":
            order = "F" if self.flags.f_contiguous and not self.flags.c_contiguous else "C"
        if order in ("C", "F"):
            return _wrap(_empty_ordered(t, order).copy_(t), dt)
        if self._is_flip:  # order K of negative strides: the memory's axis order, as NumPy
            from ascend_compat.cupy._creation import empty_like

            out = empty_like(self, dt, "K")
            out._t.copy_(t)
            return out
        if t is self._t or t.data_ptr() == self._t.data_ptr():
            res = self.copy(order=order) if dt == self._dtype else _wrap(t.clone(), dt)
            res._dtype = dt  # the requested spelling (ulonglong vs uint64 compare equal but differ in .type)
            return res
    except torch.OutOfMemoryError as exc:  # CuPy's type (a subclass of the backend's), as the ufuncs raise
        _alloc.raise_cupy_oom(exc, self._t.numel() * dt.itemsize)
    return _wrap(t, dt)


def copy(self: ndarray, order: str = "C") -> ndarray:
    """A copy of the array in memory order ``order`` ("C", "F", "A" or "K")."""
    t = self._t
    dev = current_torch_device()  # CuPy copies onto the current device
    order = order.upper() if isinstance(order, str) else "K"
    if order in ("A", "K"):
        f = self.flags.f_contiguous and not self.flags.c_contiguous
        if order == "K" and self._is_flip and dev == t.device:  # the memory's axis order, as NumPy
            from ascend_compat.cupy._creation import empty_like

            out = empty_like(self, order="K")
            out._t.copy_(t)
            return out
        if order == "K" and not f and not self.flags.c_contiguous:
            if dev != t.device:
                raise NotImplementedError("copy(order='K') of a non-contiguous array to another device")
            try:
                return _wrap(t.clone(memory_format=torch.preserve_format), self._dtype)
            except torch.OutOfMemoryError as exc:
                _alloc.raise_cupy_oom(exc, self.nbytes)
        order = "F" if f else "C"
    if order not in ("C", "F"):
        raise ValueError(f"order not understood: {order!r}")
    try:
        return _wrap(_empty_ordered(t, order, dev).copy_(t), self._dtype)
    except torch.OutOfMemoryError as exc:  # CuPy's type (a subclass of the backend's), as the ufuncs raise
        _alloc.raise_cupy_oom(exc, self.nbytes)


def _empty_ordered(t: torch.Tensor, order: str, device: Optional[torch.device] = None) -> torch.Tensor:
    """An uninitialised tensor like ``t`` with NumPy's C or F strides (size-1 axes included)."""
    device = t.device if device is None else device
    if order == "F" and t.dim() > 1:
        rev = list(range(t.dim() - 1, -1, -1))
        return torch.empty(t.shape[::-1], dtype=t.dtype, device=device).permute(*rev)
    return torch.empty(t.shape, dtype=t.dtype, device=device)


def view(self: ndarray, dtype: Any = None, type: Any = None) -> ndarray:  # Any: dtypes, or ndarray classes
    """A view of the same memory, optionally reinterpreted as ``dtype``."""
    # ``type`` is NumPy's parameter name and shadows the builtin here: test classes with ``builtins.type``.
    if dtype is None or (isinstance(dtype, builtins.type) and issubclass(dtype, ndarray)):
        return view_of(self._t.view(self._t.shape), self)
    dt = to_numpy_dtype(dtype)
    if dt == self._dtype:
        return view_of(self._t.view(self._t.shape), self, dt)
    src = self._t
    from ascend_compat.cupy._core import _export_tensor

    if self._dtype.itemsize != src.element_size() or dt.itemsize != torch.empty(
            0, dtype=storage_dtype(dt)).element_size():
        return _wrap(_export_tensor(self).view(_unsigned_or(dt)), None)
    if dt.itemsize != self._dtype.itemsize:
        src = _resizable_last_axis(self, dt)
    return view_of(src.view(storage_dtype(dt)), self, dt)


def _resizable_last_axis(self: ndarray, dt: numpy.dtype) -> torch.Tensor:
    """The tensor of ``self`` ready for ``view`` as ``dt`` of another itemsize, or NumPy 2's ValueError."""
    if self.ndim == 0:
        raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
    t, old = self._t, self._dtype.itemsize
    n = t.shape[-1]
    if n != 1 and t.stride(-1) != 1 and t.numel():
        raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
    if (n * old) % dt.itemsize:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of the total size in bytes "
                         "of the last axis of the array.")
    if t.numel() == 0:  # nothing to reinterpret: only the last axis' length changes (torch checks the strides of
        shape = (*t.shape[:-1], n * old // dt.itemsize)  # empty tensors too: a new empty one, already of ``dt``)
        return torch.empty(shape, dtype=storage_dtype(dt), device=t.device)
    if t.stride(-1) != 1:  # a last axis of length 1 is contiguous whatever its stride (NumPy's relaxed rule)
        t = t.as_strided(t.shape, (*t.stride()[:-1], 1))
    return t


def _conj_method(self: ndarray) -> ndarray:
    """``a.conj()``: the array itself unless it is complex (as NumPy and CuPy)."""
    return U.conjugate(self) if self._dtype.kind == "c" else self


def _unsigned_or(dt: numpy.dtype) -> torch.dtype:
    return {"u2": torch.uint16, "u4": torch.uint32, "u8": torch.uint64}.get(dt.str[1:], storage_dtype(dt))


def fill(self: ndarray, value: object) -> None:
    """Set every element to the scalar ``value`` (a 0-d array counts as a scalar)."""
    if not isinstance(value, ndarray) and hasattr(value, "__cupy_get_ndarray__"):
        value = value.__cupy_get_ndarray__()
    if isinstance(value, (ndarray, numpy.ndarray)):
        if value.ndim != 0:
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        if value.dtype.kind == "c" and self._dtype.kind not in "cb":
            warnings.warn("Casting complex values to real discards the imaginary part", ComplexWarning,
                          stacklevel=2)
    self[...] = value


def _real(self: ndarray) -> ndarray:
    if self._dtype.kind == "c":
        return view_of(torch.view_as_real(self._t)[..., 0], self, numpy.dtype(self._dtype.char.lower()))
    return self


def _set_real(self: ndarray, value: object) -> None:
    _real(self)[...] = value


def _imag(self: ndarray) -> ndarray:
    if self._dtype.kind == "c":
        return view_of(torch.view_as_real(self._t)[..., 1], self, numpy.dtype(self._dtype.char.lower()))
    res = _wrap(torch.zeros_like(self._t), self._dtype)
    return res


def _set_imag(self: ndarray, value: object) -> None:
    if self._dtype.kind != "c":
        raise TypeError("array does not have imaginary part to set")
    _imag(self)[...] = value


def _flatten(self: ndarray, order: str = "C") -> ndarray:
    r = M.ravel(self, order)
    return r.copy() if r._t.data_ptr() == self._t.data_ptr() and r.size else r


def _reshape(self: ndarray, *shape: Union[SupportsIndex, Sequence[SupportsIndex]], order: str = "C",
             copy: Optional[bool] = None) -> ndarray:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return M.reshape(self, shape, order=order, copy=copy)


def _transpose(self: ndarray, *axes: Union[SupportsIndex, Sequence[SupportsIndex], None]) -> ndarray:
    if len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
        return M.transpose(self, axes[0] or None)
    return M.transpose(self, axes or None)


def _trace(self: ndarray, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: DType = None,
           out: Out = None) -> ndarray:
    return R.sum(I.diagonal(self, offset, axis1, axis2), -1, dtype, out)


def _sort(self: ndarray, axis: int = -1, kind: Optional[str] = None, order: Union[str, list[str], None] = None) -> None:
    from ascend_compat.cupy._sorting import sort

    if self.ndim == 0:
        raise numpy.exceptions.AxisError("Sorting arrays with the rank of zero is not supported")
    if not self.flags.c_contiguous:
        raise NotImplementedError("Sorting non-contiguous array is not supported.")
    self[...] = sort(self, axis)


_METHODS: dict[str, Callable[..., Any]] = {
    "astype": astype, "copy": copy, "view": view, "fill": fill, "flatten": _flatten, "reshape": _reshape,
    "transpose": _transpose, "ravel": M.ravel, "swapaxes": M.swapaxes, "squeeze": M.squeeze, "repeat": M.repeat,
    "take": I.take, "put": I.put, "choose": I.choose, "nonzero": I.nonzero, "compress": lambda s, c, axis=None,
    out=None: I.compress(c, s, axis, out), "diagonal": I.diagonal, "trace": _trace,
    "sum": R.sum, "prod": R.prod, "mean": R.mean, "var": R.var, "std": R.std, "max": R.amax, "min": R.amin,
    "argmax": R.argmax, "argmin": R.argmin, "all": R.all, "any": R.any, "cumsum": R.cumsum, "cumprod": R.cumprod,
    "ptp": S.ptp, "conj": _conj_method, "conjugate": _conj_method, "sort": _sort,
}
for _n, _f in _METHODS.items():
    setattr(ndarray, _n, _f)
for _n, _p in {"real": property(_real, _set_real), "imag": property(_imag, _set_imag)}.items():
    setattr(ndarray, _n, _p)


def _late(name: str, module: str) -> Callable[..., Any]:
    def method(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(f"ascend_compat.cupy.{module}"), name)(self, *args, **kwargs)
    method.__name__ = name
    return method


def _partition(self: ndarray, kth: Union[int, Sequence[int]], axis: int = -1, kind: str = "introselect",
               order: Union[str, list[str], None] = None) -> None:
    from ascend_compat.cupy._sorting import partition

    if not self.flags.c_contiguous:
        raise NotImplementedError("Sorting non-contiguous array is not supported.")
    self[...] = partition(self, kth, axis)


# Methods whose functions import this module's dependents: looked up on first call.
_LATE: dict[str, Callable[..., Any]] = {
    "partition": _partition, "dot": _late("dot", "_linalg_top"), "__round__": _late("round", "_extra"),
    **{n: _late(n, "_sorting") for n in ("argsort", "argpartition", "searchsorted")},
    **{n: _late(n, "_extra") for n in ("clip", "round")},
}
for _n, _f in _LATE.items():
    setattr(ndarray, _n, _f)
