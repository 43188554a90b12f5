"""``cupy.linalg`` on torch.linalg: NumPy's dtype rules (integers in float64, float16 refused), LinAlgError for
singular / non-positive-definite input, stacked (batched) matrices everywhere."""

from __future__ import annotations

from typing import Any

from numpy.linalg import LinAlgError

from ascend_compat.cupy import _linalg_top
from ascend_compat.cupy.linalg import _util  # noqa: F401 - cupy.linalg._util
from ascend_compat.cupy.linalg._decomposition import cholesky, eig, eigh, eigvals, eigvalsh, qr, svd
from ascend_compat.cupy.linalg._norms import cond, det, matrix_rank, norm, slogdet
from ascend_compat.cupy.linalg._solve import inv, lstsq, matrix_power, pinv, solve, tensorinv, tensorsolve

matmul = _linalg_top.matmul
tensordot = _linalg_top.tensordot
outer = _linalg_top.outer


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-element vectors (the Array API's ``linalg.cross``)."""
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors")
    return _linalg_top.cross(x1, x2, axis=axis)


def matrix_transpose(a: Any) -> Any:
    """Swap the last two axes."""
    if a.ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional")
    return a.swapaxes(-1, -2)


def svdvals(x: Any) -> Any:
    return svd(x, compute_uv=False)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    if axis is None:
        x = x.ravel()
        axis = 0
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    """Chained matrix product (left to right)."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    result = arrays[0]
    for nxt in arrays[1:]:
        result = _linalg_top.dot(result, nxt)
    return result if out is None else _linalg_top._finish(result._t, result.dtype, out)


__all__ = [
    "LinAlgError", "cholesky", "cond", "cross", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "vector_norm",
]
