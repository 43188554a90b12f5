"""Parse ``npu-smi info``: the driver's own list of NPUs, their health and memory in use."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

__all__ = ["NpuChip", "NpuSmiReport", "parse_npu_smi_info"]


@dataclass(frozen=True)
class NpuChip:
    npu: int
    chip: int
    name: str
    health: str
    bus_id: str
    memory_used_mb: Optional[int]
    memory_total_mb: Optional[int]
    memory_kind: str
    #: Second number of the chip row where there is one: ``Phy-ID`` on Atlas A3 (910C), ``Device`` on 300I Duo.
    phy_id: Optional[int] = None


@dataclass(frozen=True)
class NpuSmiReport:
    version: Optional[str]
    chips: list[NpuChip]


def parse_npu_smi_info(text: str) -> NpuSmiReport:
    """Parse the table ``npu-smi info`` prints (device rows come in pairs: NPU/name/health, then chip/bus/usage).

    The chip row starts with the chip number (Atlas A2: ``| 0 | 0000:C1:00.0 |``) or, on Atlas A3 / 910C and
    300I Duo, with the chip number and a second id (``| 1  3 | 0000:9B:00.0 |``, header ``Chip Phy-ID`` or
    ``Chip Device``); there every chip is a device of its own. Only the first table is read; the process table after
    it is ignored. Memory is the last ``used / total`` pair of the second row, which is HBM on training chips and
    DDR on inference chips (the header says which).
    """
    version = None
    chips: list[NpuChip] = []
    memory_kind = "memory"
    pending: Optional[tuple[int, str, str]] = None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", line)
        if m:
            version = m.group(1)
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if "Process id" in line or "Process name" in line:
            break  # the process table follows the device table
        if "HBM-Usage" in line:
            memory_kind = "HBM"
        first = re.fullmatch(r"(\d+)\s+(\S+)", cells[0])
        if first and len(cells) >= 2 and re.fullmatch(r"[A-Za-z]+", cells[1] or ""):
            pending = (int(first.group(1)), first.group(2), cells[1])
            continue
        chip_ids = re.fullmatch(r"([0-9]+)(?:\s+([0-9]+))?", cells[0])
        if pending and chip_ids and len(cells) >= 3:
            pairs = re.findall(r"(\d+)\s*/\s*(\d+)", cells[2])
            used, total = (int(pairs[-1][0]), int(pairs[-1][1])) if pairs else (None, None)
            npu, name, health = pending
            phy = int(chip_ids.group(2)) if chip_ids.group(2) is not None else None
            chips.append(NpuChip(npu, int(chip_ids.group(1)), name, health, cells[1], used, total, memory_kind, phy))
            pending = None
    return NpuSmiReport(version, chips)
