"""``ufunc`` objects: NumPy's type resolution (``numpy.ufunc.resolve_dtypes``, NEP 50 weak Python scalars) on top
of a torch kernel, with ``out=``, ``dtype=``, ``casting=``, ``where=`` and ``reduce/accumulate/outer/at``.

Loop dtypes are resolved once per (ufunc, input types, out dtype, dtype, casting) and cached, so a call on arrays
costs a dict lookup, the casts and the torch kernel. A large new result on the CPU is allocated with huge pages
(``_alloc``) and written by the kernel in place; the device running out of memory raises CuPy's
``OutOfMemoryError``.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import numpy
import torch
from numpy.exceptions import ComplexWarning

from ascend_compat.cupy import _alloc, _dtypes, _float64
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._dtypes import WRAP_MASK, cast_tensor, storage_dtype
from ascend_compat.cupy._ufunc_support import (
    _BOOL,
    _CMP_OOB,
    _I64_MIN,
    _SCATTER_REDUCE,
    _as_dev,
    _broadcast,
    _broadcast_error,
    _compare_out_of_range,
    _key,
    _operand,
    _scatter_at,
    device_of,
    reduceat,
    unalias,
)

# ufuncs whose torch function can write into ``out=`` directly (same dtype, same shape).
_OUT_KERNELS: dict[str, Callable[..., Any]] = {
    "add": torch.add, "subtract": torch.sub, "multiply": torch.mul, "maximum": torch.maximum,
    "minimum": torch.minimum, "cos": torch.cos, "sin": torch.sin, "tan": torch.tan, "exp": torch.exp,
    "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh, "absolute": torch.abs, "negative": torch.neg,
    "square": torch.square, "log1p": torch.log1p, "expm1": torch.expm1,
}


# Float arrays on the CPU: ufuncs (by loop dtype char, f = float32, d = float64) whose NumPy SIMD kernel is several
# times faster than torch's CPU kernel (torch 2.13 on x86-64: cos/sin/tan/exp/log/tanh 2-9x slower, see
# benchmarks/cupy/bench_ops.py); NumPy's float64 cos/sin are 4x slower than torch's, so those stay with torch.
# NumPy computes on the tensors' memory (no copy) from _NUMPY_MIN elements on (below, the call overhead dominates):
# results match NumPy's bit for bit, torch's within an ULP or two.
_NUMPY_FASTER = {"cos": "f", "sin": "f", "tan": "fd", "exp": "fd", "log": "fd", "sqrt": "fd", "tanh": "fd",
                 "expm1": "fd", "log1p": "fd"}
_NUMPY_MIN = 4096


class _NumpyWriter:
    """A kernel ``(*cpu_tensors, out=tensor)`` running NumPy's ufunc on the tensors' memory."""

    def __init__(self, np_ufunc: Any) -> None:
        self._np = np_ufunc

    def __call__(self, *ins: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        with numpy.errstate(all="ignore"):  # CuPy does not warn on nan/inf results
            self._np(*(t.numpy() for t in ins), out=out.numpy())
        return out


def _write_new(writer: Any, ins: Any, want: torch.dtype, min_elements: int) -> Optional[torch.Tensor]:
    """``writer(*ins)`` written into a new tensor (huge pages on the CPU when large), or None where the kernel's
    own allocation is as good: fewer than ``min_elements``, not the CPU, or operands whose result layout differs.

    Only for C-contiguous tensor operands of one shape (and scalars): torch would make that result C-contiguous
    too, so the layout users see does not change.
    """
    ta = ins[0]
    if not isinstance(ta, torch.Tensor) or ta.numel() < min_elements or not ta.is_contiguous():
        return None
    for tb in ins[1:]:
        if isinstance(tb, torch.Tensor) and (tb.shape != ta.shape or not tb.is_contiguous()):
            return None
    o = _alloc.empty_if_large(ta.shape, want, ta.device)
    if o is None:
        if not isinstance(writer, _NumpyWriter) or ta.device.type != "cpu":
            return None
        o = torch.empty(ta.shape, dtype=want)
    try:
        return writer(*ins, out=o)
    except torch.OutOfMemoryError:
        raise
    except RuntimeError:  # a dtype the direct kernel refuses: the generic kernel handles it
        return None


_FULL_F64, _WIDE = _float64.FULL_FLOAT64, _float64.WIDE


def _finish(t: torch.Tensor, loop_out: numpy.dtype) -> torch.Tensor:
    """Bring a kernel result into the storage of ``loop_out`` (wrapping widened unsigned types)."""
    want = storage_dtype(loop_out)
    if t.dtype != want:
        t = t.to(want)
    mask = WRAP_MASK.get(loop_out)
    if mask is not None:
        t = t & mask
    return t


class ufunc:  # noqa: N801
    """A universal function over device arrays (CuPy's ``cupy.ufunc``)."""

    def __init__(self, name: str, nin: int, nout: int, kernel: Callable[..., Any], doc: str = "",
                 np_ufunc: Any = None, identity: Any = None, scalar_ok: bool = False) -> None:
        self.name = self.__name__ = name
        self.nin, self.nout, self.nargs = nin, nout, nin + nout
        self._kernel = kernel
        self._scalar_ok = scalar_ok
        self._np = np_ufunc if np_ufunc is not None else getattr(numpy, name)
        self.identity = identity if identity is not None else self._np.identity
        self.__doc__ = doc or f"Device version of numpy.{self._np.__name__}."
        self._cache: dict[Any, tuple[numpy.dtype, ...]] = {}
        self._fast: dict[Any, tuple[Any, ...]] = {}
        self._np_writer = _NumpyWriter(self._np) if name in _NUMPY_FASTER else None

    def __repr__(self) -> str:
        return f"<ufunc '{self.name}'>"

    @property
    def types(self) -> list[str]:
        """NumPy's loops, without the dtypes arrays cannot hold (long double, datetime, object), deduplicated."""
        return list(dict.fromkeys(t for t in self._np.types if not any(c in t for c in "GgMmO")))

    @property
    def ntypes(self) -> int:
        return len(self.types)

    def _resolve(self, keys: tuple[Any, ...], dtype: Any = None, casting: str = "same_kind") -> tuple[Any, ...]:
        ck = (keys, dtype, casting)
        loop = self._cache.get(ck)
        if loop is None:
            sig = dtype if isinstance(dtype, tuple) else None  # a full signature (the float64 policy's)
            if dtype is not None and sig is None:
                dt = _dtypes.to_numpy_dtype(dtype)
                sig = (None,) * self.nin + (dt,) * self.nout
            loop = (self._np.resolve_dtypes(keys, casting=casting) if sig is None else
                    self._np.resolve_dtypes(keys, signature=sig, casting=casting))
            for d in loop:
                _dtypes.to_numpy_dtype(d)
            self._cache[ck] = loop
        return loop

    def _writer(self, lout: numpy.dtype) -> Optional[Callable[..., torch.Tensor]]:
        """The kernel that writes a large CPU result of loop dtype ``lout`` into a given tensor (None: none)."""
        if WRAP_MASK.get(lout) is not None:  # widened unsigned storage needs the generic path's wrap
            return None
        if self._np_writer is not None and lout.char in _NUMPY_FASTER[self.name]:
            return self._np_writer
        return _OUT_KERNELS.get(self.name)

    @staticmethod
    def _min_elements(writer: Any, lout: numpy.dtype) -> int:
        """From how many elements a new result is written by ``writer`` rather than by the kernel's allocation."""
        return _NUMPY_MIN if isinstance(writer, _NumpyWriter) else -(-_alloc.THRESHOLD // lout.itemsize)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            # Fast path: device arrays (and a Python scalar operand), no keywords, a loop seen before.
            if not kwargs and len(args) == self.nin:
                a = args[0]
                if type(a) is ndarray:
                    # (a float64 result off the CPU/CUDA goes through _call, for the float64 policy)
                    if self.nin == 1:
                        plan = self._fast.get(a._dtype)
                        if plan is not None and (not plan[9] or a._t.device.type in _FULL_F64):
                            return self._run_plan(plan, a._t, None)
                    else:
                        b = args[1]
                        tb = type(b)
                        plan = self._fast.get((a._dtype, b._dtype if tb is ndarray else tb))
                        if plan is not None and (not plan[9] or a._t.device.type in _FULL_F64):
                            return self._run_plan(plan, a._t, b._t if tb is ndarray else _operand(b, plan[1], True))
            elif len(kwargs) == 1 and len(args) == self.nin and type(kwargs.get("out")) is ndarray:
                done = self._direct_out(args, kwargs["out"])
                if done is not None:
                    return done
            return self._call(*args, **kwargs)
        except torch.OutOfMemoryError as exc:  # CuPy's type (a subclass of the backend's)
            _alloc.raise_cupy_oom(exc)

    def _direct_out(self, args: tuple[Any, ...], o: ndarray) -> Optional[ndarray]:
        """``f(a, b, out=o)`` for device arrays whose loop is known, written by torch straight into ``o`` (inputs
        overlapping ``o`` copied first, as NumPy does)."""
        direct = _OUT_KERNELS.get(self.name)
        a = args[0]
        if direct is None or type(a) is not ndarray:
            return None
        ot = o._t
        ts: tuple[torch.Tensor, ...]
        if self.nin == 1:
            plan, ts, shape = self._fast.get(a._dtype), (a._t,), a._t.shape
        else:
            b = args[1]
            if type(b) is not ndarray:
                return None
            plan, ts = self._fast.get((a._dtype, b._dtype)), (a._t, b._t)
            shape = _broadcast(a._t.shape, b._t.shape)
        if plan is None or plan[2] != o._dtype or plan[3] or plan[4] or plan[6] is not None or shape != ot.shape \
                or (plan[9] and ot.device.type not in _FULL_F64):
            return None
        writer = plan[7]
        if isinstance(writer, _NumpyWriter) and ot.numel() >= _NUMPY_MIN and ot.device.type == "cpu":
            direct = writer  # NumPy's kernel, faster on the CPU for this op and dtype
        try:
            direct(*unalias(ts, ot), out=ot)
        except torch.OutOfMemoryError:
            raise
        except RuntimeError:  # a dtype torch's kernel refuses (complex maximum): the general path handles it
            return None
        return o

    def _run_plan(self, plan: tuple[Any, ...], ta: torch.Tensor, tb: Any) -> ndarray:
        l0, l1, lout, cast_a, cast_b, want, mask, direct, min_elements, _ = plan
        if cast_a:
            ta = cast_tensor(ta, cast_a, l0)
        if tb is None:
            r = _write_new(direct, (ta,), want, min_elements) if direct is not None and \
                ta.numel() >= min_elements else None
            if r is None:
                r = self._kernel(ta)
        else:
            if cast_b:
                tb = cast_tensor(tb, cast_b, l1)
            try:
                r = _write_new(direct, (ta, tb), want, min_elements) if direct is not None and \
                    ta.numel() >= min_elements else None
                if r is None:
                    r = self._kernel(ta, tb)
            except torch.OutOfMemoryError:
                raise
            except RuntimeError:
                return self._call(_wrap(ta, l0), _wrap(tb, l1) if isinstance(tb, torch.Tensor) else tb)
        if r.dtype != want:
            r = r.to(want)
        if mask is not None:
            r = r & mask
        return _wrap(r, lout)

    def _remember(self, keys: tuple[Any, ...], loop: tuple[Any, ...]) -> None:
        if self.nout != 1 or len(keys) != self.nin:
            return
        if self.nin == 2 and not isinstance(keys[1], numpy.dtype) and (not self._scalar_ok or (
                keys[1] is int and self.name in _CMP_OOB)):
            return
        cast_a = keys[0] if keys[0] != loop[0] else None
        lout = loop[self.nin]
        want, mask = storage_dtype(lout), WRAP_MASK.get(lout)
        writer = self._writer(lout)
        tail = (want, mask, writer, self._min_elements(writer, lout), lout in _WIDE)
        if self.nin == 1:
            self._fast[keys[0]] = (loop[0], None, lout, cast_a, None, *tail)
            return
        cast_b = keys[1] if isinstance(keys[1], numpy.dtype) and keys[1] != loop[1] else None
        self._fast[keys] = (loop[0], loop[1], lout, cast_a, cast_b, *tail)

    def _call(self, *args: Any, out: Any = None, dtype: Any = None, casting: str = "same_kind",
              where: Any = True, **kwargs: Any) -> Any:
        nin = self.nin
        if len(args) != nin:
            if len(args) > nin and out is None:  # positional outputs: the missing trailing ones are None
                args, out = args[:nin], args[nin:] + (None,) * (self.nout - (len(args) - nin))
            else:
                raise TypeError(f"{self.name}() takes {nin} positional argument(s) but {len(args)} were given")
        if kwargs:
            kwargs.pop("order", None)
            kwargs.pop("subok", None)
            if kwargs:
                raise TypeError(f"{self.name}() got unexpected keyword argument(s) {sorted(kwargs)}")
        outs = self._check_outs(out)
        # objects standing for an array (cupy.poly1d) take part through __cupy_get_ndarray__, as in CuPy
        args = tuple(a.__cupy_get_ndarray__() if type(a) is not ndarray and hasattr(a, "__cupy_get_ndarray__")
                     else a for a in args)
        keys = tuple(_key(a) for a in args)
        if self.name in _CMP_OOB and int in keys:
            res = _compare_out_of_range(self.name, args)
            if res is not None:
                return self._store(res, _BOOL, outs[0], where, args)
        all_keys = keys + tuple(o._dtype if o is not None else None for o in outs)
        loop = self._resolve(all_keys, dtype, casting)
        if loop[nin] in _WIDE or (self.nout > 1 and not _WIDE.isdisjoint(loop[nin:])):  # the float64 policy
            sig = _float64.ufunc_signature(loop, nin, device_of(args))
            if sig is not None:
                loop, dtype = self._resolve(all_keys, sig, casting), sig
        if out is None and dtype is None and where is True and casting == "same_kind" and \
                isinstance(args[0], ndarray):
            self._remember(keys, loop)
        scalar_ok = self._scalar_ok
        ins = [_operand(a, loop[i], scalar_ok) for i, a in enumerate(args)]
        if self.name in _CMP_OOB and loop[0] == _dtypes.UINT64 and loop[1] == _dtypes.UINT64:
            ins = [i ^ _I64_MIN for i in ins]  # order uint64 bit patterns as unsigned (sign bit flipped)
        direct = _OUT_KERNELS.get(self.name)
        o = outs[0]
        if direct is not None and o is not None and where is True and o._dtype == loop[nin] and \
                loop[nin] not in WRAP_MASK and isinstance(ins[0], torch.Tensor):
            try:  # write straight into out= (no temporary, as NumPy does)
                shapes = [i.shape for i in ins if isinstance(i, torch.Tensor)]
                if (shapes[0] if len(shapes) == 1 else _broadcast(*shapes)) == o._t.shape:
                    direct(*unalias(ins, o._t), out=o._t)
                    return o
            except RuntimeError:
                pass
        if scalar_ok and not isinstance(ins[0], torch.Tensor) and (nin == 1 or not isinstance(ins[1], torch.Tensor)
                                                                   or self.name == "true_divide"):
            # (a scalar numerator too: torch would multiply by the reciprocal, which rounds differently)
            ins[0] = torch.tensor(ins[0], dtype=storage_dtype(loop[0]), device=current_torch_device())
        new: Any = None
        writer = self._writer(loop[nin]) if o is None and where is True and self.nout == 1 else None
        if writer is not None:
            new = _write_new(writer, ins, storage_dtype(loop[nin]), self._min_elements(writer, loop[nin]))
        try:
            if new is None:
                new = self._kernel(*ins)
        except RuntimeError as exc:
            raise _broadcast_error(args, exc) from None
        got: tuple[Any, ...] = (new,) if self.nout == 1 else new
        if not isinstance(got[0], torch.Tensor):  # every operand was a scalar
            got = tuple(torch.as_tensor(r, device=current_torch_device()) for r in got)
        results = []
        for j, r in enumerate(got):
            r = _finish(r, loop[nin + j])
            results.append(self._store(r, loop[nin + j], outs[j], where, args))
        return results[0] if self.nout == 1 else tuple(results)

    def _check_outs(self, out: Any) -> list[Any]:
        if out is None:
            return [None] * self.nout
        if not isinstance(out, tuple):
            out = (out,)
        if len(out) != self.nout:
            raise ValueError(f"The 'out' tuple must have exactly {self.nout} entries: one per ufunc output")
        for o in out:
            if o is not None and not isinstance(o, ndarray):
                raise TypeError(f"return arrays must be of ArrayType (ascend_compat.cupy.ndarray), got {type(o)}")
        return list(out)

    def _store(self, r: torch.Tensor, loop_dt: numpy.dtype, out: Optional[ndarray], where: Any,
               args: Any) -> ndarray:
        if where is not True:
            mask = asarray(where)._t if not isinstance(where, ndarray) else where._t
            if mask.dtype != torch.bool:
                raise TypeError("where= must be a boolean array")
            if out is None:
                out = _wrap(torch.empty(torch.broadcast_shapes(r.shape, mask.shape), dtype=r.dtype,
                                        device=r.device), loop_dt)
            r = torch.where(mask, cast_tensor(r, loop_dt, out._dtype), out._t)
        elif out is None:
            return _wrap(r, loop_dt)
        if tuple(r.shape) != out.shape:
            expanded: Optional[torch.Tensor] = None
            try:
                if torch.broadcast_shapes(r.shape, out._t.shape) == out._t.shape:
                    expanded = r.expand(out._t.shape)
            except RuntimeError:
                pass
            if expanded is None:
                raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't match the "
                                 "broadcast shape of the inputs")
            r = expanded
        if loop_dt.kind == "c" and out._dtype.kind not in "cb":  # casting="unsafe" into a real out=, as NumPy
            warnings.warn("Casting complex values to real discards the imaginary part", ComplexWarning, stacklevel=4)
        out._t.copy_(cast_tensor(r, loop_dt, out._dtype) if out._dtype != loop_dt else unalias((r,), out._t)[0])
        return out

    # -- methods -----------------------------------------------------------------------------------------------
    def reduce(self, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False,
               initial: Any = None, where: Any = True) -> Any:
        from ascend_compat.cupy._stats import ufunc_reduce

        return ufunc_reduce(self, array, axis, dtype, out, keepdims, initial, where)

    def accumulate(self, array: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        from ascend_compat.cupy._stats import ufunc_accumulate

        res = ufunc_accumulate(self, array, axis, dtype, out)
        return res if out is not None or res.flags.c_contiguous else res.copy()  # a new array is C-ordered

    def outer(self, a: Any, b: Any, **kwargs: Any) -> Any:
        if self.nin != 2:
            raise ValueError("outer product only supported for binary functions")
        a, b = _as_dev(a), _as_dev(b)
        if isinstance(a, ndarray) and isinstance(b, ndarray):
            a = a.reshape(a.shape + (1,) * b.ndim)
        return self(a, b, **kwargs)

    def at(self, a: ndarray, indices: Any, b: Any = None) -> None:
        """Unbuffered ``a[indices] = op(a[indices], b)``: repeated indices accumulate."""
        if self.name in _SCATTER_REDUCE and isinstance(a, ndarray) and a._dtype.kind not in "bc":
            _scatter_at(self.name, a, indices, b)
            return
        from ascend_compat.cupy._stats import ufunc_at

        ufunc_at(self, a, indices, b)

    def reduceat(self, array: Any, indices: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        """Reductions over ``array[indices[k]:indices[k+1]]`` along ``axis`` (``array[indices[k]]`` when the
        slice is empty), in the input's dtype unless ``dtype`` is given (NumPy's rules)."""
        return reduceat(self, array, indices, axis, dtype, out)


def create_ufunc(name: str, nin: int, kernel: Callable[..., Any], nout: int = 1, np_name: Optional[str] = None,
                 doc: str = "", scalar_ok: bool = False) -> ufunc:
    """A ufunc named ``name`` computing ``kernel`` with the type rules of ``numpy.<np_name or name>``.

    ``scalar_ok``: the kernel accepts Python scalars for one operand (torch operators do), saving a tensor.
    """
    return ufunc(name, nin, nout, kernel, doc, getattr(numpy, np_name or name), scalar_ok=scalar_ok)
