"""The ufunc table: each NumPy ufunc CuPy provides, as a torch kernel (inputs arrive in the loop dtype)."""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Callable

import torch

from ascend_compat.cupy import _complex_arith
from ascend_compat.cupy._dtypes import unsigned_order
from ascend_compat.cupy._ufunc import create_ufunc
from ascend_compat.cupy._ufunc_support import UINT64_KERNELS

if TYPE_CHECKING:
    from ascend_compat.cupy._ufunc import ufunc

    # For type checkers only: the module's ufunc names (``exp``, ``add``...) are made at import, from UFUNCS below.
    def __getattr__(name: str) -> ufunc: ...

_T = torch.Tensor


def _is_int(t: Any) -> bool:
    return isinstance(t, _T) and not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool


def _safe_int_div(fn: Any) -> Any:
    """NumPy gives 0 for integer division by zero (torch raises): divide by 1 there and zero the result."""
    def kernel(a: Any, b: Any) -> Any:
        if _is_int(a) or _is_int(b):
            bt = b if isinstance(b, _T) else torch.tensor(b, device=a.device)
            zero = bt == 0
            res = fn(a, torch.where(zero, torch.ones_like(bt), bt))
            return torch.where(zero, torch.zeros_like(res), res)
        return fn(a, b)
    return kernel


def _power(a: Any, b: Any) -> Any:
    if _is_int(b) and _is_int(a) and bool((b < 0).any()):
        raise ValueError("Integers to negative integer powers are not allowed.")
    if isinstance(a, _T) and a.dtype == torch.bool:
        a = a.to(torch.uint8)
    return torch.pow(a, b)


def _reciprocal(a: _T) -> _T:
    if _is_int(a):
        return torch.where(a.abs() == 1, a, torch.zeros_like(a))
    return torch.reciprocal(a)


def _cbrt(a: _T) -> _T:
    return torch.sign(a) * torch.abs(a).pow(1.0 / 3.0)


def _sign(a: _T) -> _T:
    if a.is_complex():
        return torch.sgn(a)
    return torch.where(torch.isnan(a), a, torch.sign(a)) if a.is_floating_point() else torch.sign(a)


def _modf(a: _T) -> tuple[_T, _T]:
    whole = torch.trunc(a)
    frac = torch.where(torch.isinf(a), torch.copysign(torch.zeros_like(a), a), a - whole)
    return frac, whole


def _divmod(a: Any, b: Any) -> tuple[Any, Any]:
    return _floor_divide(a, b), _remainder(a, b)


def _frexp(a: _T) -> tuple[_T, _T]:
    m, e = torch.frexp(a)
    return m, e


def _spacing(a: _T) -> _T:
    inf = torch.full_like(a, math.inf)
    return torch.nextafter(a, torch.copysign(inf, a)) - a


def _rounding(fn: Any) -> Any:
    def kernel(a: _T) -> _T:
        if a.is_complex():
            return torch.complex(fn(a.real), fn(a.imag))
        return a.clone() if _is_int(a) or a.dtype == torch.bool else fn(a)
    return kernel


def _logical_right_shift(a: _T, b: Any) -> _T:
    """``a >> b`` with zeros shifted in, on uint64 values held as their int64 bit pattern (``_dtypes``)."""
    n = torch.as_tensor(b, device=a.device).to(torch.int64).clamp(0, 63)
    mask = torch.where(n == 0, -1, (1 << (64 - n).clamp(max=63)) - 1)  # the low 64-n bits (int64 wraps like uint64)
    return (a >> n) & mask


def _int_shift(fn: Any) -> Any:
    def kernel(a: _T, b: _T) -> _T:
        res = fn(a, b)
        bits = torch.iinfo(a.dtype).bits if _is_int(a) else 8
        over = (b >= bits) | (b < 0)
        if bool(over.any()):  # C shifts past the width are undefined; NumPy gives 0 (or -1 for negatives)
            fill = torch.where(a < 0, -1, 0).to(res.dtype) if fn is torch.bitwise_right_shift else 0
            res = torch.where(over, fill, res)
        return res
    return kernel


def _cmp_complex(fn: Any) -> Any:
    """NumPy orders complex numbers lexicographically (real, then imaginary part)."""
    def kernel(a: Any, b: Any) -> Any:
        if isinstance(a, _T) and a.is_complex():
            b = b if isinstance(b, _T) else torch.tensor(b, dtype=a.dtype, device=a.device)
            re_a, re_b = a.real, b.real
            if fn is torch.maximum or fn is torch.minimum:
                pick = _lex_less(b, a) if fn is torch.maximum else _lex_less(a, b)
                nan = torch.isnan(re_a) | torch.isnan(a.imag)
                return torch.where(pick | nan, a, b)
            return fn(torch.stack(torch.broadcast_tensors(re_a, a.imag)), torch.stack(
                torch.broadcast_tensors(re_b, b.imag)))
        return fn(a, b)
    return kernel


def _lex_less(a: _T, b: _T) -> _T:
    return (a.real < b.real) | ((a.real == b.real) & (a.imag < b.imag))


def _complex_cmp(op: Any) -> Any:
    def kernel(a: Any, b: Any) -> Any:
        if (isinstance(a, _T) and a.is_complex()) or (isinstance(b, _T) and b.is_complex()):
            ref = a if isinstance(a, _T) and a.is_complex() else b
            a = a if isinstance(a, _T) else torch.tensor(a, dtype=ref.dtype, device=ref.device)
            b = b if isinstance(b, _T) else torch.tensor(b, dtype=ref.dtype, device=ref.device)
            a, b = a.to(ref.dtype), b.to(ref.dtype)
            lt_ab, lt_ba = _lex_less(a, b), _lex_less(b, a)
            eq = ~lt_ab & ~lt_ba & ~(torch.isnan(a.real) | torch.isnan(a.imag) | torch.isnan(b.real)
                                     | torch.isnan(b.imag))
            return {"lt": lt_ab, "gt": lt_ba, "le": lt_ab | eq, "ge": lt_ba | eq}[op]
        return getattr(operator, op)(a, b)
    return kernel


def _fminmax(fn: Any) -> Any:
    def kernel(a: _T, b: _T) -> _T:
        if a.is_complex():
            pick_b = torch.isnan(a.real) | torch.isnan(a.imag)
            res = _cmp_complex(torch.maximum if fn is torch.fmax else torch.minimum)(a, b)
            return torch.where(pick_b, b, torch.where(torch.isnan(b.real) | torch.isnan(b.imag), a, res))
        return fn(a, b)
    return kernel


def _tensor_op(fn: Any, tfn: Any, logical: Any = None, parts: Any = None) -> Any:
    """``tfn(a, b)`` for a tensor ``a`` (``logical`` for bool tensors, ``parts`` for complex ones where given), else
    ``fn(a, b)``: the torch function skips the Python-level ``Tensor.__add__`` wrapper (about 1 us a call)."""
    def kernel(a: Any, b: Any) -> Any:
        if isinstance(a, _T):
            if parts is not None and a.is_complex():
                return parts(a, b)
            return logical(a, b) if logical is not None and a.dtype == torch.bool else tfn(a, b)
        if parts is not None and isinstance(b, _T) and b.is_complex():  # (a scalar minus a complex tensor)
            return parts(a, b)
        return fn(a, b)
    return kernel


def _true_divide(a: Any, b: Any) -> Any:
    r = a / b
    if r.is_complex():  # NumPy divides a complex number by 0 part by part (1+2j)/0 = inf+infj; torch gives nan
        zero = (b == 0) if isinstance(b, _T) else torch.tensor(b == 0, device=r.device)
        if bool(zero.any()):
            num = a if isinstance(a, _T) else torch.tensor(a, dtype=r.dtype, device=r.device)
            inf = torch.tensor(math.inf, dtype=r.real.dtype, device=r.device)
            parts = torch.complex(num.real * inf, num.imag * inf).to(r.dtype)
            r = torch.where(zero, parts, r)
    return r


def _abs(a: _T) -> _T:
    return a.clone() if a.dtype == torch.bool else torch.abs(a)


def _conj(a: _T) -> _T:
    return torch.conj_physical(a) if a.is_complex() else a.clone()


def _heaviside(a: _T, b: _T) -> _T:
    return torch.where(torch.isnan(a), a, torch.where(a == 0, b, (a > 0).to(a.dtype)))


def _float_only(fn: Any) -> Any:
    def kernel(*args: _T) -> _T:
        return fn(*args)
    return kernel


_floor_divide = _safe_int_div(torch.floor_divide)
_remainder = _safe_int_div(torch.remainder)
_fmod = _safe_int_div(torch.fmod)

_BINARY_SCALAR = {
    "add": _tensor_op(operator.add, torch.add, torch.logical_or, _complex_arith.add),
    "subtract": _tensor_op(operator.sub, torch.sub, parts=_complex_arith.sub),
    "multiply": _tensor_op(operator.mul, torch.mul, torch.logical_and),
    "true_divide": _true_divide,
    "equal": _tensor_op(operator.eq, torch.eq), "not_equal": _tensor_op(operator.ne, torch.ne),
    "less": _complex_cmp("lt"), "less_equal": _complex_cmp("le"),
    "greater": _complex_cmp("gt"), "greater_equal": _complex_cmp("ge"),
}
_BINARY = {
    "floor_divide": _floor_divide, "remainder": _remainder, "fmod": _fmod, "power": _power,
    "float_power": torch.pow, "arctan2": torch.atan2, "hypot": torch.hypot,
    "logaddexp": torch.logaddexp, "logaddexp2": torch.logaddexp2, "copysign": torch.copysign,
    "nextafter": torch.nextafter, "ldexp": torch.ldexp, "heaviside": _heaviside,
    "gcd": torch.gcd, "lcm": torch.lcm,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "left_shift": _int_shift(torch.bitwise_left_shift), "right_shift": _int_shift(torch.bitwise_right_shift),
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "maximum": _cmp_complex(torch.maximum), "minimum": _cmp_complex(torch.minimum),
    "fmax": _fminmax(torch.fmax), "fmin": _fminmax(torch.fmin),
}
UINT64_KERNELS["right_shift"] = _int_shift(_logical_right_shift)  # torch shifts uint64 arithmetically


def _unsigned_order(fn: Any) -> Any:
    """``fn`` (maximum, minimum...) on uint64 values held as int64 bit patterns: with the top bit flipped, signed
    order is the unsigned one (torch's int64 maximum would pick 5 over 2**63 + 1)."""
    def kernel(a: Any, b: Any) -> Any:
        like = a if isinstance(a, _T) else b
        a, b = (x if isinstance(x, _T) else torch.tensor(x, dtype=torch.int64, device=like.device) for x in (a, b))
        return unsigned_order(fn(unsigned_order(a), unsigned_order(b)))
    return kernel


def _unsigned_divmod(a: Any, b: Any) -> tuple[_T, _T]:
    """``(a // b, a % b)`` on uint64 values held as int64 bit patterns, exactly (torch would divide them signed):
    the quotient of ``a >>> 1`` doubled is short of the true one by at most 1, which one unsigned comparison of the
    remainder fixes; a divisor of 2**63 or more gives 0 or 1 the same way. Division by zero gives 0 and 0, as NumPy."""
    like = a if isinstance(a, _T) else b
    a, b = (x if isinstance(x, _T) else torch.tensor(x, dtype=torch.int64, device=like.device) for x in (a, b))
    zero = b == 0
    b = torch.where(zero, torch.ones_like(b), b)
    big = b < 0
    q = torch.where(big, 0, (((a >> 1) & (2**63 - 1)) // torch.where(big, 1, b)) << 1)
    r = a - q * b
    over = unsigned_order(r) >= unsigned_order(b)
    q, r = q + over.to(q.dtype), torch.where(over, r - b, r)
    return torch.where(zero, 0, q), torch.where(zero, 0, r)


UINT64_KERNELS.update({"floor_divide": lambda a, b: _unsigned_divmod(a, b)[0], "divmod": _unsigned_divmod,
                       "remainder": lambda a, b: _unsigned_divmod(a, b)[1],
                       "fmod": lambda a, b: _unsigned_divmod(a, b)[1]})
UINT64_KERNELS.update({name: _unsigned_order(fn) for name, fn in (("maximum", torch.maximum), ("fmax", torch.maximum),
                                                                  ("minimum", torch.minimum), ("fmin", torch.minimum))})
_UNARY = {
    "negative": _complex_arith.neg, "positive": torch.clone, "absolute": _abs, "fabs": torch.abs,
    "sign": _sign, "rint": _rounding(torch.round), "conjugate": _conj,
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "log": torch.log, "log2": torch.log2,
    "log10": torch.log10, "log1p": torch.log1p, "sqrt": torch.sqrt, "cbrt": _cbrt, "square": torch.square,
    "reciprocal": _reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "arcsin": torch.asin,
    "arccos": torch.acos, "arctan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh,
    "arcsinh": torch.asinh, "arccosh": torch.acosh, "arctanh": torch.atanh, "degrees": torch.rad2deg,
    "radians": torch.deg2rad, "deg2rad": torch.deg2rad, "rad2deg": torch.rad2deg,
    "invert": torch.bitwise_not, "logical_not": torch.logical_not, "isfinite": torch.isfinite,
    "isinf": torch.isinf, "isnan": torch.isnan, "signbit": torch.signbit, "spacing": _spacing,
    "floor": _rounding(torch.floor), "ceil": _rounding(torch.ceil), "trunc": _rounding(torch.trunc),
}
_MULTI: dict[str, tuple[int, int, Callable[..., Any]]] = {"modf": (1, 2, _modf), "frexp": (1, 2, _frexp),
                                                          "divmod": (2, 2, _divmod)}

UFUNCS: dict[str, Any] = {}
for _name, _k in _BINARY_SCALAR.items():
    UFUNCS[_name] = create_ufunc(_name, 2, _k, scalar_ok=True)
for _name, _k in _BINARY.items():
    UFUNCS[_name] = create_ufunc(_name, 2, _k)
for _name, _k in _UNARY.items():
    UFUNCS[_name] = create_ufunc(_name, 1, _k)
for _name, (_nin, _nout, _k) in _MULTI.items():
    UFUNCS[_name] = create_ufunc(_name, _nin, _k, nout=_nout)

# NumPy's aliases.
for _alias, _name in {"divide": "true_divide", "mod": "remainder", "abs": "absolute", "conj": "conjugate",
                      "bitwise_not": "invert", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
                      "bitwise_right_shift": "right_shift", "pow": "power", "asin": "arcsin", "acos": "arccos",
                      "atan": "arctan", "atan2": "arctan2", "asinh": "arcsinh", "acosh": "arccosh",
                      "atanh": "arctanh"}.items():
    UFUNCS[_alias] = UFUNCS[_name]

globals().update(UFUNCS)
__all__ = sorted(UFUNCS)
