"""``cupy.random`` on the backend: legacy ``RandomState`` with CuPy's ``dtype=``, module-level distributions,
``default_rng`` / ``Generator``. Uniform, normal, integer draws and permutations run on the device; the other
distributions are drawn by NumPy on the host and copied (see ``_common``)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as _numpy

from ascend_compat.cupy.random import _bit_generator, _distributions, _generator, _permutations, _sample  # noqa: F401
from ascend_compat.cupy.random._bit_generator import XORWOW, BitGenerator, MRG32k3a, Philox4x3210
from ascend_compat.cupy.random._generator import (
    RandomState,
    get_random_state,
    reset_states,
    seed,
    set_random_state,
)
from ascend_compat.cupy.random._generator_api import Generator
from ascend_compat.cupy.random._permutations import permutation, shuffle
from ascend_compat.cupy.random._sample import (
    choice,
    multinomial,
    rand,
    randint,
    randn,
    random,
    random_integers,
    random_sample,
    ranf,
    sample,
)

for _name in _distributions.NAMES:
    globals()[_name] = getattr(_distributions, _name)


def default_rng(seed: Any = None) -> Generator:
    """A :class:`Generator` on a new XORWOW bit generator (or wraps / returns what is given)."""
    if isinstance(seed, BitGenerator):
        return Generator(seed)
    if isinstance(seed, Generator):
        return seed
    return Generator(XORWOW(seed))


def bytes(length: int) -> builtins.bytes:  # the name is CuPy's; the return type is the builtin
    """Random bytes (drawn on the host, as in CuPy)."""
    return _numpy.random.bytes(length)


__all__ = [
    "BitGenerator", "Generator", "MRG32k3a", "Philox4x3210", "RandomState", "XORWOW", "bytes", "default_rng",
    "choice", "get_random_state", "multinomial", "permutation", "rand", "randint", "randn", "random",
    "random_integers", "random_sample", "ranf", "reset_states", "sample", "seed", "set_random_state", "shuffle",
    *_distributions.NAMES,
]
