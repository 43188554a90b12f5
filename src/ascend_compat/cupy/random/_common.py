"""What RandomState and Generator share: seeds, host sampling with NumPy, device sampling with torch.

Uniform, normal and integer draws and permutations are made on the device by a ``torch.Generator`` of that device;
the other distributions are drawn on the host by a ``numpy.random.Generator`` (exact NumPy distributions) and
copied to the device. Both are seeded from the same seed, so a seed reproduces every stream.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy import _core, _float64

_UINT64 = 2**64


def normalize_seed(seed: Any) -> int:
    """An integer seed in [0, 2**64) from None (fresh entropy), an integer or an array of integers."""
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    if isinstance(seed, _core.ndarray):
        seed = _core.asnumpy(seed)
    if isinstance(seed, numpy.ndarray) and seed.ndim > 0:
        if seed.dtype.kind not in "biu":
            raise TypeError("Seed must be an integer.")
        return int(hashlib.md5(numpy.ascontiguousarray(seed).tobytes(), usedforsecurity=False).hexdigest()[:16], 16)
    if isinstance(seed, (list, tuple)):
        return normalize_seed(numpy.asarray(seed))
    arr = numpy.asarray(seed)
    if arr.dtype.kind not in "biu" or arr.ndim != 0:
        raise TypeError("Seed must be an integer.")
    value = int(arr)
    if not 0 <= value < _UINT64:
        raise ValueError("Seed must be an integer between 0 and 2**64 - 1")
    return value


def host_param(x: Any) -> Any:
    """A distribution parameter as the host sampler takes it (device arrays are copied to the host)."""
    return _core.asnumpy(x) if isinstance(x, _core.ndarray) else x


def shape_of(size: Any) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, numpy.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


def float_dtype(dtype: Any) -> numpy.dtype:
    """CuPy's rule for the float distributions: float32 or float64 only."""
    dt = numpy.dtype(dtype)
    if dt.char not in ("f", "d"):
        raise TypeError("cupy.random only supports float32 and float64")
    return dt


class Streams:
    """A seeded pair of generators: NumPy's on the host, torch's on the device current at creation."""

    def __init__(self, seed: Any = None) -> None:
        self.lock = threading.Lock()
        self.device = _core.current_torch_device()
        self.seed(seed)

    def seed(self, seed: Any = None) -> None:
        value = normalize_seed(seed)
        with self.lock:
            bits = numpy.random.PCG64(value)
            self.host = numpy.random.Generator(bits)
            self.legacy = numpy.random.RandomState(bits)  # NumPy's legacy argument checks, same bit stream
            self.torch = torch.Generator(device=self.device)
            self.torch.manual_seed(value)
            self.value = value

    def to_device(self, values: Any, dtype: Any) -> _core.ndarray:
        """Host samples as a device array of ``dtype`` (under the float64 policy)."""
        dt = _float64.check_dtype(numpy.dtype(dtype), self.device)
        return _core.asarray(numpy.asarray(values).astype(dt, copy=False))

    def host_draw(self, name: str, *args: Any, size: Any = None, dtype: Any = float, legacy: bool = False,
                  **kwargs: Any) -> _core.ndarray:
        """``numpy.random.Generator.<name>`` (``RandomState.<name>`` if ``legacy``) on the host, then on the
        device as ``dtype``."""
        params = [host_param(a) for a in args]
        kw = {k: host_param(v) for k, v in kwargs.items()}
        with self.lock:
            values = getattr(self.legacy if legacy else self.host, name)(*params, size=size, **kw)
        return self.to_device(values, dtype)

    def torch_dtype(self, dtype: numpy.dtype) -> torch.dtype:
        dt = _float64.check_dtype(dtype, self.device)
        return {numpy.dtype("f"): torch.float32, numpy.dtype("d"): torch.float64}[dt]

    def uniform01(self, size: Any, dtype: numpy.dtype) -> _core.ndarray:
        """Uniform [0, 1) drawn on the device."""
        with self.lock:
            t = torch.rand(shape_of(size), generator=self.torch, device=self.device, dtype=self.torch_dtype(dtype))
        return _core._wrap(t)

    def uniform(self, low: Any, high: Any, size: Any, dtype: numpy.dtype) -> _core.ndarray:
        """Uniform draws on [low, high): on the device for scalar bounds, else NumPy's broadcasting on the host."""
        if is_scalar(low) and is_scalar(high):
            x = self.uniform01(size, dtype)
            x._t.mul_(float(high) - float(low)).add_(float(low))
            return x
        return self.host_draw("uniform", low, high, size=size, dtype=dtype)

    def normal01(self, size: Any, dtype: numpy.dtype) -> _core.ndarray:
        """Standard normal drawn on the device."""
        with self.lock:
            t = torch.randn(shape_of(size), generator=self.torch, device=self.device, dtype=self.torch_dtype(dtype))
        return _core._wrap(t)

    def randperm(self, n: int) -> torch.Tensor:
        with self.lock:
            return torch.randperm(int(n), generator=self.torch, device=self.device)

    def integers(self, low: int, high: int, size: Any, dtype: Any) -> Optional[_core.ndarray]:
        """Integers in [low, high) drawn on the device, or None when the range needs the host sampler."""
        dt = numpy.dtype(dtype)
        if dt.kind not in "iu" or not (-(2**63) <= low < high <= 2**63 - 1) or dt.itemsize > 8:
            return None
        info = numpy.iinfo(dt)
        if low < info.min or high - 1 > info.max:
            return None
        with self.lock:
            t = torch.randint(low, high, shape_of(size), generator=self.torch, device=self.device)
        return _core._wrap(t).astype(dt, copy=False)


def is_scalar(x: Any) -> bool:
    return isinstance(x, (int, float, numpy.integer, numpy.floating)) and not isinstance(x, bool)


def dirichlet(streams: Streams, alpha: Any, size: Any, dtype: Any) -> _core.ndarray:
    """Dirichlet samples: gamma draws normalised along the last axis (a scalar ``alpha`` too, as in CuPy)."""
    alpha = numpy.asarray(host_param(alpha), dtype=numpy.float64)
    shape = shape_of(size) + alpha.shape
    with streams.lock:
        g = numpy.asarray(streams.host.standard_gamma(numpy.broadcast_to(alpha, shape), size=shape))
    return streams.to_device(g / g.sum(axis=-1, keepdims=True), numpy.dtype(dtype))
