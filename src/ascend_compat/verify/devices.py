"""Which device a verification runs on: the requested one, or the CPU when it is not there (CPU fallback)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Resolved:
    """The device used (``npu``, ``npu:1``, ``cuda``, ``cpu``), what was asked for, and why they differ."""

    device: str
    requested: str
    fallback: Optional[str] = None  # the reason when the CPU stands in for the requested device
    simulated: bool = False

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]


def prepare(simulate: Optional[str] = None) -> None:
    """Install the simulated NPU when asked (``simulate="npu"`` or ``ASCEND_COMPAT_SIMULATE=npu``)."""
    from ascend_compat import simulate as sim

    if simulate:
        if simulate != "npu":
            raise ValueError(f"--simulate {simulate!r}: only 'npu' can be simulated")
        sim.install()
    else:
        sim.install_from_env()


def _npu_available() -> bool:
    from ascend_compat.backends import NPUBackend

    return NPUBackend.available()


def _cuda_available() -> bool:
    import torch

    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def resolve(requested: Optional[str] = None) -> Resolved:
    """Resolve ``npu``/``cuda``/``cpu`` (with an optional index) or ``auto`` (None) to a usable device.

    ``auto`` picks the NPU, then CUDA, then the CPU. A requested accelerator that is absent falls back to the CPU,
    and ``fallback`` says so: the results then describe the CPU, not the accelerator.
    """
    from ascend_compat import simulate as sim

    want = (requested or "auto").strip().lower()
    kind = want.split(":")[0]
    simulated = sim.is_installed()
    if kind == "auto":
        if _npu_available():
            return Resolved("npu", want, simulated=simulated)
        if _cuda_available():
            return Resolved("cuda", want)
        return Resolved("cpu", want)
    if kind == "cpu":
        return Resolved("cpu", want)
    if kind == "npu":
        if _npu_available():
            return Resolved(want, want, simulated=simulated)
        return Resolved("cpu", want, "no NPU: torch_npu is not importable or reports no device "
                        "(use --simulate npu for the simulated one); CPU fallback", False)  # fmt: skip
    if kind == "cuda":
        if _cuda_available():
            return Resolved(want, want)
        return Resolved("cpu", want, "CUDA is not available; CPU fallback")
    raise ValueError(f"unknown device {requested!r}: use npu, cuda, cpu (optionally with :index) or auto")
