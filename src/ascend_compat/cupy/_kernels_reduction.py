"""Reduction kernels: ``cupy.ReductionKernel`` and ``cupy._core.create_reduction_func`` for kernels whose
``reduce_expr`` is a sum, product, maximum, minimum or logical and/or of ``a`` and ``b``; the map and post-map
expressions are simple C expressions, translated as in ``_kernels``."""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

import numpy

from ascend_compat.cupy import _reduction as R  # noqa: N812
from ascend_compat.cupy._core import asarray, ndarray
from ascend_compat.cupy._kernels import (
    UnsupportedKernelError,
    _bind,
    _dtype_name,
    _Evaluator,
    _parse_params,
    check_kernel_name,
)

_REDUCERS = {"a+b": "sum", "b+a": "sum", "a*b": "prod", "b*a": "prod", "max(a,b)": "max", "max(b,a)": "max",
             "min(a,b)": "min", "min(b,a)": "min", "a&&b": "all", "a||b": "any"}


def _reducer(name: str, reduce_expr: str) -> str:
    kind = _REDUCERS.get(re.sub(r"\s+", "", reduce_expr))
    if kind is None:
        raise UnsupportedKernelError(f"ReductionKernel {name!r}: reduce_expr {reduce_expr!r} is not one of "
                                     "a + b, a * b, max(a, b), min(a, b), a && b, a || b; use the matching "
                                     "reduction function")
    return kind


def _reduce(kind: str, mapped: ndarray, axis: Any, keepdims: bool) -> ndarray:
    if kind in ("sum", "prod"):
        fn = R.sum if kind == "sum" else R.prod
        return fn(mapped, axis=axis, dtype=mapped._dtype, keepdims=keepdims)
    other: dict[str, Callable[..., ndarray]] = {"max": R.amax, "min": R.amin, "all": R.all, "any": R.any}
    return other[kind](mapped, axis=axis, keepdims=keepdims)


def _post_map(name: str, post: str, out_name: str, env: dict[str, Any], types: dict[str, numpy.dtype]) -> ndarray:
    m = re.fullmatch(r"(\w+)\s*=\s*(.+)", post.strip(), re.S)
    if not m or m.group(1) != out_name:
        raise UnsupportedKernelError(f"{name!r}: post_map_expr {post!r} must assign the output {out_name!r}")
    return asarray(_Evaluator(env, types).run(m.group(2)))


def _store(val: ndarray, dt: numpy.dtype, out: Any) -> ndarray:
    if out is not None:
        out[...] = val
        return out
    return val.astype(dt, copy=False)


class ReductionKernel:
    """``cupy.ReductionKernel``: ``map_expr`` per element, ``reduce_expr`` over ``axis``, ``post_map_expr``."""

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str, post_map_expr: str,
                 identity: Any, name: str = "reduce_kernel", reduce_type: Optional[str] = None,
                 reduce_dims: bool = True, preamble: str = "", **kwargs: Any) -> None:
        self.name = check_kernel_name(name)
        self._kind = _reducer(name, reduce_expr)
        if preamble.strip():
            raise UnsupportedKernelError(f"ReductionKernel {name!r}: a preamble cannot be translated")
        self.in_params, self.out_params = _parse_params(in_params), _parse_params(out_params)
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self._map, self._post, self._reduce_type = map_expr, post_map_expr, reduce_type
        # One type binding per argument type signature (CuPy keeps one compiled kernel per signature).
        self._cached_codes: dict[tuple[Any, ...], dict[str, numpy.dtype]] = {}

    def __call__(self, *args: Any, axis: Any = None, keepdims: bool = False, out: Any = None,
                 **kwargs: Any) -> ndarray:
        if len(args) not in (self.nin, self.nin + self.nout):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        if len(args) > self.nin:  # the output given positionally
            args, out = args[: self.nin], args[self.nin]
        types: dict[str, numpy.dtype] = {}
        env = _bind(self.in_params, args, types)
        key = tuple(a._dtype if isinstance(a, ndarray) else type(a) for a in args)
        types = self._cached_codes.setdefault(key, types)
        mapped = asarray(_Evaluator(env, types).run(self._map))
        shapes = [a.shape for a in args if isinstance(a, ndarray)]
        in_shape = numpy.broadcast_shapes(*shapes) if shapes else mapped.shape
        if mapped.shape != in_shape:  # a map of constants (`1`: a count) still has one value per element
            from ascend_compat.cupy._manipulation import broadcast_to

            mapped = broadcast_to(mapped, in_shape)
        tp, name = self.out_params[0]
        # The values are reduced in reduce_type, by default the output's type (as in CuPy): a count of `x > 0`
        # into an int64 output sums integers, not booleans.
        red = self._reduce_type or tp
        dt = _dtype_name(red) or types.get(red)
        if dt is not None:
            mapped = mapped.astype(dt)
            types = {**types, "_type_reduce": dt}
        a = _reduce(self._kind, mapped, axis, keepdims)
        # CuPy's _in_ind.size() / _out_ind.size(): the elements reduced over all, and the outputs (a mean divides
        # by their ratio)
        sizes = {"_in_ind_size": mapped.size, "_out_ind_size": max(a.size, 1)}
        val = _post_map(self.name, self._post, name, dict(env, a=a, **sizes), types)
        return _store(val, _dtype_name(tp) or types.get(tp) or val._dtype, out)


class _SimpleReduction:
    """A reduction made by ``create_reduction_func``: one loop per type signature ``'<in>-><out>'``."""

    def __init__(self, name: str, ops: Any, routine: Any, identity: Any) -> None:
        self.name, self.identity = name, identity
        self._ops: list[tuple[numpy.dtype, numpy.dtype, tuple[Any, ...]]] = []
        for op in ops:
            sig, rt = (op, routine) if isinstance(op, str) else (op[0], op[1] or routine)
            ins, _, outs = sig.partition("->")
            if len(ins) != 1 or len(outs) != 1 or rt is None or len(rt) != 4:
                raise ValueError(f"{name}: reduction loop {op!r} needs one input and one output type and a "
                                 "(map_expr, reduce_expr, post_map_expr, reduce_type) routine")
            _reducer(name, rt[1])
            self._ops.append((numpy.dtype(ins), numpy.dtype(outs), tuple(rt)))
        self._cached_codes: dict[tuple[Any, ...], tuple[numpy.dtype, numpy.dtype, tuple[Any, ...]]] = {}

    def _loop(self, dt: numpy.dtype, dtype: Any) -> tuple[numpy.dtype, numpy.dtype, tuple[Any, ...]]:
        key = (dt, None if dtype is None else numpy.dtype(dtype))
        loop = self._cached_codes.get(key)
        if loop is None:
            if dtype is None:
                found = [op for op in self._ops if numpy.can_cast(dt, op[0])]
            else:
                found = [op for op in self._ops if op[1] == numpy.dtype(dtype)]
            if not found:
                raise TypeError(f"Wrong type ({dt}) of arguments for {self.name}")
            loop = self._cached_codes.setdefault(key, found[0])
        return loop

    def __call__(self, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                 keepdims: bool = False) -> ndarray:
        if not isinstance(a, ndarray) and hasattr(a, "__cupy_get_ndarray__"):
            a = a.__cupy_get_ndarray__()
        if not isinstance(a, ndarray):
            raise TypeError(f"Argument 'a' has incorrect type (expected cupy.ndarray, got {type(a).__name__})")
        in_t, out_t, (map_expr, reduce_expr, post_expr, reduce_type) = self._loop(a._dtype, dtype)
        types = {"in0": in_t, "out0": out_t}
        env: dict[str, Any] = {"in0": a.astype(in_t, copy=False)}
        mapped = asarray(_Evaluator(env, types).run(map_expr))
        red_t = (_dtype_name(reduce_type) if reduce_type else None) or out_t
        r = _reduce(_reducer(self.name, reduce_expr), mapped.astype(red_t, copy=False), axis, keepdims)
        val = _post_map(self.name, post_expr, "out0", dict(env, a=r), types)
        return _store(val, out_t, out)


def create_reduction_func(name: str, ops: Any, routine: Any = None, identity: Any = None, preamble: str = "",
                          sort_reduce_axis: bool = True) -> _SimpleReduction:
    """``cupy._core.create_reduction_func``: a reduction over ``ops`` such as ``('b->b', 'f->f')`` with
    ``routine = (map_expr, reduce_expr, post_map_expr, reduce_type)`` in CuPy's ``in0``/``a``/``b``/``out0``."""
    if preamble.strip():
        raise UnsupportedKernelError(f"create_reduction_func {name!r}: a preamble cannot be translated")
    return _SimpleReduction(name, ops, routine, identity)
