"""Build (once) and load the simulated NPU's C++ extension.

The build is cached per (source, torch version, Python ABI) under ``$ASCEND_COMPAT_CACHE_DIR`` or
``~/.cache/ascend_compat``; later processes import the cached ``.so`` directly, which takes milliseconds.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from ascend_compat.simulate.errors import SimulationError

_EXT_NAME = "ascend_compat_npu_sim"
_SOURCE = Path(__file__).with_name("_native") / "npu_sim.cpp"


def cache_root() -> Path:
    """Directory holding ascend-compat's build caches."""
    from ascend_compat import settings

    return Path(settings.cache_root())


def build_dir() -> Path:
    import torch

    key = hashlib.sha256()
    for source in sorted(_SOURCE.parent.iterdir()):  # npu_sim.cpp and the files it includes
        if source.is_file():
            key.update(source.name.encode() + b"\0" + source.read_bytes())
    key.update(torch.__version__.encode())
    key.update((sysconfig.get_config_var("EXT_SUFFIX") or "").encode())
    return cache_root() / f"npu_sim-{key.hexdigest()[:16]}"


def _attach_host_blas(module: ModuleType) -> ModuleType:
    """Hand the freshly loaded extension its host BLAS (``_host_blas``); a failure only costs speed."""
    from ascend_compat.simulate import _host_blas

    try:
        _host_blas.attach(module)
    except (OSError, AttributeError, ValueError) as exc:
        print(f"ascend-compat: the simulated NPU's large products use torch's BLAS ({exc})", file=sys.stderr)
    return module


def _import_from(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(_EXT_NAME, str(path))
    spec = importlib.util.spec_from_file_location(_EXT_NAME, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[_EXT_NAME] = module
    return _attach_host_blas(module)


def _compile(directory: Path, verbose: bool) -> ModuleType:
    from torch.utils import cpp_extension

    module: ModuleType = cpp_extension.load(
        name=_EXT_NAME, sources=[str(_SOURCE)], build_directory=str(directory), extra_cflags=["-O2"], verbose=verbose
    )
    return _attach_host_blas(module)


def load_extension(verbose: bool = False) -> ModuleType:
    """Return the compiled extension, building it on first use."""
    if _EXT_NAME in sys.modules:
        return sys.modules[_EXT_NAME]
    directory = build_dir()
    marker = directory / "BUILT"
    so_path = directory / f"{_EXT_NAME}.so"
    # The marker is written only after a complete build, so a concurrent build in another process (two torchrun
    # ranks) is never imported half-written; those processes go through the locked build below instead.
    if marker.exists() and so_path.exists():
        return _import_from(so_path)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        from torch.utils import cpp_extension

        cpp_extension.verify_ninja_availability()
    except RuntimeError as exc:
        raise SimulationError(
            "the simulated NPU compiles a small C++ extension on first use and needs the 'ninja' build tool: "
            "pip install ninja (or pip install 'ascend-compat[sim]')"
        ) from exc
    print(
        f"ascend-compat: building the simulated NPU extension in {directory} (first use only, about a minute)...",
        file=sys.stderr,
        flush=True,
    )
    try:
        try:
            module = _compile(directory, verbose)
        except ImportError:
            # Another process held the build lock and stopped before linking (killed, or its build failed):
            # torch then imports a .so that was never written. Build it ourselves, once.
            if so_path.exists():
                raise
            module = _compile(directory, verbose)
    except (RuntimeError, OSError) as exc:
        raise SimulationError(
            "could not build the simulated NPU extension; it needs a C++17 compiler (g++ or clang++) and the "
            f"Python development headers. Build log is in {directory}. Cause: {str(exc).strip()[-2000:]}"
        ) from exc
    partial = marker.with_name(f"BUILT.{os.getpid()}")
    partial.write_text("ok\n")
    os.replace(partial, marker)  # atomic: a reader sees no marker or a whole one
    return module
