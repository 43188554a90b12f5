"""``vectorize`` and ``piecewise``.

``vectorize`` first calls the Python function once on whole device arrays (arithmetic, comparisons and ufuncs
then run as array operations on the device). A function that cannot run on arrays (``if x > 0:``, ``max(x, y)``,
loops over scalars) is evaluated element by element with ``numpy.vectorize`` on a host copy, as NumPy does, and
the result is moved back: correct, but host-bound, so it is slow for large arrays. CuPy instead compiles such
functions to CUDA, which has no counterpart here.
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
        out = self._on_arrays(args)
        if out is None:
            host = [a.get() if isinstance(a, ndarray) else a for a in args]
            res = numpy.vectorize(self.pyfunc, otypes=self.otypes)(*host)
            return tuple(asarray(r) for r in res) if isinstance(res, tuple) else asarray(res)
        if self.otypes:
            otypes = list(self.otypes)
            out = tuple(o.astype(t) for o, t in zip(out, otypes)) if isinstance(out, tuple) else out.astype(otypes[0])
        return out

    def _on_arrays(self, args: tuple[Any, ...]) -> Any:
        """The function applied to whole arrays, broadcast to the inputs' shape; None when it cannot be."""
        from ascend_compat.cupy._manipulation import broadcast_shapes, broadcast_to

        arrays = [a for a in args if isinstance(a, ndarray)]
        if not arrays:
            return None
        shape = broadcast_shapes(*[a.shape for a in arrays])
        try:
            with numpy.errstate(all="ignore"):
                res = self.pyfunc(*args)
        except Exception:  # scalar-only Python code: evaluated elementwise on the host, as NumPy does
            return None
        parts: Any = res if isinstance(res, tuple) else (res,)
        if not all(isinstance(p, ndarray) for p in parts):
            return None
        parts = tuple(p if p.shape == shape else asarray(broadcast_to(p, shape), order="C") for p in parts)
        return parts if isinstance(res, tuple) else parts[0]


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
