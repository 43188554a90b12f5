"""``ufunc`` objects: NumPy's type resolution (``numpy.ufunc.resolve_dtypes``, NEP 50 weak Python scalars) on top
of a torch kernel, with ``out=``, ``dtype=``, ``casting=``, ``where=`` and ``reduce/accumulate/outer/at``.

Loop dtypes are resolved once per (ufunc, input types, out dtype, dtype, casting) and cached, so a call on arrays
costs a dict lookup, the casts and the torch kernel.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy
import torch

from ascend_compat.cupy import _dtypes
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._dtypes import WRAP_MASK, cast_tensor, storage_dtype

_SCALARS = (int, float, complex)
_BOOL = _dtypes.BOOL
_I64_MIN, _U64_LIMIT = -(2**63), 2**64


def _key(x: Any) -> Any:
    """The type key of an operand: its dtype, or the Python scalar type (weak under NEP 50)."""
    if isinstance(x, ndarray):
        return x._dtype
    tp = type(x)
    if tp is bool:
        return _BOOL
    if tp in _SCALARS:
        return tp
    if isinstance(x, numpy.generic):
        return _dtypes.to_numpy_dtype(x.dtype)
    if isinstance(x, numpy.ndarray):
        raise TypeError("Unsupported type <class 'numpy.ndarray'>: a host NumPy array cannot be mixed into a "
                        "device ufunc; use ascend_compat.cupy.asarray(x) first")
    if isinstance(x, (list, tuple)):
        raise TypeError(f"Unsupported type {tp}: convert sequences with ascend_compat.cupy.asarray first")
    raise TypeError(f"Unsupported type {tp}")


def _operand(x: Any, dt: numpy.dtype, scalar_ok: bool) -> Any:
    """``x`` as a torch tensor in the storage type of loop dtype ``dt`` (a Python scalar where ``scalar_ok``)."""
    if isinstance(x, ndarray):
        return cast_tensor(x._t, x._dtype, dt)
    if isinstance(x, numpy.generic):
        x = x.item()
    if dt.kind in "iu" and isinstance(x, int) and not isinstance(x, bool):
        _check_int_range(x, dt)
        if dt == _dtypes.UINT64 and x >= 2**63:
            x -= _U64_LIMIT
    elif dt.kind == "b":
        x = bool(x)
    elif dt.kind == "f" and isinstance(x, complex):
        x = x.real
    if dt == _F16 and isinstance(x, (int, float)) and not isinstance(x, bool):
        with numpy.errstate(over="ignore"):  # NumPy rounds the scalar to float16 first (65535 -> inf)
            x = float(numpy.float16(x))
    if scalar_ok and not isinstance(x, bool):
        return x
    return torch.tensor(x, dtype=storage_dtype(dt), device=current_torch_device())


_F16 = numpy.dtype(numpy.float16)
_RANGES: dict[numpy.dtype, tuple[int, int]] = {}


def _check_int_range(x: int, dt: numpy.dtype) -> None:
    lim = _RANGES.get(dt)
    if lim is None:
        info = numpy.iinfo(dt)
        lim = _RANGES[dt] = (int(info.min), int(info.max))
    if not lim[0] <= x <= lim[1]:
        raise OverflowError(f"Python integer {x} out of bounds for {dt}")


# For a Python int beyond the array's integer range, NumPy 2 compares by value: the answer is constant.
_CMP_OOB = {"less": (True, False), "less_equal": (True, False), "greater": (False, True),
            "greater_equal": (False, True), "equal": (False, False), "not_equal": (True, True)}
_SWAP = {"less": "greater", "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal",
         "equal": "equal", "not_equal": "not_equal"}


def _compare_out_of_range(name: str, args: Any) -> Optional[torch.Tensor]:
    """``array OP int`` as a constant bool tensor when the int lies outside the array's integer range."""
    arr, val = args
    if not isinstance(arr, ndarray):
        arr, val, name = val, arr, _SWAP[name]
    if not isinstance(arr, ndarray) or type(val) is not int or arr._dtype.kind not in "iu":
        return None
    info = numpy.iinfo(arr._dtype)
    if info.min <= val <= info.max:
        return None
    above = val > info.max
    const = _CMP_OOB[name][0] if above else _CMP_OOB[name][1]
    return torch.full(arr._t.shape, const, dtype=torch.bool, device=arr._t.device)


# ufuncs whose torch function can write into ``out=`` directly (same dtype, same shape).
_OUT_KERNELS: dict[str, Callable[..., Any]] = {
    "add": torch.add, "subtract": torch.sub, "multiply": torch.mul, "maximum": torch.maximum,
    "minimum": torch.minimum, "cos": torch.cos, "sin": torch.sin, "tan": torch.tan, "exp": torch.exp,
    "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh, "absolute": torch.abs, "negative": torch.neg,
    "square": torch.square, "log1p": torch.log1p, "expm1": torch.expm1,
}


def _broadcast(s1: Any, s2: Any) -> Any:
    """The broadcast of two shapes (None when they do not broadcast); torch's version is slow Python."""
    if s1 == s2:
        return s1
    n = max(len(s1), len(s2))
    a, b = (1,) * (n - len(s1)) + tuple(s1), (1,) * (n - len(s2)) + tuple(s2)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return torch.Size(out)


def _finish(t: torch.Tensor, loop_out: numpy.dtype) -> torch.Tensor:
    """Bring a kernel result into the storage of ``loop_out`` (wrapping widened unsigned types)."""
    want = storage_dtype(loop_out)
    if t.dtype != want:
        t = t.to(want)
    mask = WRAP_MASK.get(loop_out)
    if mask is not None:
        t = t & mask
    return t


def _broadcast_error(args: Any, exc: Exception) -> Exception:
    shapes = [tuple(a._t.shape) for a in args if isinstance(a, ndarray)]
    try:
        torch.broadcast_shapes(*shapes)
    except RuntimeError:
        text = " ".join(str(s).replace(" ", "") for s in shapes)
        return ValueError(f"operands could not be broadcast together with shapes {text}")
    return exc


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
            sig = None
            if dtype is not None:
                dt = _dtypes.to_numpy_dtype(dtype)
                sig = (None,) * self.nin + (dt,) * self.nout
            loop = (self._np.resolve_dtypes(keys, casting=casting) if sig is None else
                    self._np.resolve_dtypes(keys, signature=sig, casting=casting))
            for d in loop:
                _dtypes.to_numpy_dtype(d)
            self._cache[ck] = loop
        return loop

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Fast path: device arrays (and a Python scalar operand), no keywords, a loop seen before.
        if not kwargs and len(args) == self.nin:
            a = args[0]
            if type(a) is ndarray:
                if self.nin == 1:
                    plan = self._fast.get(a._dtype)
                    if plan is not None:
                        return self._run_plan(plan, a._t, None)
                else:
                    b = args[1]
                    tb = type(b)
                    plan = self._fast.get((a._dtype, b._dtype if tb is ndarray else tb))
                    if plan is not None:
                        return self._run_plan(plan, a._t, b._t if tb is ndarray else _operand(b, plan[1], True))
        elif len(kwargs) == 1 and len(args) == self.nin and type(kwargs.get("out")) is ndarray:
            done = self._direct_out(args, kwargs["out"])
            if done is not None:
                return done
        return self._call(*args, **kwargs)

    def _direct_out(self, args: tuple[Any, ...], o: ndarray) -> Optional[ndarray]:
        """``f(a, b, out=o)`` for device arrays whose loop is known, written by torch straight into ``o``."""
        direct = _OUT_KERNELS.get(self.name)
        if direct is None or any(type(a) is not ndarray for a in args):
            return None
        plan = self._fast.get(args[0]._dtype if self.nin == 1 else (args[0]._dtype, args[1]._dtype))
        if plan is None or plan[2] != o._dtype or plan[3] or plan[4] or plan[6] is not None:
            return None
        ts = [a._t for a in args]
        if (ts[0].shape if self.nin == 1 else _broadcast(ts[0].shape, ts[1].shape)) != o._t.shape:
            return None
        direct(*ts, out=o._t)
        return o

    def _run_plan(self, plan: tuple[Any, ...], ta: torch.Tensor, tb: Any) -> ndarray:
        l0, l1, lout, cast_a, cast_b, want, mask = plan
        if cast_a:
            ta = cast_tensor(ta, cast_a, l0)
        if tb is None:
            r = self._kernel(ta)
        else:
            if cast_b:
                tb = cast_tensor(tb, cast_b, l1)
            try:
                r = self._kernel(ta, tb)
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
        if self.nin == 1:
            self._fast[keys[0]] = (loop[0], None, loop[1], cast_a, None, storage_dtype(loop[1]),
                                   WRAP_MASK.get(loop[1]))
            return
        cast_b = keys[1] if isinstance(keys[1], numpy.dtype) and keys[1] != loop[1] else None
        self._fast[keys] = (loop[0], loop[1], loop[2], cast_a, cast_b, storage_dtype(loop[2]),
                            WRAP_MASK.get(loop[2]))

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
        keys = tuple(_key(a) for a in args)
        if self.name in _CMP_OOB and int in keys:
            res = _compare_out_of_range(self.name, args)
            if res is not None:
                return self._store(res, _BOOL, outs[0], where, args)
        loop = self._resolve(keys + tuple(o._dtype if o is not None else None for o in outs), dtype, casting)
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
                    direct(*ins, out=o._t)
                    return o
            except RuntimeError:
                pass
        if scalar_ok and not isinstance(ins[0], torch.Tensor) and (nin == 1 or not isinstance(ins[1], torch.Tensor)
                                                                   or self.name == "true_divide"):
            # (a scalar numerator too: torch would multiply by the reciprocal, which rounds differently)
            ins[0] = torch.tensor(ins[0], dtype=storage_dtype(loop[0]), device=current_torch_device())
        try:
            res = self._kernel(*ins)
        except RuntimeError as exc:
            raise _broadcast_error(args, exc) from None
        if self.nout == 1:
            res = (res,)
        if not isinstance(res[0], torch.Tensor):  # every operand was a scalar
            res = tuple(torch.as_tensor(r, device=current_torch_device()) for r in res)
        results = []
        for j, r in enumerate(res):
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
            try:
                r = r.expand(out._t.shape) if torch.broadcast_shapes(r.shape, out._t.shape) == out._t.shape \
                    else None
            except RuntimeError:
                r = None
            if r is None:
                raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't match the "
                                 "broadcast shape of the inputs")
        out._t.copy_(cast_tensor(r, loop_dt, out._dtype) if out._dtype != loop_dt else r)
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
        from ascend_compat.cupy._manipulation import concatenate, normalize_axis

        if self.nin != 2:
            raise ValueError("reduceat only supported for binary functions")
        a = asarray(array)
        ax = normalize_axis(axis, a.ndim)
        idx = [int(i) for i in (indices.get() if isinstance(indices, ndarray) else numpy.asarray(indices)).ravel()]
        n = a.shape[ax]
        if any(i < 0 or i >= n for i in idx):
            raise IndexError(f"index out of bounds for axis {ax} with size {n}")
        head = (slice(None),) * ax
        # the dtype reduce gives (int8 -> int64 for add, as NumPy), unless ``dtype`` is given
        dt = self.reduce(a[(*head, slice(0, 1))], axis=ax).dtype if dtype is None else _dtypes.to_numpy_dtype(dtype)
        parts = []
        for k, i in enumerate(idx):
            j = idx[k + 1] if k + 1 < len(idx) else n
            if i < j:
                parts.append(self.reduce(a[(*head, slice(i, j))], axis=ax, dtype=dt, keepdims=True).astype(dt))
            else:
                parts.append(a[(*head, slice(i, i + 1))].astype(dt))
        res = concatenate(parts, axis=ax) if parts else a[(*head, slice(0, 0))].astype(dt)
        if out is not None:
            out[...] = res
            return out
        return res


_SCATTER_REDUCE = {"add": "sum", "subtract": "sum", "maximum": "amax", "minimum": "amin"}


def _scatter_at(name: str, a: ndarray, indices: Any, b: Any) -> None:
    """``add/subtract/maximum/minimum.at`` as one torch scatter-reduce over the flat positions ``indices`` pick."""
    t = a._t
    flat_idx = _wrap(torch.arange(a.size, device=t.device).reshape(a.shape))[indices]._t
    vals = asarray(b) if not isinstance(b, ndarray) else b
    bt = cast_tensor(vals._t, vals._dtype, a._dtype).to(t.device)
    try:
        bt = bt.broadcast_to(flat_idx.shape).reshape(-1)
    except RuntimeError:
        raise ValueError(f"array is not broadcastable to correct shape: {vals.shape} into {tuple(flat_idx.shape)}") \
            from None
    if name == "subtract":
        bt = -bt
    flat = t.contiguous().view(-1)
    flip = a._dtype == _dtypes.UINT64 and name != "add" and name != "subtract"
    if flip:  # uint64 held as its int64 bit pattern: flipping the top bit makes signed order the unsigned one
        flat, bt = flat ^ _INT64_MIN, bt ^ _INT64_MIN
    flat.scatter_reduce_(0, flat_idx.reshape(-1), bt, _SCATTER_REDUCE[name], include_self=True)
    if flip:
        flat ^= _INT64_MIN
    if a._dtype in WRAP_MASK:  # uint16/uint32 held widened: wrap sums back into range
        flat &= WRAP_MASK[a._dtype]
    if flat.data_ptr() != t.data_ptr() or flip:
        t.copy_(flat.view(t.shape))


_INT64_MIN = -(2**63)


def _as_dev(x: Any) -> Any:
    if isinstance(x, numpy.ndarray):
        raise TypeError("Unsupported type <class 'numpy.ndarray'>")
    return x if isinstance(x, (ndarray, *_SCALARS, bool, numpy.generic)) else asarray(x)


def create_ufunc(name: str, nin: int, kernel: Callable[..., Any], nout: int = 1, np_name: Optional[str] = None,
                 doc: str = "", scalar_ok: bool = False) -> ufunc:
    """A ufunc named ``name`` computing ``kernel`` with the type rules of ``numpy.<np_name or name>``.

    ``scalar_ok``: the kernel accepts Python scalars for one operand (torch operators do), saving a tensor.
    """
    return ufunc(name, nin, nout, kernel, doc, getattr(numpy, np_name or name), scalar_ok=scalar_ok)
