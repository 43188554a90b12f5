"""Scaffold custom Ascend C operators: a declarative :class:`OpSpec` rendered into a CANN operator project.

``scaffold(spec, output)`` writes the project (host tiling and op definition, Ascend C kernel, msopgen description,
build script, PyTorch binding, a test against the torch reference, README) atomically; ``render_project(spec)``
returns the files without writing. The same spec always gives the same bytes.
"""

from __future__ import annotations

from ascend_compat.kernel_helper.render import render_project
from ascend_compat.kernel_helper.spec import (
    PATTERNS,
    AttrSpec,
    OpSpec,
    SpecError,
    TensorSpec,
    default_spec,
)
from ascend_compat.kernel_helper.writer import ScaffoldResult, scaffold

__all__ = [
    "PATTERNS",
    "AttrSpec",
    "OpSpec",
    "ScaffoldResult",
    "SpecError",
    "TensorSpec",
    "default_spec",
    "render_project",
    "scaffold",
]
