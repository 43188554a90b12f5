"""``cupy.fft.config``: CuPy's FFT settings. There are no cuFFT plans off CUDA: the plan cache is always empty."""

from __future__ import annotations

import contextvars
import warnings
from typing import Any


class _FFTConfig:
    _enable_nd_planning: contextvars.ContextVar[bool] = contextvars.ContextVar(
        "cupy.fft.config.enable_nd_planning", default=True)
    _use_multi_gpus: contextvars.ContextVar[bool] = contextvars.ContextVar(
        "cupy.fft.config.use_multi_gpus", default=False)
    _devices: contextvars.ContextVar[Any] = contextvars.ContextVar("cupy.fft.config.devices", default=None)

    @property
    def enable_nd_planning(self) -> bool:
        warnings.warn("enable_nd_planning is deprecated as of CuPy 14 and will always be True in the future.",
                      DeprecationWarning, stacklevel=2)
        return self._enable_nd_planning.get()

    @enable_nd_planning.setter
    def enable_nd_planning(self, value: bool) -> None:
        warnings.warn("enable_nd_planning is deprecated as of CuPy 14 and will always be True in the future.",
                      DeprecationWarning, stacklevel=2)
        self._enable_nd_planning.set(value)

    @property
    def use_multi_gpus(self) -> bool:
        return self._use_multi_gpus.get()

    @use_multi_gpus.setter
    def use_multi_gpus(self, value: bool) -> None:
        self._use_multi_gpus.set(bool(value))

    @property
    def devices(self) -> Any:
        return self._devices.get() if self._use_multi_gpus.get() else None

    def set_cufft_gpus(self, gpus: Any) -> None:
        from ascend_compat.cupy.cuda._cuda_only import refuse

        refuse("fft.config.set_cufft_gpus (multi-GPU cuFFT)")

    def set_cufft_callbacks(self, *args: Any, **kwargs: Any) -> None:
        from ascend_compat.cupy.cuda._cuda_only import refuse

        refuse("fft.config.set_cufft_callbacks (cuFFT callbacks)")

    @staticmethod
    def get_current_callback_manager(*args: Any, **kwargs: Any) -> None:
        return None

    @staticmethod
    def get_plan_cache() -> None:
        return None

    @staticmethod
    def clear_plan_cache() -> None:
        """No plan cache exists: the backend plans each transform itself."""

    @staticmethod
    def get_plan_cache_size() -> int:
        return 0

    @staticmethod
    def set_plan_cache_size(size: int) -> None:
        """Accepted and ignored (no plan cache)."""

    @staticmethod
    def get_plan_cache_max_memsize() -> int:
        return 0

    @staticmethod
    def set_plan_cache_max_memsize(size: int) -> None:
        """Accepted and ignored (no plan cache)."""

    @staticmethod
    def show_plan_cache_info() -> None:
        print("no cuFFT plan cache: the backend plans each transform")


config = _FFTConfig()
