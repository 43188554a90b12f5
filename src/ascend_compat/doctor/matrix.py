"""Queries on the packaged torch_npu / PyTorch / CANN support matrix (``data/version_matrix.json``).

Rows come from Ascend/pytorch's COMPATIBILITY table, each with its ``source``. Versions match by PEP 440 equality
with the local part ignored (``2.7.1+cpu`` is torch 2.7.1; ``2.1`` is ``2.1.0``).
"""

from __future__ import annotations

from typing import Any, Literal, Optional, TypedDict, cast

from ascend_compat import _data
from ascend_compat.doctor.versions import CannVersion, PyVersion

__all__ = ["MatrixRow", "load_matrix", "matrix_rows", "newest", "python_for_torch", "rows_for_torch",
           "rows_for_torch_npu"]


class MatrixRow(TypedDict):
    """One official torch_npu release: the torch it requires and the CANN it was validated with."""

    torch_npu: str
    torch: str
    cann: str
    #: The pip requirement for that torch, per machine (``x86_64`` needs the ``+cpu`` build).
    torch_requirement: dict[str, str]
    branch: str
    status: str
    source: str
    pin_source: str


def load_matrix() -> dict[str, Any]:
    """The whole matrix file (``pairs``: :class:`MatrixRow` list, ``torch_python``: Python versions per torch)."""
    return _data.load("version_matrix")


def matrix_rows() -> list[MatrixRow]:
    return cast("list[MatrixRow]", list(load_matrix()["pairs"]))


def rows_for_torch_npu(version: str) -> list[MatrixRow]:
    """Rows whose torch_npu release is exactly ``version`` (PEP 440 equality, local part ignored)."""
    want = PyVersion.try_parse(version)
    if want is None:
        return []
    return [row for row in matrix_rows() if PyVersion.parse(row["torch_npu"]).key == want.key]


def rows_for_torch(version: str) -> list[MatrixRow]:
    """Rows built for exactly this torch release (``2.7.1+cpu`` -> rows with torch 2.7.1)."""
    want = PyVersion.try_parse(version)
    if want is None:
        return []
    return [row for row in matrix_rows() if PyVersion.parse(row["torch"]).key == PyVersion.parse(want.public).key]


def python_for_torch(version: str) -> Optional[list[str]]:
    """Python versions torch_npu publishes wheels for with this torch release; None when the matrix has no entry."""
    want = PyVersion.try_parse(version)
    if want is None:
        return None
    for entry in load_matrix()["torch_python"]:
        if PyVersion.parse(entry["torch"]).key == PyVersion.parse(want.public).key:
            return list(entry["python"])
    return None


def newest(rows: list[MatrixRow], key: Literal["torch_npu", "torch", "cann"] = "torch_npu") -> Optional[MatrixRow]:
    """The row with the newest ``key`` (``torch_npu``, ``torch`` or ``cann``; CANN ties go to the newer torch_npu)."""
    if not rows:
        return None
    if key == "cann":
        return max(rows, key=lambda r: (CannVersion.parse(r["cann"]), PyVersion.parse(r["torch_npu"])))
    return max(rows, key=lambda r: PyVersion.parse(r[key]))
