"""The effort model's building blocks: the unit table of ``data/effort.json``, a unit of work, the builder that
prices units, and the lookup of the torch_npu operator that already does a kernel's job."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Optional

from ascend_compat.migrate.model import Finding


@dataclass
class UnitCost:
    low: float
    high: float
    basis: str
    source: str


@dataclass
class Unit:
    """One piece of work: what it is, what it costs, and the findings (occurrences) it covers."""

    id: str
    kind: str  # a key of data/effort.json units (the row of the basis table), or "shim" (no cost)
    section: str  # one of effort.SECTION_KEYS, or "dependencies"
    label: str
    low: float
    high: float
    basis: str
    findings: list[Finding] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)  # file:line of what it covers besides findings
    alternative: str = ""
    status: str = "pending"  # pending | auto-fixable | adapted | shim | existing-port

    @property
    def family(self) -> str:
        """The unit whose migration steps this one shares (``torch_npu_operator_layout`` is a
        ``torch_npu_operator``); the kind itself when the data names none."""
        return str(data()["units"].get(self.kind, {}).get("family", self.kind))

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "family": self.family, "section": self.section,
                "label": self.label, "low": self.low, "high": self.high, "basis": self.basis, "status": self.status,
                "alternative": self.alternative, "refs": self.refs,
                "occurrences": [f"{f.path}:{f.line}" for f in self.findings]}


@lru_cache(maxsize=1)
def data() -> dict:
    """``data/effort.json``: units, torch_npu operators, published ports, calibration."""
    return json.loads((resources.files("ascend_compat.migrate") / "data" / "effort.json").read_text("utf-8"))


def cost(kind: str) -> UnitCost:
    """The range of one unit of ``kind``; a KeyError names a kind the data does not define."""
    u = data()["units"][kind]
    return UnitCost(float(u["low"]), float(u["high"]), u["basis"], u["source"])


def npu_operator(name: str, path: str = "") -> Optional[dict]:
    """The torch_npu operator entry whose pattern matches a kernel / export name (or, for a kernel, its source
    path and name together: a GEMV in a quantization source is a quantized matmul), or None."""
    for entry in data()["operators"]:
        if any(re.search(p, name, re.I) for p in entry["match"]):
            return entry
    if path:
        for entry in data()["operators"]:
            if any(re.search(pp, path, re.I) and re.search(np_, name, re.I) for pp, np_ in entry.get("in_path", ())):
                return entry
    return None


def operator_unit(entry: dict) -> str:
    """The unit that costs routing to ``entry``'s operator (layout work for quantized matmuls and KV caches)."""
    return str(entry.get("unit", "torch_npu_operator"))


class Builder:
    """Numbers and prices units; remembers which kernels (file:line) a unit already ports, so a kernel compiled
    into several extensions is costed once."""

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self.kernels: dict[tuple[str, int], Unit] = {}

    def add(self, kind: str, section: str, label: str, findings: list[Finding], refs: list[str] | None = None,
            alternative: str = "", status: str = "pending", extra: tuple[float, float] = (0.0, 0.0)) -> Unit:
        c = cost(kind) if kind != "shim" else UnitCost(0.0, 0.0, "handled at runtime by the ascend-compat shim", "")
        unit = Unit(f"U-{len(self.units) + 1:03d}", kind, section, label, round(c.low + extra[0], 2),
                    round(c.high + extra[1], 2), c.basis, findings, refs or [], alternative, status)
        self.units.append(unit)
        return unit


def rel(root: str, path: str) -> str:
    """``path`` relative to ``root``, with forward slashes (how extensions record their files)."""
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


__all__ = ["Builder", "Unit", "UnitCost", "cost", "data", "npu_operator", "operator_unit", "rel"]
