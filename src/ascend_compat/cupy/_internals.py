"""Names under ``cupy._core`` that code and CuPy's tests import (``flags``, ``core``, ``_routines_math``, ...),
registered as modules so ``import cupy._core.<name>`` resolves through the ``cupy`` alias."""

from __future__ import annotations

import sys
import types
from typing import Any

from ascend_compat.cupy import _core, _gufuncs, _kernels, _ufunc


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


_ACCELERATORS = {"cub": 1, "cutensor": 2, "cutensornet": 3}
_ACCELERATOR_LISTS: dict[str, list[int]] = {"elementwise": [], "reduction": [], "routine": []}


def _accelerator_functions(kind: str) -> dict[str, Any]:
    """``cupy._core.get/set_<kind>_accelerators``: the list is kept (CuPy's API) but has no effect, as there is
    no CUB or cuTENSOR off CUDA; unknown names raise ValueError as in CuPy."""
    def setter(accelerators: Any) -> None:
        ids = []
        for name in accelerators:
            if name not in _ACCELERATORS:
                raise ValueError(f"Unknown accelerator: {name}")
            ids.append(_ACCELERATORS[name])
        _ACCELERATOR_LISTS[kind] = ids

    return {f"set_{kind}_accelerators": setter, f"get_{kind}_accelerators": lambda: list(_ACCELERATOR_LISTS[kind])}


def install() -> None:
    """Attach the modules (idempotent)."""
    # CuPy's ``cupy._core`` is a package: a (empty) search path lets ``import cupy._core.<name>`` reach the
    # submodules registered here through the ``cupy`` alias finder.
    _core.__path__ = []  # type: ignore[attr-defined]
    _module("flags", Flags=_core.Flags)
    _module("_gufuncs", _GUFunc=_gufuncs._GUFunc, _parse_gufunc_signature=_gufuncs._parse_gufunc_signature)
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
    _core.ElementwiseKernel = _kernels.ElementwiseKernel  # type: ignore[attr-defined]
    _core.ReductionKernel = _kernels.ReductionKernel  # type: ignore[attr-defined]
    _core.create_reduction_func = _kernels.create_reduction_func  # type: ignore[attr-defined]
    for kind in _ACCELERATOR_LISTS:
        for attr, fn in _accelerator_functions(kind).items():
            setattr(_core, attr, fn)
    _core.create_ufunc = _ufunc.create_ufunc  # type: ignore[attr-defined]
    _core.elementwise_copy = _elementwise_copy  # type: ignore[attr-defined]
    _core.ufunc = _ufunc.ufunc  # type: ignore[attr-defined]


install()
