"""ascend-compat: run CUDA-assuming PyTorch code on Ascend NPUs and measure the migration.

Importing this package imports no torch and patches nothing. Subpackages:

- ``ascend_compat.simulate``: a simulated ``npu`` device for development and CI without Ascend hardware.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
