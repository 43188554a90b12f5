"""Complex ``add``, ``subtract`` and ``negative`` computed part by part, as NumPy does.

torch's complex kernels compute ``-x`` as ``0 - x`` and ``a - b`` / ``a + b`` as ``a + alpha * b`` with ``alpha``
a complex ``-1`` / ``1`` (in their vectorised loops, which run from 4-8 elements on, and with a scalar operand).
That loses ``-0.0`` parts (``-(0+0j)`` gives ``0+0j``, NumPy ``-0-0j``) and turns infinities into NaN
(``0 - (inf+0j)`` gives ``-inf+nanj``, NumPy ``-inf+0j``). On the real and imaginary parts (``torch.view_as_real``)
the same kernels are plain IEEE float arithmetic, which is what NumPy's complex loops do.

Each function takes tensors or Python scalars and an optional ``out=`` tensor, as the torch functions they replace.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch

_T = torch.Tensor


def _parts(x: Any, like: _T) -> _T:
    """``x`` (a complex tensor or a Python scalar) as a real tensor with a trailing (real, imag) axis."""
    if not isinstance(x, _T):
        x = torch.tensor(x, dtype=like.dtype, device=like.device)
    elif not x.is_complex():
        x = x.to(like.dtype)
    elif x.is_conj() or x.is_neg():  # lazy conjugate/negative views have no real view
        x = x.resolve_conj().resolve_neg()
    return torch.view_as_real(x)


def _as_complex(r: _T) -> _T:
    try:
        return torch.view_as_complex(r)
    except RuntimeError:  # a layout with the (real, imag) pairs apart
        return torch.view_as_complex(r.contiguous())


def _binary(tfn: Callable[..., _T]) -> Callable[..., _T]:
    def kernel(a: Any, b: Any, out: Optional[_T] = None) -> _T:
        if out is not None and not out.is_complex():  # (the common case first: this wraps every add(out=))
            return tfn(a, b, out=out)
        if not ((isinstance(a, _T) and a.is_complex()) or (isinstance(b, _T) and b.is_complex())):
            return tfn(a, b) if out is None else tfn(a, b, out=out)
        ref = a if isinstance(a, _T) and a.is_complex() else b
        pa, pb = _parts(a, ref), _parts(b, ref)
        if out is None:
            return _as_complex(tfn(pa, pb))
        tfn(pa, pb, out=torch.view_as_real(out))
        return out
    kernel.__name__ = tfn.__name__
    return kernel


add = _binary(torch.add)
sub = _binary(torch.sub)


def neg(a: _T, out: Optional[_T] = None) -> _T:
    """``-a``: NumPy's signs for complex parts (torch's ``neg`` of a complex tensor is ``0 - a``)."""
    if a.is_complex() and (out is None or out.is_complex()):
        if out is None:
            return _as_complex(torch.neg(_parts(a, a)))
        torch.neg(_parts(a, a), out=torch.view_as_real(out))
        return out
    return torch.neg(a) if out is None else torch.neg(a, out=out)


__all__ = ["add", "neg", "sub"]
