"""``cupy.polynomial``: the power-series helpers of ``numpy.polynomial`` that CuPy provides, on device arrays."""

from ascend_compat.cupy.polynomial import polynomial, polyutils

__all__ = ["polynomial", "polyutils"]
