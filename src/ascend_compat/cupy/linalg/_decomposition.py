"""Decompositions and eigenvalues: cholesky, qr, svd, eigh, eig, eigvalsh, eigvals (torch.linalg underneath)."""

from __future__ import annotations

from typing import Any

import torch

from ascend_compat.cupy.linalg._util import (
    as_array,
    assert_stacked_2d,
    assert_stacked_square,
    linalg_common_type,
    linalg_errors,
    real_dtype,
    square_matrices,
    tensor,
    wrap,
)


def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """Cholesky factor (lower, or upper with ``upper=True``) of Hermitian positive-definite matrices."""
    a = square_matrices(a)
    compute, res = linalg_common_type(a)
    with linalg_errors("Matrix is not positive definite"):
        t = torch.linalg.cholesky(tensor(a, compute), upper=upper)
    return wrap(t, res)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition; modes ``reduced``, ``complete``, ``r``, ``raw`` as in NumPy."""
    a = as_array(a)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    assert_stacked_2d(a)
    compute, res = linalg_common_type(a)
    t = tensor(a, compute)
    if mode == "raw":
        h, tau = torch.geqrf(t) if t.numel() else (t, t.new_zeros(*t.shape[:-2], min(t.shape[-2:])))
        return wrap(h.mT, res), wrap(tau, res)
    q, r = torch.linalg.qr(t, mode=mode)
    if mode == "r":
        return wrap(r, res)
    return wrap(q, res), wrap(r, res)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """Singular value decomposition ``(u, s, vh)``, or ``s`` alone with ``compute_uv=False``."""
    a = as_array(a)
    assert_stacked_2d(a)
    compute, res = linalg_common_type(a)
    t = tensor(a, compute)
    with linalg_errors("SVD did not converge"):
        if not compute_uv:
            return wrap(torch.linalg.svdvals(t), real_dtype(res))
        u, s, vh = torch.linalg.svd(t, full_matrices=full_matrices)
    return wrap(u, res), wrap(s, real_dtype(res)), wrap(vh, res)


def eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending, real) and eigenvectors of Hermitian matrices."""
    a = as_array(a)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    assert_stacked_2d(a)
    assert_stacked_square(a)
    compute, res = linalg_common_type(a, reject_float16=False)  # float16 computes in float32, as in CuPy
    with linalg_errors("Eigenvalues did not converge"):
        w, v = torch.linalg.eigh(tensor(a, compute), UPLO=UPLO)
    return wrap(w, real_dtype(res)), wrap(v, res)


def eigvalsh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803
    """Eigenvalues (ascending, real) of Hermitian matrices."""
    a = as_array(a)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    assert_stacked_2d(a)
    assert_stacked_square(a)
    compute, res = linalg_common_type(a, reject_float16=False)
    with linalg_errors("Eigenvalues did not converge"):
        w = torch.linalg.eigvalsh(tensor(a, compute), UPLO=UPLO)
    return wrap(w, real_dtype(res))


def _complex_result(res: Any) -> Any:
    import numpy

    return numpy.result_type(res, numpy.complex64)


def _general_eig(a: Any, vectors: bool) -> Any:
    a = square_matrices(a)
    compute, res = linalg_common_type(a)
    if a.size == 0:
        t = tensor(a, compute)
        w = wrap(t.new_empty(t.shape[:-1]), res)
        return (w, wrap(t.clone(), res)) if vectors else w
    with linalg_errors("Eigenvalues did not converge"):
        if vectors:
            w, v = torch.linalg.eig(tensor(a, compute))
            return wrap(w, _complex_result(res)), wrap(v, _complex_result(res))
        return wrap(torch.linalg.eigvals(tensor(a, compute)), _complex_result(res))


def eig(a: Any) -> Any:
    """Eigenvalues and right eigenvectors of general matrices (complex results, as in CuPy)."""
    return _general_eig(a, vectors=True)


def eigvals(a: Any) -> Any:
    """Eigenvalues of general matrices (complex, as in CuPy)."""
    return _general_eig(a, vectors=False)
