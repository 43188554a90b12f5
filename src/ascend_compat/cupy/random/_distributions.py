"""Module-level distributions of ``cupy.random``: each draws from the current device's global RandomState."""

from __future__ import annotations

from typing import Any, Callable

from ascend_compat.cupy.random._generator import SIGNATURES, get_random_state

NAMES = (*SIGNATURES, "dirichlet", "multivariate_normal", "normal", "standard_normal", "uniform")


def _forward(name: str) -> Callable[..., Any]:
    def func(*args: Any, **kwargs: Any) -> Any:
        return getattr(get_random_state(), name)(*args, **kwargs)

    func.__name__ = func.__qualname__ = name
    func.__doc__ = f"``RandomState.{name}`` of the current device's global random state."
    return func


for _name in NAMES:
    globals()[_name] = _forward(_name)
