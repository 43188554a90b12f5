"""``cupy._util``: the settings and warning types CuPy code (and CuPy's tests) read from it."""

from __future__ import annotations

import os
import warnings


class PerformanceWarning(RuntimeWarning):
    """A call that works, but slowly (CuPy's type)."""


ENABLE_SLICE_COPY = bool(int(os.environ.get("CUPY_EXPERIMENTAL_SLICE_COPY", "0")))
CUDA_ARRAY_INTERFACE_SYNC = bool(int(os.environ.get("CUPY_CUDA_ARRAY_INTERFACE_SYNC", "1")))
CUDA_ARRAY_INTERFACE_EXPORT_VERSION = int(os.environ.get("CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION", "3"))
DLPACK_EXPORT_VERSION = (1, 0)


def experimental(api_name: str) -> None:
    """Warn once that ``api_name`` is experimental, as CuPy does."""
    warnings.warn(f"{api_name} is experimental. The interface can change in the future.", FutureWarning,
                  stacklevel=3)
