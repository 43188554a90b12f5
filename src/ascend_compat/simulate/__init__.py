"""A simulated Ascend NPU: a real ``npu`` torch device whose memory lives on the host.

``install()`` registers the device (PrivateUse1 renamed to ``npu``), a ``torch.npu`` module with torch_npu's
surface, an importable ``torch_npu`` look-alike with reference fused ops, autocast on ``npu`` and a simulated
``hccl`` process-group backend. Ops run their CPU kernels on the same memory, so results equal CPU results.

What it models: device placement and its errors, device count and ordinals, memory accounting and OOM, per-device
RNG, streams/events (synchronous), autocast casting, chip dtype limits (no bf16 on 310P), a float64 policy and
ops that torch_npu runs on the CPU (with torch_npu's warning). What it does not model: timing, NPU kernels and
their numerics (results are bit-identical to CPU), private formats (NZ), graph mode, HCCL topology.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Callable, Optional

from ascend_compat.simulate.errors import SimulationError

__all__ = [
    "MIN_TORCH",
    "SimConfig",
    "SimulationError",
    "config",
    "configure",
    "fallback_counts",
    "install",
    "install_from_env",
    "is_installed",
    "on_fallback",
    "reset_fallback_counts",
]

#: Oldest torch the simulator supports: the version it is tested on. On torch 2.11 (+cu130) the compiled tier
#: built but most of its C++ error paths (invalid ordinal, cross-device, OOM) crashed the process, so older
#: releases are refused rather than half-working.
MIN_TORCH = (2, 13)
TORCH_NPU_VERSION = "0.0.0+simulated"  # replaced at install by the running torch's X.Y.0+simulated

_FLOAT64 = {"allow": 0, "warn": 1, "error": 2}
_LOCK = threading.RLock()
_CONFIG: Optional[SimConfig] = None
_FALLBACK_CALLBACKS: list[Callable[[str], None]] = []


@dataclass(frozen=True)
class SimConfig:
    """How the simulated NPU behaves. ``device_count`` and ``chip`` are fixed once installed."""

    device_count: int = 1
    chip: str = "910B"
    float64: str = "allow"
    unsupported_ops: tuple[str, ...] = field(default_factory=tuple)
    memory_limit: Optional[int] = None  # bytes per device; None = the chip's capacity
    host_blas: bool = True  # large float products on NumPy's OpenBLAS (False: torch's CPU kernel, as on the CPU)


def is_installed() -> bool:
    """True once ``install()`` ran in this process."""
    return _CONFIG is not None


def config() -> Optional[SimConfig]:
    """The active configuration, or None when not installed."""
    return _CONFIG


def _check_environment() -> None:
    loaded = sys.modules.get("torch_npu")  # torch may have loaded a real one itself (device-backend autoload)
    spec = getattr(loaded, "__spec__", None) if loaded is not None else importlib.util.find_spec("torch_npu")
    if spec is not None and spec.origin != "ascend-compat-simulated":
        raise SimulationError(
            f"a real torch_npu is importable ({spec.origin}); refusing to simulate an NPU on a machine that has the "
            "real runtime. Uninstall torch_npu or use a separate environment for simulation."
        )
    import torch

    parts = torch.__version__.split("+")[0].split(".")
    current = (int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0))
    needed = [
        ("torch.accelerator.set_stream", hasattr(torch, "accelerator") and hasattr(torch.accelerator, "set_stream")),
        ("torch.Event", hasattr(torch, "Event")),
        ("torch.utils.rename_privateuse1_backend", hasattr(torch.utils, "rename_privateuse1_backend")),
    ]
    missing = [name for name, ok in needed if not ok]
    if missing or current < MIN_TORCH:
        raise SimulationError(
            f"the simulated NPU needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (running {torch.__version__}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + ")"
        )


def _apply_limits(cfg: SimConfig) -> None:
    from ascend_compat.simulate import _state

    ext = _state.ext()
    if cfg.float64 not in _FLOAT64:
        raise ValueError(f"float64 policy must be one of {sorted(_FLOAT64)}, got {cfg.float64!r}")
    ext.set_float64_policy(_FLOAT64[cfg.float64])
    ext.set_unsupported_ops([_op_name(op) for op in cfg.unsupported_ops])
    for dev in range(cfg.device_count):
        ext.set_limit(dev, -1 if cfg.memory_limit is None else int(cfg.memory_limit))
    if cfg.host_blas != (_CONFIG.host_blas if _CONFIG is not None else True):  # loading the extension attached it
        from ascend_compat.simulate import _host_blas

        _host_blas.attach(ext, enabled=cfg.host_blas)


def _op_name(op: str) -> str:
    """Accept 'aten::add.Tensor', 'add.Tensor' or 'aten::nonzero' and return the qualified form."""
    return op if "::" in op else f"aten::{op}"


def _register_npu(torch: ModuleType, ext: ModuleType, device_count: int) -> None:
    """Name PrivateUse1 ``npu`` and register the ``torch.npu`` module, HCCL and the host-kernel routes."""
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", "npu"):
        raise SimulationError(f"PrivateUse1 is already registered as {current!r} in this process")
    if current != "npu":
        torch.utils.rename_privateuse1_backend("npu")
    if not hasattr(torch.Tensor, "is_npu"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
    from ascend_compat.simulate import hccl, npu_amp, npu_module

    npu_module.default_generators = tuple(ext.default_generator(i) for i in range(device_count))
    torch._register_device_module("npu", npu_module)
    sys.modules["torch.npu"] = npu_module
    sys.modules["torch.npu.amp"] = npu_amp
    sys.modules["torch.npu.random"] = npu_module.random
    hccl.register()
    ext.set_fallback_hook(_dispatch_fallback)
    # Convolution on PrivateUse1 dispatches to aten::convolution_overrideable, which has no kernel: run the
    # CPU path of convolution and its backward on the host views instead.
    ext.route_to_cpu(
        [*_ops_with_cpu_and_composite_kernels(torch), "aten::convolution", "aten::convolution_backward"]
    )


def install(
    device_count: int = 1,
    chip: str = "910B",
    *,
    float64: str = "allow",
    unsupported_ops: Iterable[str] = (),
    memory_limit: Optional[int] = None,
    host_blas: bool = True,
) -> SimConfig:
    """Install the simulated NPU in this process (idempotent) and return its configuration.

    Args:
        device_count: number of simulated devices (``npu:0`` ... ``npu:N-1``).
        chip: a profile from ``chips.json`` (``910B``, ``910B4``, ``310P``); 310P has no bf16.
        float64: ``allow``, ``warn`` (once per op) or ``error`` for float64 computation on the npu.
        unsupported_ops: aten ops to treat as unsupported by the NPU: they still run, with torch_npu's
            "fall back to run on the CPU" warning, a counter and the ``on_fallback`` callbacks.
        memory_limit: bytes per device before ``torch.OutOfMemoryError``; default the chip's capacity.
        host_blas: run large float32/float64 products on NumPy's OpenBLAS when it is found (faster than torch's
            kernel on some hosts); False runs every product on torch's CPU kernel, as the CPU device does.

    Raises:
        SimulationError: a real torch_npu is importable, torch is too old, the extension cannot be built, or
            the simulator is already installed with another device count or chip.
    """
    global _CONFIG, TORCH_NPU_VERSION
    from ascend_compat.simulate import _state

    profiles = _state.chip_profiles()
    if chip not in profiles:
        raise ValueError(f"unknown chip {chip!r}; known: {', '.join(sorted(profiles))}")
    if not 1 <= int(device_count) <= 64:
        raise ValueError(f"device_count must be between 1 and 64, got {device_count}")
    new = SimConfig(int(device_count), chip, float64, tuple(unsupported_ops), memory_limit, bool(host_blas))
    # Importing torch runs post-import hooks (ASCEND_COMPAT_AUTO_ACTIVATE's activation), which may install the
    # simulator themselves: let them finish before deciding whether this call still has to.
    import torch
    with _LOCK:
        if _CONFIG is not None:
            if (_CONFIG.device_count, _CONFIG.chip) != (new.device_count, new.chip):
                raise SimulationError(
                    f"the simulated NPU is already installed with device_count={_CONFIG.device_count}, "
                    f"chip={_CONFIG.chip!r}; these cannot change within a process"
                )
            _apply_limits(new)
            _CONFIG = new
            return new
        _check_environment()

        from ascend_compat.simulate import _autograd, _build, _compile, _finder, _legacy_types, _rnn

        ext = _build.load_extension()
        profile = profiles[chip]
        total = int(profile["total_memory_gib"]) << 30
        ext.configure(new.device_count, total, bool(profile["bf16"]), profile["device_name"])
        _state._EXT, _state._CHIP = ext, dict(profile, chip=chip)
        _apply_limits(new)

        _register_npu(torch, ext, new.device_count)
        TORCH_NPU_VERSION = "{}.{}.0+simulated".format(*torch.__version__.split("+")[0].split(".")[:2])
        _finder.install_finder(TORCH_NPU_VERSION)
        _autograd.install(torch, ext)
        _compile.install(torch)
        _legacy_types.install(torch)
        _rnn.register(torch)
        _CONFIG = new
        return new


def configure(
    *,
    float64: Optional[str] = None,
    unsupported_ops: Optional[Iterable[str]] = None,
    memory_limit: Optional[int] = -1,
    host_blas: Optional[bool] = None,
) -> SimConfig:
    """Change the simulated limits of an installed simulator (``memory_limit=None`` removes the limit;
    ``host_blas``: see ``install``)."""
    global _CONFIG
    with _LOCK:
        if _CONFIG is None:
            raise SimulationError("the simulated NPU is not installed: call ascend_compat.simulate.install() first")
        new = _CONFIG
        if float64 is not None:
            new = replace(new, float64=float64)
        if unsupported_ops is not None:
            new = replace(new, unsupported_ops=tuple(unsupported_ops))
        if memory_limit != -1:
            new = replace(new, memory_limit=memory_limit)
        if host_blas is not None:
            new = replace(new, host_blas=bool(host_blas))
        _apply_limits(new)
        _CONFIG = new
        return new


def _parse_bytes(text: str, name: str = "ASCEND_COMPAT_SIM_MEMORY_LIMIT") -> int:
    """A positive byte count from ``text`` (``1073741824``, ``2GiB``, ``512M``, ``1.5g``); a SimulationError
    naming the variable ``name`` otherwise (negative, zero, not a number, unknown unit)."""
    import re

    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?:([kmgt])(?:i?b)?|b)?\s*", text, re.IGNORECASE)
    value = int(float(m.group(1)) * {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(
        (m.group(2) or "").lower(), 1)) if m and len(m.group(1)) <= 20 else 0
    if value <= 0:
        raise SimulationError(f"{name}={text!r}: expected a positive size in bytes, e.g. 1073741824, 2GiB or 512MiB")
    return value


def _ops_with_cpu_and_composite_kernels(torch: object) -> list[str]:
    """aten ops whose PrivateUse1 dispatch would pick a composite kernel although CPU has its own."""
    c = torch._C  # type: ignore[attr-defined]
    has = c._dispatch_has_kernel_for_dispatch_key
    skip = {"aten::view", "aten::as_strided", "aten::_reshape_alias", "aten::resize_", "aten::_copy_from"}
    return [
        name
        for name in c._dispatch_get_all_op_names()
        if name.startswith("aten::")
        and name not in skip
        and has(name, "CPU")
        and not has(name, "CompositeImplicitAutograd")
        and (has(name, "CompositeExplicitAutograd") or has(name, "CompositeExplicitAutogradNonFunctional"))
    ]


def install_from_env(default: bool = False) -> Optional[SimConfig]:
    """Install from ``ASCEND_COMPAT_SIMULATE=npu`` and the ``ASCEND_COMPAT_SIM_*`` variables.

    ``ASCEND_COMPAT_SIM_DEVICES`` (default: ``LOCAL_WORLD_SIZE`` under torchrun, ``LOCAL_SIZE`` under the
    deepspeed launcher, else 1),
    ``ASCEND_COMPAT_SIM_CHIP``, ``ASCEND_COMPAT_SIM_FLOAT64``, ``ASCEND_COMPAT_SIM_UNSUPPORTED_OPS``
    (comma-separated), ``ASCEND_COMPAT_SIM_MEMORY_LIMIT`` (bytes, or e.g. ``2GiB``).
    Returns None when simulation is not requested and ``default`` is False.
    """
    from ascend_compat import settings

    target = (settings.SIMULATE.raw() or "").strip().lower()
    if not target and not default:
        return None
    if target and target != "npu":
        raise SimulationError(f"ASCEND_COMPAT_SIMULATE={target!r}: only 'npu' can be simulated")
    if _CONFIG is not None and not any(k.startswith("ASCEND_COMPAT_SIM_") for k in os.environ):
        return _CONFIG
    limit = settings.SIM_MEMORY_LIMIT.raw()
    if limit is not None and limit.strip():
        _parse_bytes(limit)  # its error names the variable and the accepted forms
    try:
        devices = settings.SIM_DEVICES.get() or settings.local_processes() or 1
        return install(
            device_count=devices,
            chip=settings.SIM_CHIP.get(),
            float64=settings.SIM_FLOAT64.get(),
            unsupported_ops=settings.SIM_UNSUPPORTED_OPS.get(),
            memory_limit=settings.SIM_MEMORY_LIMIT.get(),
        )
    except settings.SettingError as exc:
        raise SimulationError(str(exc)) from None


# --- fallback monitor ------------------------------------------------------------------------------------------


def _dispatch_fallback(op: str) -> None:
    for callback in list(_FALLBACK_CALLBACKS):
        callback(op)


def on_fallback(callback: Callable[[str], None]) -> Callable[[], None]:
    """Call ``callback(op_name)`` each time an unsupported op falls back to the CPU; returns an unsubscribe."""
    _FALLBACK_CALLBACKS.append(callback)

    def unsubscribe() -> None:
        if callback in _FALLBACK_CALLBACKS:
            _FALLBACK_CALLBACKS.remove(callback)

    return unsubscribe


def fallback_counts() -> dict[str, int]:
    """How often each unsupported op fell back to the CPU since install (or the last reset)."""
    from ascend_compat.simulate import _state

    return dict(_state.ext().fallback_counts())


def reset_fallback_counts() -> None:
    """Zero the counters (and let each op warn once more)."""
    from ascend_compat.simulate import _state

    _state.ext().reset_fallback_counts()
