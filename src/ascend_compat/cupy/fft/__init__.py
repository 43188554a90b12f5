"""``cupy.fft`` on ``torch.fft`` (the backend's FFT); single precision stays single, as in CuPy."""

from __future__ import annotations

import sys

from ascend_compat.cupy.fft import _fft  # noqa: F401 - cupy.fft._fft
from ascend_compat.cupy.fft._config import config
from ascend_compat.cupy.fft._fft import (
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

__all__ = ["config", "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift",
           "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]

sys.modules[__name__ + ".config"] = config  # type: ignore[assignment]  # `import cupy.fft.config`, as in CuPy
