"""Top-level products of ``ascend_compat.cupy``: dot, vdot, inner, outer, matmul, kron, trace, tensordot, einsum,
cross. Results have NumPy's result dtype; they run on the backend's BLAS (torch.matmul / einsum), except large
float/complex products of CPU arrays, which run NumPy's BLAS on the tensors' memory (``_linalg_host``)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _core, _dtypes, _linalg_host

__all__ = ["cross", "dot", "einsum", "inner", "kron", "matmul", "outer", "tensordot", "trace", "vdot"]


def _array(x: Any) -> _core.ndarray:
    if isinstance(x, _core.ndarray):
        return x
    if isinstance(x, numpy.ndarray):
        raise TypeError("Unsupported type <class 'numpy.ndarray'>: use cupy.asarray(x) to move host data")
    return _core.asarray(x)


def _prep(*xs: Any, dtype: Any = None) -> tuple[list[torch.Tensor], numpy.dtype]:
    """Operand tensors for a result of NumPy's result dtype: integers and bool compute in int64 (torch lacks
    some small-integer kernels; wrapping back to the result type is exact for sums of products)."""
    arrays = [_array(x) for x in xs]
    res = numpy.dtype(dtype) if dtype is not None else numpy.result_type(*[a.dtype for a in arrays])
    compute = _dtypes.INT64 if res.kind in "biu" and res != _dtypes.UINT64 else res
    return [_dtypes.cast_tensor(a._t, a.dtype, compute) for a in arrays], res


def _finish(t: torch.Tensor, res: numpy.dtype, out: Optional[_core.ndarray] = None,
            strict: bool = False) -> _core.ndarray:
    if res == _dtypes.BOOL:
        t = t != 0
    elif res in _dtypes.WRAP_MASK:
        t = t & _dtypes.WRAP_MASK[res]
    if t.dtype != _dtypes.storage_dtype(res):
        t = t.to(_dtypes.storage_dtype(res))
    result = _core._wrap(t.contiguous() if t.dim() else t, dtype=res)
    if out is None:
        return result
    if not isinstance(out, _core.ndarray):
        raise TypeError("out must be a cupy.ndarray")
    if strict:
        _strict_out(out, res, result.shape)
    if out.shape != result.shape:
        raise ValueError(f"out has shape {out.shape}, the result {result.shape}")
    if out._is_flip:  # negative strides: written through to the memory
        from ascend_compat.cupy._core_flip import write_back

        write_back(out, _dtypes.cast_tensor(t, res, out.dtype))
        return out
    out._t.copy_(_dtypes.cast_tensor(t, res, out.dtype))
    return out


def _strict_out(out: Any, res: numpy.dtype, shape: tuple[int, ...]) -> None:
    if not isinstance(out, _core.ndarray):
        raise TypeError("out must be a cupy.ndarray")
    if out.dtype != res or not out.flags.c_contiguous or out.shape != tuple(shape):
        raise ValueError("output array is not acceptable (must have the right datatype, number of dimensions, "
                         "and be a C-Array)")


def _shape_error(fn: str, a: torch.Tensor, b: torch.Tensor) -> ValueError:
    return ValueError(f"{fn}: shapes {tuple(a.shape)} and {tuple(b.shape)} not aligned")


def dot(a: Any, b: Any, out: Any = None) -> _core.ndarray:
    """NumPy's dot: inner product of vectors, matrix product, or a sum over ``a``'s last and ``b``'s
    second-to-last axes."""
    (ta, tb), res = _prep(a, b)
    if ta.dim() == 0 or tb.dim() == 0:
        return _finish(ta * tb, res, out, strict=True)
    k_b = 0 if tb.dim() == 1 else -2
    if ta.shape[-1] != tb.shape[k_b]:
        raise _shape_error("dot", ta, tb)
    if ta.dim() <= 2 and tb.dim() <= 2:
        if out is not None:  # NumPy's own rule for dot's out= (checked here: the NumPy route writes into it)
            _strict_out(out, res, (*ta.shape[:-1], *tb.shape[1:]))
        host = _linalg_host.product(numpy.dot, ta, tb, res, out)
        return host if host is not None else _finish(torch.matmul(ta, tb), res, out, strict=True)
    return _finish(torch.tensordot(ta, tb, dims=([ta.dim() - 1], [tb.dim() + k_b])), res, out, strict=True)


def vdot(a: Any, b: Any) -> _core.ndarray:
    """Dot product of the flattened arrays, conjugating the first."""
    (ta, tb), res = _prep(a, b)
    if ta.numel() != tb.numel():
        raise ValueError("vdot: arrays must have the same number of elements")
    ta = ta.reshape(-1)
    ta = torch.conj_physical(ta) if ta.is_complex() else ta  # materialised: lazy conj() crashes the simulator
    return _finish((ta * tb.reshape(-1)).sum(), res)


def inner(a: Any, b: Any) -> _core.ndarray:
    """Sum product over the last axes."""
    (ta, tb), res = _prep(a, b)
    if ta.dim() == 0 or tb.dim() == 0:
        return _finish(ta * tb, res)
    if ta.shape[-1] != tb.shape[-1]:
        raise _shape_error("inner", ta, tb)
    return _finish(torch.tensordot(ta, tb, dims=([ta.dim() - 1], [tb.dim() - 1])), res)


def outer(a: Any, b: Any, out: Any = None) -> _core.ndarray:
    """Outer product of the flattened arrays."""
    (ta, tb), res = _prep(a, b)
    return _finish(ta.reshape(-1, 1) * tb.reshape(1, -1), res, out)


def matmul(a: Any, b: Any, out: Any = None, dtype: Any = None, **kwargs: Any) -> _core.ndarray:
    """Matrix product with NumPy's broadcasting and 1-D promotion rules."""
    if kwargs.get("axes") is not None or kwargs.get("axis") is not None:  # core axes elsewhere: the gufunc
        from ascend_compat.cupy._gufuncs import matmul as gufunc

        return gufunc(a, b, out=out, dtype=dtype, **kwargs)
    (ta, tb), res = _prep(a, b, dtype=dtype)
    if ta.dim() == 0 or tb.dim() == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if ta.shape[-1] != tb.shape[0 if tb.dim() == 1 else -2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {tb.shape[0 if tb.dim() == 1 else -2]} is different from {ta.shape[-1]})")
    host = _linalg_host.product(numpy.matmul, ta, tb, res, out)
    if host is not None:
        return host
    try:
        t = torch.matmul(ta, tb)
    except RuntimeError as exc:
        raise ValueError(f"matmul: {exc}") from None
    return _finish(t, res, out)


def kron(a: Any, b: Any) -> _core.ndarray:
    """Kronecker product."""
    (ta, tb), res = _prep(a, b)
    return _finish(torch.kron(ta, tb), res)


@functools.lru_cache(maxsize=64)
def _sum_dtype(dt: numpy.dtype) -> numpy.dtype:
    return numpy.zeros(1, dt).sum().dtype


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    """Sum along a diagonal (small integers accumulate in the platform integer, as in NumPy)."""
    x = _array(a)
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    res = numpy.dtype(dtype) if dtype is not None else _sum_dtype(x.dtype)
    work = _dtypes.INT64 if res.kind in "biu" and res != _dtypes.UINT64 else res
    t = torch.diagonal(_dtypes.cast_tensor(x._t, x.dtype, work), offset, axis1, axis2)
    return _finish(t.sum(-1), res, out)


def _axes_pair(axes: Any, na: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, (int, numpy.integer)):
        n = int(axes)
        if n < 0:
            raise ValueError("tensordot: axes must be non-negative")
        return list(range(na - n, na)), list(range(n))
    try:
        xa, xb = axes
    except (TypeError, ValueError):
        raise ValueError("tensordot: axes must be an integer or a pair of sequences") from None
    xa = [xa] if isinstance(xa, (int, numpy.integer)) else list(xa)
    xb = [xb] if isinstance(xb, (int, numpy.integer)) else list(xb)
    if len(xa) != len(xb):
        raise ValueError("shape-mismatch for sum")
    return [int(i) for i in xa], [int(i) for i in xb]


def tensordot(a: Any, b: Any, axes: Any = 2) -> _core.ndarray:
    """Sum products over the given axes."""
    (ta, tb), res = _prep(a, b)
    xa, xb = _axes_pair(axes, ta.dim())
    for i, j in zip(xa, xb):
        if not (-ta.dim() <= i < ta.dim() and -tb.dim() <= j < tb.dim()) or ta.shape[i] != tb.shape[j]:
            raise ValueError("shape-mismatch for sum")
    if not xa:
        return _finish(ta.reshape(*ta.shape, *([1] * tb.dim())) * tb, res)
    return _finish(torch.tensordot(ta, tb, dims=(xa, xb)), res)


def _label(x: Any) -> str:
    if x is Ellipsis:
        return "..."
    try:
        i = operator.index(x)
    except TypeError:
        raise TypeError("each subscript must be an integer or Ellipsis") from None
    if not 0 <= i < 52:
        raise ValueError(f"subscript {i} is not within the valid range [0, 52)")
    return chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26)


def _einsum_operands(operands: Sequence[Any]) -> tuple[str, list[Any]]:
    """(subscripts string, operands); the interleaved form's integer labels map to letters as in NumPy."""
    if isinstance(operands[0], str):
        return operands[0].replace(" ", ""), list(operands[1:])
    if not isinstance(operands[0], (_core.ndarray, numpy.ndarray)) and len(operands) > 1 and \
            not isinstance(operands[1], (list, tuple, numpy.ndarray)):
        raise TypeError("einsum: the subscripts must be a string or operand/sublist pairs")
    pairs = operands if len(operands) % 2 == 0 else operands[:-1]
    spec = ",".join("".join(_label(x) for x in sub) for sub in pairs[1::2])
    if len(operands) % 2:
        spec += "->" + "".join(_label(x) for x in operands[-1])
    return spec, list(pairs[0::2])


def _validate_einsum(spec: str, arrays: list[_core.ndarray]) -> None:
    """NumPy's own subscript and shape checks, run on zero-stride stand-ins (no data, no compute)."""
    dummies = [numpy.lib.stride_tricks.as_strided(numpy.zeros(1), a.shape, (0,) * a.ndim) for a in arrays]
    numpy.einsum_path(spec, *dummies, optimize=False)
    inputs, arrow, output = spec.partition("->")
    if arrow and "..." not in output:
        for sub, a in zip(inputs.split(","), arrays):
            if "..." in sub and a.ndim > len(sub.replace("...", "")):
                raise ValueError("einsum: output subscripts drop the dimensions of the ellipsis")


def _unary_labels(spec: str, ndim: int) -> tuple[list[str], list[str]]:
    """Per-axis labels of the single operand and of the output (ellipsis axes get labels ``0``, ``1``, ...)."""
    sub, arrow, output = spec.partition("->")
    ell = [str(k) for k in range(ndim - len(sub.replace("...", "")))] if "..." in sub else []
    left, _, right = sub.partition("...")
    labels = [*left, *ell, *right]
    if arrow:
        o_left, _, o_right = output.partition("...")
        return labels, [*o_left, *(ell if "..." in output else []), *o_right]
    once = sorted(c for c in set(left + right) if labels.count(c) == 1)  # ASCII order, as NumPy's implicit mode
    return labels, ell + once


def _check_cast(typed: list[numpy.dtype], dtype: Any, casting: Any) -> None:
    if dtype is not None and typed:  # Python scalars are weak (NEP 50): they never block a cast
        have, res = numpy.result_type(*typed), numpy.dtype(dtype)
        if not numpy.can_cast(have, res, casting=casting):
            raise TypeError(f"einsum: cannot cast {have} to {res} with casting rule {casting!r}")


def _einsum_unary(spec: str, a: _core.ndarray, dtype: Any, out: Any, check: Any) -> _core.ndarray:
    """One operand: repeated labels are a strided diagonal view; without summed labels and ``out`` the result
    is that view in the input's dtype (``dtype=`` ignored, as NumPy does); otherwise a reduction."""
    labels, output = _unary_labels(spec, a.ndim)
    t = a._t
    sizes: dict[str, int] = {}
    strides: dict[str, int] = {}
    for lab, n, st in zip(labels, t.shape, t.stride()):
        if sizes.setdefault(lab, n) != n:
            raise ValueError(f"dimensions in operand 0 for collapsing index {lab!r} don't match ({sizes[lab]} != {n})")
        strides[lab] = strides.get(lab, 0) + st
    summed = [lab for lab in sizes if lab not in output]
    order = output + summed
    view = t.as_strided([sizes[k] for k in order], [strides[k] for k in order], t.storage_offset())
    if not summed and out is None:
        from ascend_compat.cupy._core_flip import view_of

        return view_of(view, a, a.dtype)
    check()
    res = numpy.dtype(dtype) if dtype is not None else a.dtype
    work = _dtypes.INT64 if res.kind in "biu" and res != _dtypes.UINT64 else res
    w = _dtypes.cast_tensor(view, a.dtype, work)
    if summed:
        w = w.sum(dim=tuple(range(len(output), len(order))))
    return _finish(w, res, out)


def einsum(*operands: Any, dtype: Any = None, optimize: Any = False, casting: str = "safe",
           out: Any = None, order: str = "K") -> _core.ndarray:
    """Einstein summation (subscript string or interleaved sublists), in NumPy's result dtype; a unary
    transpose or diagonal is a view, as in NumPy."""
    if not operands:
        raise ValueError("must specify the einstein sum subscripts string and at least one operand")
    spec, raw = _einsum_operands(operands)
    arrays = [_array(a) for a in raw]
    if not arrays:
        raise ValueError("must specify the einstein sum subscripts string and at least one operand")
    _validate_einsum(spec, arrays)
    typed = [a.dtype for a, r in zip(arrays, raw) if not isinstance(r, (bool, int, float, complex))]
    check = functools.partial(_check_cast, typed, dtype, casting)
    if len(arrays) == 1:
        return _einsum_unary(spec, arrays[0], dtype, out, check)
    check()
    tensors, res = _prep(*arrays, dtype=dtype)
    try:
        t = torch.einsum(spec, *tensors)
    except RuntimeError as exc:  # what NumPy's checks let through and torch refuses (e.g. repeated-label sizes)
        raise ValueError(f"einsum: {exc}") from None
    return _finish(t, res, out)


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Optional[int] = None) -> Any:
    """Cross product of 2- or 3-element vectors along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    (ta, tb), res = _prep(a, b)
    ta, tb = torch.movedim(ta, axisa, -1), torch.movedim(tb, axisb, -1)
    if ta.shape[-1] not in (2, 3) or tb.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")
    if ta.shape[-1] == 2:
        ta = torch.nn.functional.pad(ta, (0, 1))
    if tb.shape[-1] == 2:
        tb = torch.nn.functional.pad(tb, (0, 1))
    ta, tb = torch.broadcast_tensors(ta, tb)
    a0, a1, a2 = ta.unbind(-1)
    b0, b1, b2 = tb.unbind(-1)
    c = torch.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -1)
    if _array(a).shape[axisa] == 2 and _array(b).shape[axisb] == 2:
        return _finish(c[..., 2], res)
    from ascend_compat.cupy._manipulation import moveaxis

    return moveaxis(_finish(c, res), -1, axisc)  # a view of a C-ordered result, as NumPy's
