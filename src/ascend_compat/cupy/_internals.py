"""Names under ``cupy._core`` that code and CuPy's tests import (``flags``, ``core``, ``_routines_math``, ...),
registered as modules so ``import cupy._core.<name>`` resolves through the ``cupy`` alias."""

from __future__ import annotations

import sys
import types
from typing import Any

from ascend_compat.cupy import _core, _kernels, _ufunc


def _module(name: str, **attrs: Any) -> types.ModuleType:
    full = f"{_core.__name__}.{name}"
    mod = sys.modules.get(full)
    if mod is None:
        mod = types.ModuleType(full)
        sys.modules[full] = mod
    mod.__dict__.update(attrs)
    setattr(_core, name, mod)
    return mod


def _scan_for_test(a: Any, out: Any = None) -> Any:
    from ascend_compat.cupy._reduction import cumsum

    return cumsum(a, out=out)


def _elementwise_copy(src: Any, dst: Any) -> Any:
    """``cupy._core.elementwise_copy``: cast-copy ``src`` into ``dst`` (broadcasting), returning ``dst``."""
    dst[...] = src
    return dst


def install() -> None:
    """Attach the modules (idempotent)."""
    _module("flags", Flags=_core.Flags)
    _module("core", ndarray=_core.ndarray, array=_core.array, _cupy_header_list=[])
    _module("_routines_math", _scan_for_test=_scan_for_test)
    _module("_cub_reduction", _CUB_REDUCE_SIZE_THRESHOLD=2**63 - 1)  # never: there is no CUB off CUDA
    compute = {"type": 0}
    _module("_routines_linalg", COMPUTE_TYPE_TBD=0, COMPUTE_TYPE_DEFAULT=1, COMPUTE_TYPE_PEDANTIC=2,
            COMPUTE_TYPE_TF32=3, COMPUTE_TYPE_FP32=4, COMPUTE_TYPE_FP16=5, COMPUTE_TYPE_BF16=6,
            get_compute_type=lambda dtype: compute["type"],
            set_compute_type=lambda dtype, t: compute.update(type=t))
    _core.get_compute_type = _core._routines_linalg.get_compute_type  # type: ignore[attr-defined]
    _core.set_compute_type = _core._routines_linalg.set_compute_type  # type: ignore[attr-defined]
    _core.ElementwiseKernel = _kernels.ElementwiseKernel
    _core.ReductionKernel = _kernels.ReductionKernel
    _core.create_ufunc = _ufunc.create_ufunc
    _core.elementwise_copy = _elementwise_copy  # type: ignore[attr-defined]
    _core.ufunc = _ufunc.ufunc


install()
