"""``vectorize`` and ``piecewise``.

``vectorize`` calls the Python function on whole device arrays (arithmetic, comparisons and ufuncs then run as
array operations on the device). As ``numpy.vectorize`` hands the function Python scalars, the arrays are widened
to int64/float64/complex128 for that call and the results cast to the types one call on the first elements
gives. A function that cannot run on arrays (``if x > 0:``, ``max(x, y)``, loops over scalars) is evaluated
element by element with ``numpy.vectorize`` on a host copy, as NumPy does, and the result is moved back: correct,
but host-bound, so it is slow for large arrays. CuPy instead compiles such functions to CUDA, which has no
counterpart here (nor its compile-time type errors).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy

from ascend_compat.cupy._core import asarray, ndarray


class vectorize:  # noqa: N801 (NumPy's name)
    """A function of scalars applied elementwise to arrays (NumPy's broadcasting and output types)."""

    def __init__(self, pyfunc: Callable[..., Any], otypes: Any = None, doc: Optional[str] = None,
                 excluded: Any = None, cache: bool = False, signature: Any = None) -> None:
        if excluded is not None:
            raise NotImplementedError("cupy.vectorize does not support `excluded` option currently.")
        if signature is not None:
            raise NotImplementedError("cupy.vectorize does not support `signature` option currently.")
        self.pyfunc = pyfunc
        self.otypes = otypes
        self.__doc__ = doc if doc is not None else pyfunc.__doc__

    def __call__(self, *args: Any) -> Any:
        # numpy.vectorize makes arrays of scalar arguments first: they take part with their own (strong) type
        args = tuple(asarray(a) if isinstance(a, (bool, int, float, complex, numpy.generic)) else a for a in args)
        out = self._on_arrays(args)
        if out is None:
            host = [a.get() if isinstance(a, ndarray) else a for a in args]
            res = numpy.vectorize(self.pyfunc, otypes=self.otypes)(*host)
            for r in res if isinstance(res, tuple) else (res,):
                if r.dtype.kind not in "biufc":
                    raise TypeError(f"vectorize: the function returned {r.dtype} values, which a device array "
                                    "cannot hold")
            return tuple(asarray(r) for r in res) if isinstance(res, tuple) else asarray(res)
        return out

    def _on_arrays(self, args: tuple[Any, ...]) -> Any:
        """The function applied to whole arrays, broadcast to the inputs' shape; None when it cannot be.

        NumPy calls the function on Python scalars (float64/complex128/int arithmetic) and casts the results to
        the types one call on the first elements gives; the arrays are widened the same way here.
        """
        from ascend_compat.cupy._manipulation import broadcast_shapes, broadcast_to

        arrays = [a for a in args if isinstance(a, ndarray)]
        if not arrays or any(a.size == 0 for a in arrays):
            return None
        if any(a.dtype.kind == "c" for a in arrays):
            # NumPy's first call gets NumPy scalars, the others Python scalars (complex numbers without an order):
            # the same calls raise the same errors here
            heads = [a.reshape(-1)[:1].get()[0] if isinstance(a, ndarray) else a for a in args]
            self.pyfunc(*heads)
            self.pyfunc(*[h.item() if isinstance(h, numpy.generic) else h for h in heads])
        shape = broadcast_shapes(*[a.shape for a in arrays])
        try:
            with numpy.errstate(all="ignore"):
                first = self.pyfunc(*[a.reshape(-1)[:1].copy() if isinstance(a, ndarray) else a for a in args])
                try:
                    res = self.pyfunc(*[_widened(a, True) for a in args])
                except Exception:  # e.g. an explicit dtype= that the wider type cannot cast to: the own types
                    res = self.pyfunc(*[_widened(a, False) for a in args])
        except Exception:  # scalar-only Python code: evaluated elementwise on the host, as NumPy does
            return None
        parts: Any = res if isinstance(res, tuple) else (res,)
        firsts: Any = first if isinstance(first, tuple) else (first,)
        if not all(isinstance(p, ndarray) for p in (*parts, *firsts)) or len(parts) != len(firsts):
            return None
        types = list(self.otypes) if self.otypes else [f.dtype for f in firsts]
        parts = tuple(asarray(broadcast_to(p, shape) if p.shape != shape else p, dtype=t, order="C")
                      for p, t in zip(parts, types))
        return parts if isinstance(res, tuple) else parts[0]


def _widened(a: Any, widen: bool) -> Any:
    """A copy of ``a`` (the function may update its argument in place) in the precision of the Python scalar
    NumPy hands the function (int64, float64, complex128)."""
    if not isinstance(a, ndarray):
        return a
    wide = {"i": numpy.int64, "u": numpy.int64, "f": numpy.float64, "c": numpy.complex128}.get(a.dtype.kind)
    return a.copy() if not widen or wide is None or a.dtype == numpy.uint64 else a.astype(wide)


def piecewise(x: Any, condlist: Any, funclist: Any) -> ndarray:
    """``funclist[i]`` where ``condlist[i]`` holds (later conditions win); an extra last value is the default.
    As in CuPy, the values are scalars or 0-d arrays, not functions."""
    from ascend_compat.cupy._creation import ones, zeros_like
    from ascend_compat.cupy._manipulation import broadcast_to

    a = asarray(x)
    if isinstance(condlist, (bool, numpy.bool_)) or (isinstance(condlist, ndarray) and condlist.ndim == 0):
        condlist = [condlist]
    conds: list[Any] = [asarray(c) for c in condlist]
    values = list(funclist.get() if isinstance(funclist, ndarray) else funclist)
    if any(callable(v) for v in values):
        raise NotImplementedError("Callable functions are not supported currently")
    n = len(conds)
    if len(values) not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    masks: list[Any] = [broadcast_to(c.astype(bool), a.shape) for c in conds]
    out: Any = zeros_like(a)
    if len(values) == n + 1:  # the default: where no condition holds
        none: Any = ones(a.shape, dtype=bool)
        for m in masks:
            none &= ~m
        out[none] = values[-1]
    for m, v in zip(masks, values):
        out[m] = v
    return out


__all__ = ["piecewise", "vectorize"]
