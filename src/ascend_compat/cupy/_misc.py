"""Window functions, ``unwrap``, ``real_if_close`` (the polynomial API is in ``_polynomial``)."""

from __future__ import annotations

import math
import sys
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _ufuncs
from ascend_compat.cupy._core import _wrap, asarray, current_torch_device, ndarray
from ascend_compat.cupy._manipulation import normalize_axis


def _window(m: int, fn: Any) -> ndarray:
    m = int(m)
    dev = current_torch_device()
    if m < 1:
        return _wrap(torch.zeros(0, dtype=torch.float64, device=dev))
    if m == 1:
        return _wrap(torch.ones(1, dtype=torch.float64, device=dev))
    n = torch.arange(m, dtype=torch.float64, device=dev)
    return _wrap(fn(n, m))


def hanning(M: int) -> ndarray:  # noqa: N803 (NumPy's name)
    return _window(M, lambda n, m: 0.5 - 0.5 * torch.cos(2 * math.pi * n / (m - 1)))


def hamming(M: int) -> ndarray:  # noqa: N803
    return _window(M, lambda n, m: 0.54 - 0.46 * torch.cos(2 * math.pi * n / (m - 1)))


def blackman(M: int) -> ndarray:  # noqa: N803
    return _window(M, lambda n, m: 0.42 - 0.5 * torch.cos(2 * math.pi * n / (m - 1))
                   + 0.08 * torch.cos(4 * math.pi * n / (m - 1)))


def bartlett(M: int) -> ndarray:  # noqa: N803
    return _window(M, lambda n, m: torch.where(n <= (m - 1) / 2, 2 * n / (m - 1), 2 - 2 * n / (m - 1)))


def kaiser(M: int, beta: float) -> ndarray:  # noqa: N803
    def fn(n: torch.Tensor, m: int) -> torch.Tensor:
        alpha = (m - 1) / 2.0
        arg = beta * torch.sqrt(1 - ((n - alpha) / alpha) ** 2)
        return torch.special.i0(arg) / torch.special.i0(torch.tensor(float(beta), dtype=torch.float64))
    return _window(M, fn)


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * math.pi) -> ndarray:
    from ascend_compat.cupy._extra import diff
    from ascend_compat.cupy._indexing import where
    from ascend_compat.cupy._reduction import cumsum

    U: Any = _ufuncs  # noqa: N806  (its ufuncs are made at import: typed Any)
    a = asarray(p)
    ax = normalize_axis(axis, a.ndim)
    if discont is None:
        discont = period / 2
    dd = diff(a, axis=ax)
    half = period / 2
    ddmod = U.subtract(U.remainder(U.add(dd, half), period), half)
    ddmod = where(U.logical_and(U.equal(ddmod, -half), U.greater(dd, 0)), half, ddmod)
    correct = U.subtract(ddmod, dd)
    correct = where(U.less(U.absolute(dd), discont), 0, correct)
    out = a.astype(numpy.result_type(a._dtype, 1.0), copy=True)
    sl = (slice(None),) * ax + (slice(1, None),)
    out[sl] = U.add(a[sl], cumsum(correct, axis=ax))
    return out


def real_if_close(a: Any, tol: float = 100) -> ndarray:
    x = asarray(a)
    if x._dtype.kind != "c":
        return x
    eps = numpy.finfo(x._dtype).eps
    limit = tol * eps if tol > 1 else tol
    if bool((x._t.imag.abs() < limit).all()):
        return x.real
    return x



def who(vardict: Optional[dict[str, Any]] = None) -> None:
    """Print the device arrays in ``vardict`` (the caller's globals by default): name, shape, bytes and type,
    then the total bytes (an array seen under two names counts once), in NumPy 1.x's ``who`` layout."""
    if vardict is None:
        vardict = sys._getframe(1).f_globals
    rows: list[tuple[str, str, str, str]] = []
    seen: dict[int, str] = {}
    total = 0
    for name, var in vardict.items():
        if not isinstance(var, ndarray):
            continue
        first = seen.setdefault(id(var), name)
        if first == name:
            total += var.nbytes
        rows.append((name if first == name else f"{name} ({first})", " x ".join(map(str, var.shape)),
                     str(var.nbytes), var.dtype.name))
    if rows:
        w1, w2, w3 = (max(10, *(len(r[i]) for r in rows)) for i in range(3))
        header = f"Name {' ' * w1} Shape {' ' * w2} Bytes {' ' * w3} Type"
        print(header + "\n" + "=" * (len(header) + 5) + "\n")
        for r in rows:
            print(f"{r[0]} {' ' * (w1 - len(r[0]) + 4)} {r[1]} {' ' * (w2 - len(r[1]) + 5)} "
                  f"{r[2]} {' ' * (w3 - len(r[2]) + 5)} {r[3]}")
    print(f"\nUpper bound on total bytes  =       {total}")


__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser", "real_if_close", "unwrap", "who"]
