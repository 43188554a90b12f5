"""CuPy's bit generators (``XORWOW``, ``MRG32k3a``, ``Philox4x3210``) for :class:`cupy.random.Generator`.

The names select CuPy's cuRAND algorithms; here each is a seeded pair of the backend's generator and NumPy's
(see ``_common``), so streams differ from CuPy's but are reproducible from a seed.
"""

from __future__ import annotations

from typing import Any

import numpy

from ascend_compat.cupy import _core
from ascend_compat.cupy.random._common import Streams


class BitGenerator:
    """A seeded source of random bits on the current device."""

    def __init__(self, seed: Any = None) -> None:
        if isinstance(seed, numpy.random.SeedSequence):
            seed = int(seed.generate_state(2, numpy.uint64)[0])
        self._s = Streams(seed)

    def random_raw(self, size: Any = None, output: bool = True) -> Any:
        """Raw 64-bit random integers as a uint64 device array."""
        with self._s.lock:
            values = self._s.host.bit_generator.random_raw(size)
        return _core.asarray(numpy.asarray(values, dtype=numpy.uint64)) if output else None


class XORWOW(BitGenerator):
    """CuPy's default bit generator (name kept; the backend's generator underneath)."""


class MRG32k3a(BitGenerator):
    """CuPy's MRG32k3a bit generator (name kept; the backend's generator underneath)."""


class Philox4x3210(BitGenerator):
    """CuPy's Philox4x32-10 bit generator (name kept; the backend's generator underneath)."""
