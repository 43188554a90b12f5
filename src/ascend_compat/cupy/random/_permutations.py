"""``cupy.random.shuffle`` / ``permutation`` on the current device's state."""

from __future__ import annotations

from typing import Any

from ascend_compat.cupy.random._generator import get_random_state


def shuffle(a: Any) -> None:
    """Shuffle ``a`` in place along its first axis."""
    get_random_state().shuffle(a)


def permutation(a: Any) -> Any:
    """A permuted ``range(a)``, or a permuted copy of ``a`` along its first axis."""
    return get_random_state().permutation(a)
