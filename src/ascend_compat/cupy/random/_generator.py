"""CuPy's legacy ``RandomState`` (with CuPy's ``dtype=`` arguments) and the per-device global states."""

from __future__ import annotations

import os
from typing import Any

import numpy

from ascend_compat.cupy import _core
from ascend_compat.cupy.random._common import Streams, dirichlet, float_dtype, host_param, is_scalar

# Distributions drawn by NumPy on the host: name -> (parameters with defaults, default dtype). CuPy's legacy
# RandomState takes them positionally, then ``size``, then ``dtype``.
_REQ = object()
SIGNATURES: dict[str, tuple[tuple[tuple[str, Any], ...], Any]] = {
    "beta": ((("a", _REQ), ("b", _REQ)), float),
    "binomial": ((("n", _REQ), ("p", _REQ)), int),
    "chisquare": ((("df", _REQ),), float),
    "exponential": ((("scale", 1.0),), float),
    "f": ((("dfnum", _REQ), ("dfden", _REQ)), float),
    "gamma": ((("shape", _REQ), ("scale", 1.0)), float),
    "geometric": ((("p", _REQ),), "l"),
    "gumbel": ((("loc", 0.0), ("scale", 1.0)), float),
    "hypergeometric": ((("ngood", _REQ), ("nbad", _REQ), ("nsample", _REQ)), "l"),
    "laplace": ((("loc", 0.0), ("scale", 1.0)), float),
    "logistic": ((("loc", 0.0), ("scale", 1.0)), float),
    "lognormal": ((("mean", 0.0), ("sigma", 1.0)), float),
    "logseries": ((("p", _REQ),), "l"),
    "negative_binomial": ((("n", _REQ), ("p", _REQ)), int),
    "noncentral_chisquare": ((("df", _REQ), ("nonc", _REQ)), float),
    "noncentral_f": ((("dfnum", _REQ), ("dfden", _REQ), ("nonc", _REQ)), float),
    "pareto": ((("a", _REQ),), float),
    "poisson": ((("lam", 1.0),), "l"),
    "power": ((("a", _REQ),), float),
    "rayleigh": ((("scale", 1.0),), float),
    "standard_cauchy": ((), float),
    "standard_exponential": ((), float),
    "standard_gamma": ((("shape", _REQ),), float),
    "standard_t": ((("df", _REQ),), float),
    "triangular": ((("left", _REQ), ("mode", _REQ), ("right", _REQ)), float),
    "vonmises": ((("mu", _REQ), ("kappa", _REQ)), float),
    "wald": ((("mean", _REQ), ("scale", _REQ)), float),
    "weibull": ((("a", _REQ),), float),
    "zipf": ((("a", _REQ),), int),
}
# The ones CuPy builds on its uniform/normal generators, which accept float32 and float64 only.
FLOAT_ONLY = frozenset({"exponential", "gumbel", "laplace", "logistic", "lognormal", "pareto", "power", "rayleigh",
                        "standard_cauchy", "standard_exponential", "weibull"})


def bind(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], extra: tuple[str, ...]) -> list[Any]:
    """Positional and keyword arguments of distribution ``name`` as [param..., *extra] (``_REQ`` if missing)."""
    params, default_dtype = SIGNATURES[name]
    names = [p for p, _ in params] + list(extra)
    defaults = dict(params) | {"size": None, "dtype": default_dtype, "out": None}
    if len(args) > len(names):
        raise TypeError(f"{name}() takes at most {len(names)} positional arguments ({len(args)} given)")
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
        if key in values:
            raise TypeError(f"{name}() got multiple values for argument '{key}'")
        values[key] = value
    out = [values.get(n, defaults.get(n, _REQ)) for n in names]
    missing = [n for n, v in zip(names, out) if v is _REQ]
    if missing:
        raise TypeError(f"{name}() missing required argument '{missing[0]}'")
    return out


def _host_method(name: str) -> Any:
    def method(self: RandomState, *args: Any, **kwargs: Any) -> Any:
        *params, size, dtype = bind(name, args, kwargs, ("size", "dtype"))
        dt = float_dtype(dtype) if name in FLOAT_ONLY else numpy.dtype(dtype)
        if any(p is None for p in params):
            raise ValueError(f"{name}: a parameter is None")
        if name == "logseries" and numpy.any((numpy.asarray(host_param(params[0])) <= 0)
                                             | (numpy.asarray(host_param(params[0])) >= 1)):
            raise ValueError("logseries: p must be in (0, 1)")
        if name == "hypergeometric":  # CuPy takes float counts
            params = [numpy.asarray(host_param(p)).astype(numpy.int64) for p in params]
        return self._s.host_draw(name, *params, size=size, dtype=dt, legacy=True)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Samples of ``numpy.random.RandomState.{name}`` as a device array of ``dtype``."
    return method


class RandomState:
    """A random number generator whose samples land on the current device (CuPy's legacy API).

    ``method`` (a cuRAND generator type) is accepted for compatibility; the backend's generator is used.
    """

    def __init__(self, seed: Any = None, method: Any = None) -> None:
        self.method = method
        self._s = Streams(seed)

    def seed(self, seed: Any = None) -> None:
        """Reset the state from ``seed`` (None: fresh entropy)."""
        self._s.seed(seed)

    # -- drawn on the device ------------------------------------------------------------------------------
    def random_sample(self, size: Any = None, dtype: Any = float) -> _core.ndarray:
        return self._s.uniform01(size, float_dtype(dtype))

    def rand(self, *size: Any, **kwarg: Any) -> _core.ndarray:
        dtype = kwarg.pop("dtype", float)
        if kwarg:
            raise TypeError(f"rand() got unexpected keyword arguments {', '.join(kwarg)}")
        return self.random_sample(size=size, dtype=dtype)

    def randn(self, *size: Any, **kwarg: Any) -> _core.ndarray:
        dtype = kwarg.pop("dtype", float)
        if kwarg:
            raise TypeError(f"randn() got unexpected keyword arguments {', '.join(kwarg)}")
        return self.normal(size=size, dtype=dtype)

    def standard_normal(self, size: Any = None, dtype: Any = float) -> _core.ndarray:
        return self._s.normal01(size, float_dtype(dtype))

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None, dtype: Any = float) -> _core.ndarray:
        return self._s.uniform(low, high, size, float_dtype(dtype))

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: Any = float) -> _core.ndarray:
        dt = float_dtype(dtype)
        if is_scalar(loc) and is_scalar(scale):
            if scale < 0:
                raise ValueError("scale < 0")
            x = self._s.normal01(size, dt)
            x._t.mul_(float(scale)).add_(float(loc))
            return x
        return self._s.host_draw("normal", loc, scale, size=size, dtype=dt)

    def randint(self, low: Any, high: Any = None, size: Any = None, dtype: Any = int) -> _core.ndarray:
        if high is None:
            low, high = 0, low
        if is_scalar(low) and is_scalar(high):
            lo, hi = int(low), int(high)
            if lo >= hi:
                raise ValueError("low >= high")
            info = numpy.iinfo(numpy.dtype(dtype))
            if lo < info.min:
                raise ValueError(f"low is out of bounds for {numpy.dtype(dtype).name}")
            if hi - 1 > info.max:
                raise ValueError(f"high is out of bounds for {numpy.dtype(dtype).name}")
            out = self._s.integers(lo, hi, size, dtype)
            if out is not None:
                return out
        return self._s.host_draw("integers", low, high, size=size, dtype=dtype)

    def random_integers(self, low: Any, high: Any = None, size: Any = None) -> _core.ndarray:
        if high is None:
            low, high = 1, low
        return self.randint(low, int(high) + 1, size)

    def tomaxint(self, size: Any = None) -> _core.ndarray:
        return self.randint(0, numpy.iinfo(numpy.int_).max, size)

    def permutation(self, a: Any) -> _core.ndarray:
        if isinstance(a, (int, numpy.integer)):
            return _core._wrap(self._s.randperm(int(a)))
        if not isinstance(a, _core.ndarray):
            a = _core.asarray(a)
        if a.ndim == 0:
            raise TypeError("An array whose ndim is 0 is not supported")
        return _core._wrap(a._t[self._s.randperm(len(a))], dtype=a.dtype)

    def shuffle(self, a: Any) -> None:
        if not isinstance(a, _core.ndarray):
            raise TypeError("The array must be cupy.ndarray")
        if a.ndim == 0:
            raise TypeError("An array whose ndim is 0 is not supported")
        if a._is_flip:  # negative strides: shuffled on a scratch copy, written back
            from ascend_compat.cupy._core_flip import rmw

            rmw(a, self.shuffle)
            return
        a._t.copy_(a._t[self._s.randperm(len(a))])

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None) -> _core.ndarray:
        if a is None:
            raise ValueError("a must be 1-dimensional or an integer")
        if isinstance(a, _core.ndarray) and a.ndim == 0:
            raise NotImplementedError("choice from a 0-d array")
        pool = a if isinstance(a, (int, numpy.integer)) else None
        if pool is None:
            a = a if isinstance(a, _core.ndarray) else _core.asarray(a)
            if a.ndim != 1:
                raise ValueError("a must be 1-dimensional or an integer")
        n = int(pool) if pool is not None else len(a)
        with self._s.lock:
            index = self._s.host.choice(n, size=size, replace=replace, p=host_param(p))
        index = _core.asarray(numpy.asarray(index, dtype=numpy.int64))
        return index if pool is not None else _core._wrap(a._t[index._t], dtype=a.dtype)

    # -- drawn on the host --------------------------------------------------------------------------------
    def dirichlet(self, alpha: Any, size: Any = None, dtype: Any = float) -> _core.ndarray:
        return dirichlet(self._s, alpha, size, dtype)

    def _interval(self, mx: Any, size: Any) -> _core.ndarray:
        """Integers drawn uniformly from ``[0, mx]`` (CuPy's internal helper)."""
        if isinstance(mx, _core.ndarray):
            return self._s.host_draw("integers", 0, host_param(mx), size=size, dtype=numpy.int64, endpoint=True)
        return self._s.host_draw("integers", 0, int(mx), size=size, dtype=numpy.int64, endpoint=True)

    def multinomial(self, n: Any, pvals: Any, size: Any = None) -> _core.ndarray:
        return self._s.host_draw("multinomial", n, pvals, size=size, dtype=numpy.int64)

    def multivariate_normal(self, mean: Any, cov: Any, size: Any = None, check_valid: str = "ignore",
                            tol: float = 1e-08, method: str = "cholesky", dtype: Any = float) -> _core.ndarray:
        return self._s.host_draw("multivariate_normal", mean, cov, size=size, dtype=float_dtype(dtype),
                                 check_valid=check_valid, tol=tol, method=method)

    def bytes(self, length: int) -> bytes:
        with self._s.lock:
            return self._s.host.bytes(length)


for _name in SIGNATURES:
    setattr(RandomState, _name, _host_method(_name))

# Per-device global states (``cupy.random.seed`` / module-level functions use the current device's).
_random_states: dict[str, RandomState] = {}


def _device_key() -> str:
    """The current device as a key: its kind too, as ``cpu`` and ``npu:0`` both have id 0 and a RandomState's
    samples stay on the device it was made for."""
    from ascend_compat.cupy._core import current_torch_device

    return str(current_torch_device())


def get_random_state() -> RandomState:
    """The current device's global RandomState (created on first use, seeded from ``CUPY_SEED`` if set)."""
    dev = _device_key()
    rs = _random_states.get(dev)
    if rs is None:
        env = os.getenv("CUPY_SEED")
        rs = _random_states.setdefault(dev, RandomState(None if env is None else numpy.uint64(int(env))))
    return rs


def set_random_state(rs: RandomState) -> None:
    """Make ``rs`` the current device's global RandomState."""
    if not isinstance(rs, RandomState):
        raise TypeError(f"Random state must be an instance of RandomState. Actual: {type(rs)}")
    _random_states[_device_key()] = rs


def reset_states() -> None:
    global _random_states
    _random_states = {}


def seed(seed: Any = None) -> None:
    """Reseed the current device's global RandomState."""
    get_random_state().seed(seed)


def _check_and_get_dtype(dtype: Any) -> numpy.dtype:
    return float_dtype(dtype)


__all__ = ["RandomState", "get_random_state", "reset_states", "seed", "set_random_state"]
