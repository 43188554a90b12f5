"""``cupy.cuda.runtime``: the device runtime calls CuPy code uses, answered by the torch backend."""

from __future__ import annotations

from typing import Any

from ascend_compat.cupy.cuda import _backend

is_hip = False
streamLegacy = 1  # noqa: N816 - CuPy's names
streamPerThread = 2  # noqa: N816
errorInvalidDevice = 101  # noqa: N816
errorMemoryAllocation = 2  # noqa: N816
# CUDA's enum values, for code that names them (the texture API they describe is CUDA-only: cuda.texture refuses)
cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, \
    cudaMemcpyDefault = range(5)  # noqa: N816
cudaChannelFormatKindSigned, cudaChannelFormatKindUnsigned, cudaChannelFormatKindFloat, \
    cudaChannelFormatKindNone = range(4)  # noqa: N816
cudaResourceTypeArray, cudaResourceTypeMipmappedArray, cudaResourceTypeLinear, \
    cudaResourceTypePitch2D = range(4)  # noqa: N816
cudaAddressModeWrap, cudaAddressModeClamp, cudaAddressModeMirror, cudaAddressModeBorder = range(4)  # noqa: N816
cudaFilterModePoint, cudaFilterModeLinear = range(2)  # noqa: N816
cudaReadModeElementType, cudaReadModeNormalizedFloat = range(2)  # noqa: N816


class CUDARuntimeError(RuntimeError):
    """A runtime call failed (CuPy's type; ``status`` is the CUDA error code it corresponds to)."""

    def __init__(self, status: int, message: str = "") -> None:
        self.status = status
        super().__init__(message or f"runtime error {status}")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.status, self.args[0])


def getDeviceCount() -> int:  # noqa: N802
    """Number of devices of the current backend (1 for the CPU)."""
    return _backend.device_count()


def getDevice() -> int:  # noqa: N802
    return _backend.current_index()


def setDevice(device: int) -> None:  # noqa: N802
    from ascend_compat.cupy.cuda.device import Device

    Device(device).use()


def deviceCanAccessPeer(device: int, peerDevice: int) -> int:  # noqa: N802, N803 - CuPy's names
    """1 when ``device`` can read ``peerDevice``'s memory directly, as the backend reports it (CUDA's peer
    access, torch_npu's where it has the call); 0 otherwise: the CPU (one device), a device with itself, and the
    simulated NPU, whose devices refuse each other's tensors as separate chips do without peer access."""
    count = getDeviceCount()
    for d in (device, peerDevice):
        if not 0 <= int(d) < count:
            raise CUDARuntimeError(errorInvalidDevice, f"cudaErrorInvalidDevice: invalid device ordinal {d} "
                                   f"(the {_backend.device_type()} backend has {count} device(s))")
    if int(device) == int(peerDevice):
        return 0
    return int(bool(_backend.call("can_device_access_peer", int(device), int(peerDevice), default=False)))


def deviceSynchronize() -> None:  # noqa: N802
    _backend.call("synchronize")


def memGetInfo() -> tuple[int, int]:  # noqa: N802
    """(free, total) bytes of the current device."""
    from ascend_compat.cupy.cuda.device import Device

    return Device().mem_info


def getDeviceProperties(device: int) -> dict[str, Any]:  # noqa: N802
    """The CUDA-named properties the backend can answer: ``name``, ``totalGlobalMem``, ``multiProcessorCount``."""
    from ascend_compat.cupy.cuda.device import Device

    dev = Device(device)
    props = _backend.call("get_device_properties", dev.id)
    if props is None:
        return {"name": b"cpu", "totalGlobalMem": 0, "multiProcessorCount": 1}
    cores: Any = getattr(props, "multi_processor_count", None) or getattr(props, "cube_core_num", 0)
    return {"name": str(props.name).encode(), "totalGlobalMem": int(props.total_memory),
            "multiProcessorCount": int(cores)}


def runtimeGetVersion() -> int:  # noqa: N802
    """The CUDA runtime version on CUDA (e.g. 12040); 0 on other backends, which have none."""
    import torch

    if _backend.device_type() == "cuda" and torch.version.cuda:
        major, minor = (int(v) for v in torch.version.cuda.split(".")[:2])
        return major * 1000 + minor * 10
    return 0


driverGetVersion = runtimeGetVersion  # noqa: N816
