"""Module-level sampling functions of ``cupy.random`` (CuPy's ``_sample``), on the current device's state."""

from __future__ import annotations

from typing import Any

from ascend_compat.cupy.random import _distributions
from ascend_compat.cupy.random._generator import get_random_state


def rand(*size: Any, **kwarg: Any) -> Any:
    """Uniform [0, 1) samples of shape ``size``."""
    dtype = kwarg.pop("dtype", float)
    if kwarg:
        raise TypeError(f"rand() got unexpected keyword arguments {', '.join(kwarg)}")
    return random_sample(size=size, dtype=dtype)


def randn(*size: Any, **kwarg: Any) -> Any:
    """Standard normal samples of shape ``size``."""
    dtype = kwarg.pop("dtype", float)
    if kwarg:
        raise TypeError(f"randn() got unexpected keyword arguments {', '.join(kwarg)}")
    return _distributions.normal(size=size, dtype=dtype)  # type: ignore[attr-defined]


def randint(low: Any, high: Any = None, size: Any = None, dtype: Any = int) -> Any:
    """Integers in ``[low, high)`` (``[0, low)`` without ``high``)."""
    return get_random_state().randint(low, high, size, dtype)


def random_integers(low: Any, high: Any = None, size: Any = None) -> Any:
    """Integers in ``[low, high]`` (``[1, low]`` without ``high``)."""
    if high is None:
        high, low = low, 1
    return randint(low, high + 1, size)


def random_sample(size: Any = None, dtype: Any = float) -> Any:
    """Uniform [0, 1) samples."""
    return get_random_state().random_sample(size=size, dtype=dtype)


random = ranf = sample = random_sample


def choice(a: Any, size: Any = None, replace: bool = True, p: Any = None) -> Any:
    """Random samples from ``a`` (an array or ``range(a)``)."""
    return get_random_state().choice(a, size, replace, p)


def multinomial(n: Any, pvals: Any, size: Any = None) -> Any:
    """Multinomial samples."""
    return get_random_state().multinomial(n, pvals, size)
