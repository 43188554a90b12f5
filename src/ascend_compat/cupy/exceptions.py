"""``cupy.exceptions``: the NumPy exception types CuPy re-exports."""

from numpy.exceptions import (
    AxisError,
    ComplexWarning,
    DTypePromotionError,
    ModuleDeprecationWarning,
    RankWarning,
    TooHardError,
    VisibleDeprecationWarning,
)

__all__ = ["AxisError", "ComplexWarning", "DTypePromotionError", "ModuleDeprecationWarning", "RankWarning",
           "TooHardError", "VisibleDeprecationWarning"]
