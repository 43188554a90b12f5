"""``ufunc`` objects: NumPy's type resolution (``numpy.ufunc.resolve_dtypes``, NEP 50 weak Python scalars) on top
of a torch kernel, with ``out=``, ``dtype=``, ``casting=``, ``where=`` and ``reduce/accumulate/outer/at``.

Loop dtypes are resolved once per (ufunc, input types, out dtype, dtype, casting) and cached, so a call on arrays
costs a dict lookup, the casts and the torch kernel. A large new result on the CPU is allocated with huge pages
(``_ufunc_write``) and written by the kernel in place; the device running out of memory raises CuPy's
``OutOfMemoryError``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy
import torch

from ascend_compat.cupy import _alloc, _dtypes, _float64
from ascend_compat.cupy._broadcast_errors import broadcast_pair, check_operands, failure
from ascend_compat.cupy._core import _wrap, current_torch_device, ndarray
from ascend_compat.cupy._dtypes import WRAP_MASK, cast_tensor, storage_dtype
from ascend_compat.cupy._ufunc_support import (
    _BOOL,
    _CMP_OOB,
    _I64_MIN,
    _SCATTER_REDUCE,
    UINT64_KERNELS,
    _as_dev,
    _broadcast_error,
    _compare_out_of_range,
    _key,
    _operand,
    _scatter_at,
    device_of,
    reduceat,
    unalias,
)
from ascend_compat.cupy._ufunc_write import (
    NUMPY_FASTER,
    NUMPY_MIN,
    OUT_KERNELS,
    NumpyWriter,
    finish,
    min_elements,
    out_kernel,
    store,
    write_new,
    writer_for,
)

_FULL_F64, _WIDE = _float64.FULL_FLOAT64, _float64.WIDE


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
        self._np_writer = NumpyWriter(self._np) if name in NUMPY_FASTER else None

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
        except (ValueError, RuntimeError):
            # NumPy's error where out=/where= do not broadcast: checked after a failure (it costs more than a call)
            self._recheck(args, kwargs)
            raise

    def _recheck(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Raise NumPy's broadcasting error for the operands, outputs and mask of a call that failed, if any."""
        out = args[self.nin:] or kwargs.get("out")
        where = kwargs.get("where", True)
        err = None if out is None and where is True else \
            failure(args[:self.nin], out if isinstance(out, tuple) else (out,), where)
        if err is not None:
            raise err from None

    def _direct_out(self, args: tuple[Any, ...], o: ndarray) -> Optional[ndarray]:
        """``f(a, b, out=o)`` for device arrays whose loop is known, written by torch straight into ``o`` (inputs
        overlapping ``o`` copied first, as NumPy does)."""
        direct = OUT_KERNELS.get(self.name)
        a = args[0]
        if direct is None or type(a) is not ndarray:
            return None
        ot = o._t
        ts: tuple[torch.Tensor, ...]
        shape: Optional[tuple[int, ...]]
        if self.nin == 1:
            plan, ts, shape = self._fast.get(a._dtype), (a._t,), a._t.shape
        else:
            b = args[1]
            if type(b) is not ndarray:
                return None
            plan, ts = self._fast.get((a._dtype, b._dtype)), (a._t, b._t)
            shape = broadcast_pair(a._t.shape, b._t.shape)
        if plan is None or plan[2] != o._dtype or plan[3] or plan[4] or plan[6] is not None or shape != ot.shape \
                or (plan[9] and ot.device.type not in _FULL_F64):
            return None
        writer = plan[7]
        if isinstance(writer, NumpyWriter):
            if ot.numel() >= NUMPY_MIN and ot.device.type == "cpu":
                direct = writer  # NumPy's kernel, faster on the CPU for this op and dtype
        elif writer is not None:
            direct = writer  # (the loop's own: complex add/subtract/negative part by part)
        try:
            direct(*unalias(ts, ot), out=ot)
        except torch.OutOfMemoryError:
            raise
        except RuntimeError:  # a dtype torch's kernel refuses (complex maximum): the general path handles it
            return None
        return o

    def _run_plan(self, plan: tuple[Any, ...], ta: torch.Tensor, tb: Any) -> ndarray:
        l0, l1, lout, cast_a, cast_b, want, mask, direct, min_count, _ = plan
        if cast_a:
            ta = cast_tensor(ta, cast_a, l0)
        if tb is None:
            r = write_new(direct, (ta,), want, min_count) if direct is not None and \
                ta.numel() >= min_count else None
            if r is None:
                r = self._kernel(ta)
        else:
            if cast_b:
                tb = cast_tensor(tb, cast_b, l1)
            try:
                r = write_new(direct, (ta, tb), want, min_count) if direct is not None and \
                    ta.numel() >= min_count else None
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

    def _plain_loop(self, keys: tuple[Any, ...]) -> Optional[tuple[Any, ...]]:
        """The loop for ``keys`` without out= (which out= may change), so that code passing only out= gets the fast
        paths too; None where the inputs alone have no loop. (The float64 policy's loops are not applied here:
        the fast paths refuse wide loops off the CPU/CUDA.)"""
        try:
            return self._resolve(keys + (None,) * self.nout)
        except (TypeError, ValueError):  # NumPy's UFuncTypeError is a TypeError
            return None

    def _remember(self, keys: tuple[Any, ...], loop: Optional[tuple[Any, ...]]) -> None:
        if loop is None or self.nout != 1 or len(keys) != self.nin or (
                loop[0] == _dtypes.UINT64 and self.name in UINT64_KERNELS):
            return
        if self.nin == 2 and not isinstance(keys[1], numpy.dtype) and (not self._scalar_ok or (
                keys[1] is int and self.name in _CMP_OOB)):
            return
        cast_a = keys[0] if keys[0] != loop[0] else None
        lout = loop[self.nin]
        want, mask = storage_dtype(lout), WRAP_MASK.get(lout)
        writer = writer_for(self.name, self._np_writer, lout)
        tail = (want, mask, writer, min_elements(writer, lout), lout in _WIDE)
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
        if self.nout > 1 and out is not None:  # (every output checked before the first is written)
            check_operands(args, outs, where)
        if out is not None and any(o is not None and o._is_flip for o in outs):
            return self._into_flipped(args, outs, dtype=dtype, casting=casting, where=where)
        # objects standing for an array (cupy.poly1d) take part through __cupy_get_ndarray__, as in CuPy
        args = tuple(a.__cupy_get_ndarray__() if type(a) is not ndarray and hasattr(a, "__cupy_get_ndarray__")
                     else a for a in args)
        keys = tuple(_key(a) for a in args)
        if self.name in _CMP_OOB and int in keys:
            res = _compare_out_of_range(self.name, args)
            if res is not None:
                return store(res, _BOOL, outs[0], where)
        all_keys = keys + tuple(o._dtype if o is not None else None for o in outs)
        loop = self._resolve(all_keys, dtype, casting)
        if loop[nin] in _WIDE or (self.nout > 1 and not _WIDE.isdisjoint(loop[nin:])):  # the float64 policy
            sig = _float64.ufunc_signature(loop, nin, device_of(args))
            if sig is not None:
                loop, dtype = self._resolve(all_keys, sig, casting), sig
        if dtype is None and where is True and casting == "same_kind" and isinstance(args[0], ndarray):
            self._remember(keys, loop if out is None else self._plain_loop(keys))
        scalar_ok = self._scalar_ok
        ins = [_operand(a, loop[i], scalar_ok) for i, a in enumerate(args)]
        if self.name in _CMP_OOB and loop[0] == _dtypes.UINT64 and loop[1] == _dtypes.UINT64:
            ins = [i ^ _I64_MIN for i in ins]  # order uint64 bit patterns as unsigned (sign bit flipped)
        direct = out_kernel(self.name, loop[nin])
        o = outs[0]
        if direct is not None and o is not None and where is True and o._dtype == loop[nin] and \
                loop[nin] not in WRAP_MASK and isinstance(ins[0], torch.Tensor):
            try:  # write straight into out= (no temporary, as NumPy does)
                shapes = [i.shape for i in ins if isinstance(i, torch.Tensor)]
                if (shapes[0] if len(shapes) == 1 else broadcast_pair(*shapes)) == o._t.shape:
                    direct(*unalias(ins, o._t), out=o._t)
                    return o
            except RuntimeError:
                pass
        if scalar_ok and not isinstance(ins[0], torch.Tensor) and (nin == 1 or not isinstance(ins[1], torch.Tensor)
                                                                   or self.name == "true_divide"):
            # (a scalar numerator too: torch would multiply by the reciprocal, which rounds differently)
            ins[0] = torch.tensor(ins[0], dtype=storage_dtype(loop[0]), device=current_torch_device())
        new: Any = None
        writer = None
        if o is None and where is True and self.nout == 1:
            writer = writer_for(self.name, self._np_writer, loop[nin])
        if writer is not None:
            new = write_new(writer, ins, storage_dtype(loop[nin]), min_elements(writer, loop[nin]))
        try:
            if new is None:
                kernel = UINT64_KERNELS.get(self.name, self._kernel) if loop[0] == _dtypes.UINT64 else self._kernel
                new = kernel(*ins)
        except RuntimeError as exc:
            raise _broadcast_error(args, exc) from None
        got: tuple[Any, ...] = (new,) if self.nout == 1 else new
        if not isinstance(got[0], torch.Tensor):  # every operand was a scalar
            got = tuple(torch.as_tensor(r, device=current_torch_device()) for r in got)
        results = []
        for j, r in enumerate(got):
            r = finish(r, loop[nin + j])
            results.append(store(r, loop[nin + j], outs[j], where))
        return results[0] if self.nout == 1 else tuple(results)

    def _into_flipped(self, args: tuple[Any, ...], outs: list[Any], **kwargs: Any) -> Any:
        """``out=`` arrays with negative strides: computed into scratch copies, written back (``_core_flip``)."""
        from ascend_compat.cupy._core_flip import scratch_outs, write_back

        souts, pairs = scratch_outs(tuple(outs))
        res = self._call(*args, out=souts, **kwargs)
        for o, s in pairs:
            write_back(o, s._t)
        swap = {id(s): o for o, s in pairs}
        return swap.get(id(res), res) if self.nout == 1 else tuple(swap.get(id(r), r) for r in res)

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
        if getattr(a, "_is_flip", False):  # negative strides: on a scratch copy, written back
            from ascend_compat.cupy._core_flip import rmw

            rmw(a, self.at, indices, b)
            return
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
