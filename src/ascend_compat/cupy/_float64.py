"""float64 on devices without full float64 compute: the policy, and ``show_config()``.

Ascend's AI Core has no float64 units (float64 operators run on the AI CPU, slowly, or are rejected); CUDA and the
CPU compute float64 natively. ``ASCEND_COMPAT_CUPY_FLOAT64`` chooses what ``ascend_compat.cupy`` does when a
float64 (or complex128) array would be made on such a device:

* ``native``: keep float64; the backend computes it as it can (on the simulated NPU, the simulator's own float64
  setting decides whether that warns or raises).
* ``error``: raise :class:`Float64Error` naming the dtype and the device.
* ``downcast-warn``: make float32 (complex64) instead, with a :class:`Float64DowncastWarning` every time.

The default is what the chip supports: ``native`` where float64 is supported or limited (it runs, maybe slowly),
``error`` where the backend has none (``dtype_support.json``) or where the simulated chip was installed with
``float64="error"``. A downcast never happens silently. The policy does not apply to CPU and CUDA devices.

It applies where arrays are made with a float64/complex128 dtype, by default or on request: the creation functions
(``zeros``, ``ones``, ``empty``, ``full``, ``*_like``, ``arange``, ``linspace``, ``logspace``, ``eye``, ``tri``),
``astype``, ``random``, ``fft``, ``linalg``, ``asarray``/``array`` of host float64 data (NumPy arrays, Python
floats, CPU tensors moved to the device), and ufuncs whose NumPy loop computes in float64 (``cos`` of an int64
array, ``int64 + 1.5``): under ``downcast-warn`` they compute in float32 (complex64), under ``error`` they raise.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Optional

import numpy

from ascend_compat import _stacklevel_outside, settings

__all__ = ["ENV", "POLICIES", "Float64DowncastWarning", "Float64Error", "check_dtype", "policy", "show_config",
           "ufunc_signature"]

ENV = "ASCEND_COMPAT_CUPY_FLOAT64"
POLICIES = ("native", "error", "downcast-warn")
_DOWNCAST = {numpy.dtype(numpy.float64): numpy.dtype(numpy.float32),
             numpy.dtype(numpy.complex128): numpy.dtype(numpy.complex64)}
_FULL_FLOAT64 = ("cpu", "cuda", "meta")


class Float64Error(TypeError):
    """float64 was requested on a device whose policy is ``error``."""


class Float64DowncastWarning(UserWarning):
    """float64 was replaced by float32 (policy ``downcast-warn``)."""


def _device_type(device: Any) -> str:
    if device is None:
        from ascend_compat.cupy import _core

        device = _core.current_torch_device()
    return getattr(device, "type", str(device).split(":")[0])


_DEFAULTS: dict[Any, tuple[str, str]] = {}


def default_policy(device: Any = None) -> tuple[str, str]:
    """(policy, why) for ``device`` (default: the current device) when the environment sets none."""
    dtype = _device_type(device)
    if dtype in _FULL_FLOAT64:
        return "native", f"{dtype} computes float64 natively"
    sim = sys.modules.get("ascend_compat.simulate")
    cfg = sim.config() if dtype == "npu" and sim is not None and sim.is_installed() else None
    key = (dtype, None if cfg is None else (cfg.chip, cfg.float64))
    found = _DEFAULTS.get(key)  # remembered: the support table is read from package data (~100 us a lookup)
    if found is None:
        found = _DEFAULTS[key] = _default_policy(dtype, cfg)
    return found


def _default_policy(dtype: str, cfg: Any) -> tuple[str, str]:
    if cfg is not None and cfg.float64 == "error":
        return "error", f"the simulated chip {cfg.chip} was installed with float64='error'"
    from ascend_compat.cuda_shim.dtype_policy import device_dtype_support

    support = device_dtype_support(dtype).get("float64")
    if support is None:
        return "native", f"{dtype} supports float64"
    if support.status == "unsupported":
        return "error", f"{dtype} has no float64 ({support.note})"
    return "native", f"{dtype} float64 is {support.status}: {support.note}"


def policy(device: Any = None) -> str:
    """The float64 policy in force for ``device`` (``native``, ``error`` or ``downcast-warn``)."""
    if _device_type(device) in _FULL_FLOAT64:
        return "native"
    chosen = settings.CUPY_FLOAT64.get()  # a SettingError (ValueError) names the variable on a bad value
    if chosen:
        return chosen
    return default_policy(device)[0]


def check_dtype(dtype: Any, device: Any = None) -> numpy.dtype:
    """The dtype to allocate for a requested ``dtype`` on ``device`` under the float64 policy.

    Returns ``dtype`` unchanged, its single-precision counterpart (with a warning pointing at the caller's line
    outside this package) under ``downcast-warn``, or raises :class:`Float64Error` under ``error``.
    """
    want = numpy.dtype(dtype)
    if want not in _DOWNCAST:
        return want
    chosen = policy(device)
    if chosen == "native":
        return want
    where = _device_type(device)
    if chosen == "error":
        raise Float64Error(
            f"{want} arrays are refused on the {where} device ({ENV}=error): use float32, or set {ENV}=native to "
            "compute float64 where the backend can (slowly on Ascend's AI CPU) or downcast-warn to get float32"
        )
    to = _DOWNCAST[want]
    warnings.warn(f"{want} downcast to {to} on the {where} device ({ENV}=downcast-warn)",
                  Float64DowncastWarning, stacklevel=_stacklevel_outside(_PACKAGE_DIR))
    return to


def ufunc_signature(loop: tuple[Any, ...], nin: int, device: Any) -> Optional[tuple[Any, ...]]:
    """The signature to resolve a ufunc loop again with, when ``loop`` (input then output dtypes) has a
    float64/complex128 output on ``device`` and the policy there is ``downcast-warn`` (it warns): the inputs in
    single precision, the outputs left to NumPy. None to run ``loop`` as it is; :class:`Float64Error` under
    ``error``."""
    if _device_type(device) in _FULL_FLOAT64:
        return None
    wide = next((d for d in loop[nin:] if d in _DOWNCAST), None)
    if wide is None or check_dtype(wide, device) == wide:
        return None
    return tuple(_DOWNCAST.get(d, d) for d in loop[:nin]) + (None,) * (len(loop) - nin)


WIDE = frozenset(_DOWNCAST)
FULL_FLOAT64 = frozenset(_FULL_FLOAT64)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _config_rows() -> list[tuple[str, str]]:
    import ascend_compat

    rows = [("ascend_compat", ascend_compat.__version__), ("NumPy", numpy.__version__)]
    try:
        import torch
    except ImportError:
        return [*rows, ("torch", "not installed")]
    from ascend_compat.cupy import cuda

    rows.append(("torch", torch.__version__))
    dev = cuda.current_torch_device()
    rows.append(("Device", str(dev)))
    rows.append(("Device count", str(cuda.runtime.getDeviceCount())))
    sim = sys.modules.get("ascend_compat.simulate")
    if sim is not None and sim.is_installed():
        cfg = sim.config()
        rows.append(("Simulated NPU", f"chip {cfg.chip}, {cfg.device_count} device(s), float64={cfg.float64}"))
    env = settings.CUPY_FLOAT64.get() or ""
    pol = policy(dev)
    why = f"{ENV}={env}" if env and dev.type not in _FULL_FLOAT64 else f"default: {default_policy(dev)[1]}"
    rows.append(("float64 policy", f"{pol} ({why})"))
    return rows


def show_config(*, _full: bool = False, file: Optional[Any] = None) -> None:
    """Print versions, the device in use and the float64 policy (as ``cupy.show_config()`` prints CuPy's)."""
    out = file if file is not None else sys.stdout
    rows = _config_rows()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  : {value}", file=out)
