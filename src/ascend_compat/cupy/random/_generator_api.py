"""``cupy.random.Generator``: NumPy's Generator API with CuPy's ``dtype=`` and ``out=`` arguments."""

from __future__ import annotations

from typing import Any, Optional

import numpy

from ascend_compat.cupy import _core
from ascend_compat.cupy.random._bit_generator import BitGenerator
from ascend_compat.cupy.random._common import dirichlet, float_dtype, is_scalar
from ascend_compat.cupy.random._generator import SIGNATURES, bind

_HOST = ("beta", "binomial", "chisquare", "exponential", "f", "gamma", "geometric", "gumbel",
         "hypergeometric", "laplace", "logistic", "lognormal", "logseries", "multinomial", "multivariate_normal",
         "negative_binomial", "noncentral_chisquare", "noncentral_f", "pareto", "poisson", "power", "rayleigh",
         "standard_cauchy", "standard_t", "triangular", "vonmises", "wald", "weibull", "zipf")
_INT_RESULT = ("binomial", "geometric", "hypergeometric", "logseries", "multinomial", "negative_binomial",
               "poisson", "zipf")


def _fill(out: Optional[_core.ndarray], result: _core.ndarray) -> _core.ndarray:
    if out is None:
        return result
    if out._is_flip:  # negative strides: written through to the memory
        out[...] = result
        return out
    out._t.copy_(result._t)
    return out


def _check_out(out: Optional[_core.ndarray], size: Any, dtype: numpy.dtype) -> Any:
    """Validate ``out=`` as CuPy does; the size to draw."""
    if out is None:
        return size
    if not isinstance(out, _core.ndarray):
        raise TypeError("out must be a cupy.ndarray")
    if out.dtype != dtype:
        raise TypeError(f"Supplied output array has the wrong type: {out.dtype}, expected {dtype}")
    if not out.flags.c_contiguous:
        raise ValueError("Supplied output array is not C-contiguous")
    if size is not None and tuple(numpy.atleast_1d(size)) != out.shape and not (size == () and out.shape == ()):
        raise ValueError(f"size {size} does not match the output shape {out.shape}")
    return out.shape


class Generator:
    """Random samples on the current device from a :class:`BitGenerator` (``cupy.random.default_rng()``)."""

    def __init__(self, bit_generator: BitGenerator) -> None:
        if not isinstance(bit_generator, BitGenerator):
            raise TypeError("bit_generator must be a cupy.random BitGenerator")
        self.bit_generator = bit_generator

    @property
    def _s(self) -> Any:
        return self.bit_generator._s

    def random(self, size: Any = None, dtype: Any = numpy.float64, out: Any = None) -> _core.ndarray:
        dt = float_dtype(dtype)
        return _fill(out, self._s.uniform01(_check_out(out, size, dt), dt))

    def standard_normal(self, size: Any = None, dtype: Any = numpy.float64, out: Any = None) -> _core.ndarray:
        dt = float_dtype(dtype)
        return _fill(out, self._s.normal01(_check_out(out, size, dt), dt))

    def standard_exponential(self, size: Any = None, dtype: Any = numpy.float64, method: str = "zig",
                             out: Any = None) -> _core.ndarray:
        dt = float_dtype(dtype)
        return _fill(out, self._s.host_draw("standard_exponential", size=_check_out(out, size, dt), dtype=dt))

    def standard_gamma(self, shape: Any, size: Any = None, dtype: Any = numpy.float64,
                       out: Any = None) -> _core.ndarray:
        dt = float_dtype(dtype)
        return _fill(out, self._s.host_draw("standard_gamma", shape, size=_check_out(out, size, dt), dtype=dt))

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None, dtype: Any = numpy.float64) -> Any:
        return self._s.uniform(low, high, size, float_dtype(dtype))

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: Any = numpy.float64) -> Any:
        return self._s.host_draw("normal", loc, scale, size=size, dtype=float_dtype(dtype))

    def integers(self, low: Any, high: Any = None, size: Any = None, dtype: Any = numpy.int64,
                 endpoint: bool = False) -> _core.ndarray:
        if high is None:
            low, high = 0, low
        if is_scalar(low) and is_scalar(high) and not endpoint:
            out = self._s.integers(int(low), int(high), size, dtype) if int(low) < int(high) else None
            if out is not None:
                return out
        return self._s.host_draw("integers", low, high, size=size, dtype=dtype, endpoint=endpoint)

    def permutation(self, x: Any) -> _core.ndarray:
        if isinstance(x, (int, numpy.integer)):
            return _core._wrap(self._s.randperm(int(x)))
        x = x if isinstance(x, _core.ndarray) else _core.asarray(x)
        return _core._wrap(x._t[self._s.randperm(len(x))], dtype=x.dtype)

    def dirichlet(self, alpha: Any, size: Any = None, dtype: Any = numpy.float64) -> _core.ndarray:
        return dirichlet(self._s, alpha, size, dtype)

    def shuffle(self, x: _core.ndarray) -> None:
        if not isinstance(x, _core.ndarray):
            raise TypeError("The array must be cupy.ndarray")
        if x._is_flip:  # negative strides: shuffled on a scratch copy, written back
            from ascend_compat.cupy._core_flip import rmw

            rmw(x, self.shuffle)
            return
        x._t.copy_(x._t[self._s.randperm(len(x))])


def _host_method(name: str) -> Any:
    def method(self: Generator, *args: Any, **kwargs: Any) -> Any:
        if name in SIGNATURES:
            *params, size, dtype = bind(name, args, kwargs, ("size", "dtype"))
            kwargs = {}
        else:
            size, dtype, params = kwargs.pop("size", None), kwargs.pop("dtype", None), list(args)
        dt = numpy.dtype(dtype) if dtype is not None else numpy.dtype(numpy.int64 if name in _INT_RESULT else "d")
        return self._s.host_draw(name, *params, size=size, dtype=dt, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Samples of ``numpy.random.Generator.{name}`` as a device array."
    return method


for _name in _HOST:
    setattr(Generator, _name, _host_method(_name))
