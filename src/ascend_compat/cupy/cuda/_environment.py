"""Where the CUDA / ROCm toolchains are (CuPy's ``cupy.cuda.get_nvcc_path`` ...): looked up, never assumed.

``ascend_compat.cupy`` compiles nothing, so these only answer code that asks; on a machine without the toolkit
they give None, as CuPy's do.
"""

from __future__ import annotations

import os
import shutil
from typing import Optional

__all__ = ["get_cuda_path", "get_hipcc_path", "get_nvcc_path", "get_rocm_path"]


def _root_of(command: Optional[str]) -> Optional[str]:
    return None if command is None else os.path.dirname(os.path.dirname(os.path.realpath(command)))


def get_nvcc_path() -> Optional[str]:
    """The nvcc command (``$NVCC``, else ``nvcc`` on ``PATH`` or under ``$CUDA_PATH/bin``), or None."""
    if os.environ.get("NVCC"):
        return os.environ["NVCC"]
    cuda = os.environ.get("CUDA_PATH")
    found = shutil.which("nvcc") or (shutil.which("nvcc", path=os.path.join(cuda, "bin")) if cuda else None)
    return found


def get_cuda_path() -> Optional[str]:
    """The CUDA toolkit directory (``$CUDA_PATH``, else the one holding nvcc), or None."""
    return os.environ.get("CUDA_PATH") or _root_of(shutil.which("nvcc"))


def get_hipcc_path() -> Optional[str]:
    """The hipcc command on ``PATH`` (or under ``$ROCM_HOME/bin``), or None."""
    rocm = os.environ.get("ROCM_HOME")
    return shutil.which("hipcc") or (shutil.which("hipcc", path=os.path.join(rocm, "bin")) if rocm else None)


def get_rocm_path() -> Optional[str]:
    """The ROCm directory (``$ROCM_HOME``, else the one holding hipcc), or None."""
    return os.environ.get("ROCM_HOME") or _root_of(shutil.which("hipcc"))
