"""Generalized ufuncs (``cupy._core._gufuncs._GUFunc``): a Python function over core dimensions, described by a
signature such as ``(i,j),(j,k)->(i,k)``, applied over the broadcast loop dimensions, with NumPy's ``axes``/
``axis``/``keepdims``/``out``/``dtype``/``signature``/``casting``/``order`` arguments. Core dimensions may be optional
(``n?``: skipped from the front when an operand has too few dimensions) or broadcastable (``n|1``)."""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

import numpy
from numpy.exceptions import AxisError

from ascend_compat.cupy._core import asarray, ndarray

CoreDim = tuple[str, bool, bool]  # (name, optional, broadcastable)
_DIM = re.compile(r"(\w+)(\?)?(\|1)?")
_ARGS = re.compile(r"\([^()]*\)(?:,\([^()]*\))*")


def _parse_args(text: str, signature: str) -> list[tuple[CoreDim, ...]]:
    if text == "":
        return [()]
    if not _ARGS.fullmatch(text):
        raise ValueError(f"not a valid gufunc signature: {signature!r}")
    out = []
    for body in re.findall(r"\(([^()]*)\)", text):
        dims = []
        for item in body.split(",") if body else []:
            m = _DIM.fullmatch(item)
            if m is None:
                raise ValueError(f"not a valid core dimension {item!r} in gufunc signature {signature!r}")
            dims.append((m.group(1), m.group(2) is not None, m.group(3) is not None))
        out.append(tuple(dims))
    return out


def _parse_gufunc_signature(signature: str) -> tuple[list[tuple[CoreDim, ...]], list[tuple[CoreDim, ...]], int]:
    """(input core dims, output core dims, number of distinct core dimension names) of ``signature``."""
    if not isinstance(signature, str):
        raise TypeError("the gufunc signature must be a string")
    sig = re.sub(r"\s+", "", signature)
    if sig.count("->") != 1:
        raise ValueError(f"not a valid gufunc signature: {signature!r}")
    ins, outs = sig.split("->")
    in_dims, out_dims = _parse_args(ins, signature), _parse_args(outs, signature)
    names = {d[0] for arg in in_dims + out_dims for d in arg}
    return in_dims, out_dims, len(names)


class _Loop:
    """One typed implementation: ``('ii->i', func)``."""

    def __init__(self, sig: str, func: Callable[..., Any], nin: int, nout: int) -> None:
        ins, arrow, outs = sig.partition("->") if isinstance(sig, str) else ("", "", "")
        if not arrow or len(ins) != nin or len(outs) != nout:
            raise ValueError(f"signature {sig!r} for dtypes is invalid: it needs {nin} input and {nout} output types")
        self.sig, self.func = sig, func
        self.in_types = tuple(numpy.dtype(c) for c in ins)
        self.out_types = tuple(numpy.dtype(c) for c in outs)


class _GUFunc:
    """A generalized ufunc over ``func`` (``signatures``: typed implementations tried before ``func``)."""

    def __init__(self, func: Callable[..., Any], signature: str, *, name: Optional[str] = None,
                 doc: Optional[str] = None, supports_batched: bool = False, supports_out: bool = False,
                 signatures: Any = ()) -> None:
        self._func, self._signature = func, signature
        self.__name__ = name or getattr(func, "__name__", "gufunc")
        self.__doc__ = doc or func.__doc__
        self._in_cd, self._out_cd, self._n_names = _parse_gufunc_signature(signature)
        self._nin, self._nout = len(self._in_cd), len(self._out_cd)
        self._batched, self._supports_out = supports_batched, supports_out
        self._min_dims = [sum(1 for d in cd if not d[1]) for cd in self._in_cd]
        self._loops = [_Loop(sig, f, self._nin, self._nout) for sig, f in signatures]

    # -- dtypes ---------------------------------------------------------------------------------------------
    def _find_loop(self, args: list[ndarray], dtype: Any, casting: Any, signature: Any) -> Optional[_Loop]:
        if signature is not None:
            if isinstance(signature, tuple):
                if len(signature) != self._nin + self._nout:
                    raise TypeError(f"a type-tuple must have {self._nin + self._nout} entries for {self.__name__}")
                chars = [numpy.dtype(t).char for t in signature]
                signature = "".join(chars[: self._nin]) + "->" + "".join(chars[self._nin:])
            for loop in self._loops:
                if loop.sig == signature or (len(signature) == 1 and all(t.char == signature
                                                                         for t in loop.out_types)):
                    return loop
            raise TypeError(f"No loop matching the specified signature and casting was found for {self.__name__}")
        if dtype is not None:
            dt = numpy.dtype(dtype)
            return next((lp for lp in self._loops if all(t == dt for t in lp.out_types)), None)
        return next((lp for lp in self._loops
                     if all(numpy.can_cast(a.dtype, t, casting) for a, t in zip(args, lp.in_types))), None)

    def _resolve(self, args: list[ndarray], dtype: Any, casting: Any,
                 signature: Any) -> tuple[list[ndarray], numpy.dtype, Callable[..., Any]]:
        loop = self._find_loop(args, dtype, casting, signature)
        if loop is None:
            ret = numpy.dtype(dtype) if dtype is not None else numpy.result_type(*[a.dtype for a in args])
            return args, ret, self._func
        cast = []
        for i, (a, t) in enumerate(zip(args, loop.in_types)):
            if not numpy.can_cast(a.dtype, t, casting):
                raise TypeError(f"Cannot cast {self.__name__} input {i} from {a.dtype} to {t} with casting rule "
                                f"{casting!r}")
            cast.append(a.astype(t, copy=False))
        return cast, loop.out_types[0], loop.func

    # -- axes -----------------------------------------------------------------------------------------------
    def _normalize_axes(self, axes: Any, axis: Any, keepdims: bool) -> tuple[list[Any], list[Any], int]:
        if axes is not None and axis is not None:
            raise ValueError("Only one of `axis` or `axes` keyword arguments should be given")
        if axes is not None and not isinstance(axes, list):
            raise ValueError("`axes` has to be of type list")
        kept = 0
        if keepdims:
            counts = {len(cd) for cd in self._in_cd}
            if len(counts) != 1:
                raise ValueError("`keepdims` requires all inputs to have the same number of core dimensions")
            if any(self._out_cd):
                raise ValueError("`keepdims` can only be used for scalar outputs")
            kept = counts.pop()
        if axis is not None:
            if not isinstance(axis, (int, numpy.integer)):
                raise ValueError("`axis` argument has to be an integer value")
            if self._n_names != 1:
                raise ValueError(f"`axis` can be used only if there is a single shared core dimension, but the "
                                 f"signature {self._signature!r} has {self._n_names}")
            outs = [(axis,)] * self._nout if kept else [(axis,) if cd else () for cd in self._out_cd]
            axes = [(axis,) if cd else () for cd in self._in_cd] + outs
        elif axes is not None:
            axes = [(a,) if isinstance(a, (int, numpy.integer)) else a for a in axes]
        else:
            axes = [None] * (self._nin + self._nout)
        if len(axes) == self._nin:
            if any(self._out_cd):
                raise ValueError("`axes` entries for outputs can only be omitted if none of them has core axes")
            axes = axes + [None] * self._nout
        elif len(axes) != self._nin + self._nout:
            raise ValueError("The number of `axes` entries is not equal to the number of input and output arguments")
        return axes[: self._nin], axes[self._nin:], kept

    @staticmethod
    def _core_axes(i: int, axs: Any, ndim: int, n_core: int) -> Optional[tuple[int, ...]]:
        """The normalized core axes of operand ``i`` (None: the last ``n_core``)."""
        if axs is None:
            if ndim < n_core:
                raise ValueError(f"Argument {i} has too few dimensions ({ndim} < {n_core}).")
            return None
        axs = tuple(axs)
        if len(axs) != n_core:
            raise AxisError(f"Number of axes passed for argument {i} does not match the number of core dimensions")
        norm = tuple(numpy.lib.array_utils.normalize_axis_index(int(a), ndim) for a in axs)
        if len(set(norm)) != len(norm):
            raise ValueError(f"repeated axis in `axes` for argument {i}")
        return None if norm == tuple(range(ndim - n_core, ndim)) else norm

    # -- operands -------------------------------------------------------------------------------------------
    def _inputs(self, args: list[ndarray], in_axes: list[Any]) -> tuple[list[ndarray], tuple[int, ...], dict]:
        from ascend_compat.cupy._manipulation import broadcast_to, expand_dims, moveaxis

        sizes: dict[str, int] = {}
        outers = []
        for i, (arg, axs, cd) in enumerate(zip(args, in_axes, self._in_cd)):
            n_core = max(self._min_dims[i], min(arg.ndim, len(cd)))
            norm = self._core_axes(i, axs, arg.ndim, n_core)
            if norm is not None:
                arg = moveaxis(arg, norm, tuple(range(arg.ndim - n_core, arg.ndim)))
            outer = arg.shape[: arg.ndim - n_core]
            core = iter(arg.shape[arg.ndim - n_core:])
            skip, omitted = len(cd) - n_core, []
            for k, dim in enumerate(cd):
                if dim[1] and skip > 0:  # optional dimensions are skipped from the front
                    skip -= 1
                    omitted.append(len(outer) + k)
                    self._record(i, sizes, dim, -1)
                else:
                    self._record(i, sizes, dim, next(core))
            if omitted:  # the function always sees every core dimension (size 1 where skipped)
                arg = expand_dims(arg, tuple(omitted))
            outers.append(outer)
            args[i] = arg
        shape = tuple(numpy.broadcast_shapes(*outers)) if outers else ()
        for i, (arg, outer) in enumerate(zip(args, outers)):
            if outer != shape:
                args[i] = broadcast_to(arg, shape + arg.shape[len(outer):])
        return args, shape, sizes

    def _record(self, i: int, sizes: dict[str, int], dim: CoreDim, length: int) -> None:
        name, _, bcast = dim
        prev = sizes.get(name)
        if length == 1 and bcast and prev != -1:
            return  # a broadcastable dimension of size 1 takes the other operands' size
        if prev is None:
            sizes[name] = length
        elif prev != length:
            if -1 in (prev, length):
                raise ValueError("An optional core dimension must be skipped in all or no inputs.")
            raise ValueError(f"Input operand {i} has a mismatch in its core dimension {name} with signature "
                             f"{self._signature!r} ({prev} != {length}).")

    def _outputs(self, outs: list[Any], out_axes: list[Any], shape: tuple[int, ...], sizes: dict[str, int],
                 kept: int, ret: numpy.dtype, order: str, casting: Any) -> tuple[list[ndarray], list[ndarray]]:
        from ascend_compat.cupy._creation import empty
        from ascend_compat.cupy._manipulation import expand_dims, moveaxis

        views, users = [], []
        for j, (out, axs, cd) in enumerate(zip(outs, out_axes, self._out_cd)):
            omitted = [len(shape) + k for k, d in enumerate(cd) if sizes.get(d[0]) == -1]
            core = [1] * kept if kept else [sizes.get(d[0]) or 1 for d in cd if sizes.get(d[0]) != -1]
            full = shape + tuple(core)
            norm = self._core_axes(self._nin + j, axs, len(full), len(core))
            if out is None:
                user_shape = full
                if norm is not None:  # the user's array has its core dimensions at ``norm``
                    rest = iter(shape)
                    user_shape = tuple(core[norm.index(k)] if k in norm else next(rest) for k in range(len(full)))
                out = empty(user_shape, dtype=ret, order=order)
            elif not numpy.can_cast(ret, out.dtype, casting):
                raise TypeError(f"Cannot cast the output from {ret} to {out.dtype} with casting rule {casting!r}")
            view = out if norm is None else moveaxis(out, norm, tuple(range(len(shape), len(full))))
            if view.shape != full:
                raise ValueError(f"Output operand {j} has invalid shape {out.shape}, expected {full}")
            if omitted:
                view = expand_dims(view, tuple(omitted))
            if kept:  # the function does not see the kept dimensions
                view = view[(Ellipsis,) + (0,) * kept]
            views.append(view)
            users.append(out)
        return views, users

    def _apply(self, func: Callable[..., Any], shape: tuple[int, ...], args: list[ndarray],
               outs: list[ndarray]) -> None:
        if self._batched or not shape:
            if self._supports_out:
                func(*args, out=outs[0] if len(outs) == 1 else tuple(outs))
                return
            res = func(*args)
            for o, r in zip(outs, (res,) if isinstance(res, ndarray) or self._nout == 1 else res):
                o[...] = r
            return
        for k in range(shape[0]):  # one call per loop position, as the function handles core dimensions only
            self._apply(func, shape[1:], [a[k] for a in args], [o[k] for o in outs])

    def __call__(self, *args: Any, axes: Any = None, axis: Any = None, keepdims: bool = False,
                 casting: str = "same_kind", dtype: Any = None, signature: Any = None, order: str = "K",
                 out: Any = None) -> Any:
        if len(args) != self._nin:
            raise ValueError(f"According to `signature`, `func` requires {self._nin} arguments, but {len(args)} "
                             "given")
        if any(isinstance(a, numpy.ndarray) for a in args):
            raise TypeError("Unsupported type <class 'numpy.ndarray'>: use ascend_compat.cupy.asarray first")
        arrays, ret, func = self._resolve([asarray(a) for a in args], dtype, casting, signature)
        outs = [None] * self._nout if out is None else list(out) if isinstance(out, tuple) else [out]
        if any(o is not None and not isinstance(o, ndarray) for o in outs) or len(outs) != self._nout:
            raise TypeError("`out` must be a cupy.ndarray or a tuple of one per output")
        in_axes, out_axes, kept = self._normalize_axes(axes, axis, keepdims)
        out_order = _order(arrays, order)
        arrays, shape, sizes = self._inputs(arrays, in_axes)
        views, users = self._outputs(outs, out_axes, shape, sizes, kept, ret, out_order, casting)
        self._apply(func, shape, arrays, views)
        return users[0] if len(users) == 1 else tuple(users)


def _order(args: list[ndarray], order: str) -> str:
    order = str(order).upper()
    if order in ("C", "K"):
        return "C"
    if order == "A":
        return "F" if args and all(a.flags.f_contiguous and not a.flags.c_contiguous for a in args) else "C"
    if order == "F":
        return "F"
    raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


def _matmul_core(x: ndarray, y: ndarray) -> ndarray:
    from ascend_compat.cupy._linalg_top import matmul

    return matmul(x, y)


# ``matmul(..., axes=/axis=)`` runs through this gufunc (its plain calls do not: they need no axis handling).
matmul = _GUFunc(_matmul_core, "(n?,k),(k,m?)->(n?,m?)", name="matmul", supports_batched=True)
