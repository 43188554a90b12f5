"""Shared helpers of ``cupy.linalg``: NumPy's linalg dtype rule, shape checks, torch error translation."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy
import torch
from numpy.linalg import LinAlgError

from ascend_compat.cupy import _core, _dtypes


def as_array(x: Any) -> _core.ndarray:
    if isinstance(x, _core.ndarray):
        return x
    if isinstance(x, numpy.ndarray):
        raise LinAlgError("cupy.linalg only supports cupy.ndarray")
    return _core.asarray(x)


def linalg_common_type(*arrays: _core.ndarray, reject_float16: bool = True) -> tuple[numpy.dtype, numpy.dtype]:
    """(compute dtype, result dtype) as NumPy's linalg: integers and bool compute in float64; no float16."""
    dtypes = [a.dtype for a in arrays]
    if reject_float16 and numpy.dtype(numpy.float16) in dtypes:
        raise TypeError("array type float16 is unsupported in linalg")
    inexact = [d if d.kind in "fc" else numpy.dtype(numpy.float64) for d in dtypes]
    res = numpy.result_type(*inexact) if inexact else numpy.dtype(numpy.float64)
    compute = numpy.dtype(numpy.float32) if res == numpy.float16 else res
    return compute, res


def tensor(a: _core.ndarray, dtype: numpy.dtype) -> torch.Tensor:
    """``a``'s values as a tensor of numpy dtype ``dtype`` (float64 under the float64 policy of the device)."""
    from ascend_compat.cupy import _float64

    _float64.check_dtype(dtype, a._t.device) if dtype.kind in "fc" else None
    return _dtypes.cast_tensor(a._t, a.dtype, dtype)


def wrap(t: torch.Tensor, dtype: numpy.dtype) -> _core.ndarray:
    """A result tensor as an array of ``dtype`` (real dtypes for results that are real, like singular values)."""
    want = dtype
    if not t.is_complex() and dtype.kind == "c":
        want = numpy.dtype(dtype.char.lower())
    got = _dtypes.logical_dtype(t.dtype)
    return _core._wrap(_dtypes.cast_tensor(t, got, want).contiguous(), dtype=want)


def real_dtype(dtype: numpy.dtype) -> numpy.dtype:
    return numpy.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype


def assert_stacked_2d(*arrays: _core.ndarray) -> None:
    for a in arrays:
        if a.ndim < 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")


def assert_stacked_square(*arrays: _core.ndarray) -> None:
    for a in arrays:
        if a.shape[-1] != a.shape[-2]:
            raise LinAlgError("Last 2 dimensions of the array must be square")


def square_matrices(x: Any) -> _core.ndarray:
    """``x`` as an array of square matrices (stacked), or the LinAlgError NumPy gives."""
    a = as_array(x)
    assert_stacked_2d(a)
    assert_stacked_square(a)
    return a


@contextlib.contextmanager
def linalg_errors(what: str) -> Iterator[None]:
    """torch's linalg failures (singular, not positive definite) as NumPy's ``LinAlgError``."""
    try:
        yield
    except torch.linalg.LinAlgError as exc:
        raise LinAlgError(f"{what}: {exc}") from None


def stacked_identity(batch_shape: tuple[int, ...], n: int, dtype: Any) -> _core.ndarray:
    dt = numpy.dtype(dtype)
    eye = torch.eye(n, dtype=_dtypes.storage_dtype(dt), device=_core.current_torch_device())
    return _core._wrap(eye.expand(*batch_shape, n, n).contiguous(), dtype=dt)


def stacked_identity_like(x: _core.ndarray) -> _core.ndarray:
    return stacked_identity(tuple(x.shape[:-2]), x.shape[-1], x.dtype)
