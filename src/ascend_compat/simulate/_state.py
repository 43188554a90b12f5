"""Process-wide state of the simulated NPU (set once by install())."""

from __future__ import annotations

import json
from importlib import resources
from types import ModuleType
from typing import Any, Optional

_EXT: Optional[ModuleType] = None
_CHIP: Optional[dict[str, Any]] = None


def chip_profiles() -> dict[str, dict[str, Any]]:
    """The chip profiles shipped in ``chips.json`` (name -> profile)."""
    data = json.loads(resources.files("ascend_compat.simulate").joinpath("chips.json").read_text("utf-8"))
    return dict(data["chips"])


def ext() -> ModuleType:
    if _EXT is None:
        raise RuntimeError("the simulated NPU is not installed: call ascend_compat.simulate.install()")
    return _EXT


def chip() -> dict[str, Any]:
    if _CHIP is None:
        raise RuntimeError("the simulated NPU is not installed: call ascend_compat.simulate.install()")
    return _CHIP
