"""``import cupy`` / ``import cupyx`` resolving to ``ascend_compat.cupy``: the providers the package finder asks.

Standard library only, and imported only when a ``cupy`` name is looked up: the CUDA shim registers
``"ascend_compat._cupy_alias:shim_provider"`` with :func:`ascend_compat._import_hooks.provide` at activation (mode
``"fallback"``) without importing this module or ``ascend_compat.cupy`` (NumPy and ~70 modules), which loads on the
first ``import cupy``. :mod:`ascend_compat.cupy._install` registers :func:`alias_provider` for ``install_as_cupy()``.

- :func:`alias_provider` (``install_as_cupy``, mode ``"replace"``) answers every ``cupy``/``cupyx`` name; its caller
  has already checked that no usable real CuPy is installed.
- :func:`shim_provider` (the shim) never shadows anything: the finder asks it for ``cupy`` (or ``cupyx``) only when
  no other finder on ``sys.meta_path`` finds a module of that name, and it answers ``cupy.<sub>`` only while
  ``sys.modules["cupy"]`` is ``ascend_compat.cupy``. An installed real CuPy, usable or not, is always imported instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Optional

__all__ = ["NOT_PROVIDED", "TARGETS", "alias_provider", "alias_target", "forget_aliases", "is_alias", "not_provided",
           "shim_provider"]

#: The top-level names aliased, and the modules they resolve to.
TARGETS = {"cupy": "ascend_compat.cupy", "cupyx": "ascend_compat.cupy._cupyx"}

_PROFILING = "use torch.profiler (torch_npu's profiler on Ascend), or time with cupy.cuda.Event"
_CUDA_LIB = "a wrapper of a CUDA library: use cupy.linalg, cupy.fft, sorting and reductions, which run on the backend"
#: CuPy modules this package does not provide, and what to use instead: importing one raises a
#: ModuleNotFoundError saying so (Python's own "'cupyx' is not a package" reads like a broken install).
NOT_PROVIDED = {
    "cupyx.scipy": "run SciPy on a host copy (cupy.asnumpy(a)), or use cupy.fft / cupy.linalg / torch",
    "cupyx.jit": "it compiles Python functions to CUDA kernels: write the kernel as array code, an "
                 "ElementwiseKernel expression, or a Triton / Ascend C kernel (ascend-compat scaffold)",
    "cupyx.profiler": _PROFILING, "cupyx.time": _PROFILING, "cupy.cuda.nvtx": _PROFILING,
    "cupy.cuda.profiler": _PROFILING, "cupy.prof": _PROFILING,
    "cupyx.lapack": _CUDA_LIB, "cupyx.cusolver": _CUDA_LIB, "cupyx.cusparse": _CUDA_LIB, "cupyx.cutensor": _CUDA_LIB,
    "cupy.cuda.cub": _CUDA_LIB, "cupy.cuda.thrust": _CUDA_LIB, "cupy.cuda.jitify": _CUDA_LIB,
    "cupy.cuda.cudnn": _CUDA_LIB,
    "cupyx.distributed": "use torch.distributed (hccl on Ascend)",
    "cupy.testing": "CuPy's test helpers are not included: compare cupy.asnumpy(a) with numpy.testing",
}


def not_provided(fullname: str, attribute: bool = False) -> Optional[str]:
    """The message for a CuPy module (or a submodule of one) that this package does not provide, else None
    (``attribute``: for ``cupyx.scipy`` as an attribute rather than an import)."""
    parts = fullname.split(".")
    for k in range(len(parts), 1, -1):
        advice = NOT_PROVIDED.get(".".join(parts[:k]))
        if advice is not None:
            what = "No attribute or module" if attribute else "No module named"
            return (f"{what} {fullname!r}: ascend_compat.cupy, which `import {parts[0]}` resolves to here, "
                    f"does not provide {'.'.join(parts[:k])}; {advice}")
    return None


def alias_target(fullname: str) -> Optional[str]:
    """The module ``fullname`` (``cupy``, ``cupy.linalg``, ``cupyx``, ...) resolves to; None for other names."""
    top, dot, rest = fullname.partition(".")
    base = TARGETS.get(top)
    return None if base is None else base + dot + rest


def is_alias(module: Optional[ModuleType], top: str = "cupy") -> bool:
    """True when ``module`` is the product module that the top-level name ``top`` is aliased to."""
    return module is not None and getattr(module, "__name__", "") == TARGETS[top]


class _AliasLoader:
    """Loads ``cupy.X`` by importing ``ascend_compat.cupy.X`` and putting that very module in ``sys.modules``."""

    def __init__(self, real: str, module: Optional[ModuleType] = None) -> None:
        self.real = real
        self.module = module  # a module the package exposes as an attribute (cupy.exceptions = numpy.exceptions)

    def create_module(self, spec: ModuleSpec) -> Optional[ModuleType]:
        return None  # a throwaway module; exec_module swaps in the real one (whose __spec__ stays untouched)

    def exec_module(self, module: ModuleType) -> None:
        import importlib

        sys.modules[module.__name__] = self.module or importlib.import_module(self.real)


def _spec(fullname: str, loader: Any) -> ModuleSpec:
    return ModuleSpec(fullname, loader)  # a loader by protocol: importlib.abc (and importlib.resources) not imported


def _alias_spec(fullname: str) -> Optional[ModuleSpec]:
    real = alias_target(fullname)
    if real is None:
        return None
    if real in sys.modules:
        return _spec(fullname, _AliasLoader(real))
    import importlib.util

    try:
        if importlib.util.find_spec(real) is not None:
            return _spec(fullname, _AliasLoader(real))
    except (ImportError, ValueError):  # the parent is a plain module (cupyx.scipy): not a package here
        pass
    parent, _, attr = real.rpartition(".")
    value = getattr(sys.modules.get(parent), attr, None)
    if isinstance(value, ModuleType):
        return _spec(fullname, _AliasLoader(real, value))
    message = not_provided(fullname)
    # Only below this package's own modules: a module put in sys.modules by someone else (a test suite's own
    # cupy.testing) has submodules that other finders find.
    owner = sys.modules.get(fullname.rpartition(".")[0])
    if message is not None and getattr(owner, "__name__", "").startswith(TARGETS["cupy"]):
        raise ModuleNotFoundError(message, name=fullname)
    return None


class _AliasProvider:
    """``install_as_cupy``'s provider (mode "replace"): every ``cupy``/``cupyx`` name, as the product's module."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        return _alias_spec(fullname)

    def forget(self) -> None:
        forget_aliases()


class _ShimProvider(_AliasProvider):
    """The shim's provider (mode "fallback": the finder asks it for a top-level name only when no other finder
    finds one, and for ``cupy.<sub>`` only while it :meth:`owns` ``sys.modules["cupy"]``, so a real CuPy's own
    submodules are never shadowed). Asked first (the package finder leads ``sys.meta_path``), before the path
    finder, which would otherwise load ``cupy.linalg`` a second time from ``ascend_compat/cupy/linalg``."""

    def owns(self, top: str, module: Optional[ModuleType]) -> bool:
        """True when ``module`` (``sys.modules[top]``) is this package's alias."""
        return is_alias(module, top)


def alias_provider() -> _AliasProvider:
    """The provider ``install_as_cupy()`` registers (a ``"module:function"`` factory for ``_import_hooks``)."""
    return _AliasProvider()


def shim_provider() -> _ShimProvider:
    """The provider the shim registers at activation, as ``"ascend_compat._cupy_alias:shim_provider"``: this
    module is imported only when ``import cupy`` (or ``cupyx``) happens."""
    return _ShimProvider()


def forget_aliases() -> list[str]:
    """Drop the ``cupy``/``cupyx`` names bound to this package from ``sys.modules`` (a real CuPy's stay); the names
    dropped. The providers' ``forget``: withdrawing one (the shim's deactivation) makes ``import cupy`` fail again."""
    gone = [name for name, module in list(sys.modules.items())
            if alias_target(name) is not None and getattr(module, "__name__", "").startswith(TARGETS["cupy"])]
    for name in gone:
        sys.modules.pop(name, None)
    return gone
