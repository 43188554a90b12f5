"""The dependency table: ``data/dependencies.json`` (one entry per package or family of CUDA wheels, with the
public place each fact comes from), how names and imports are looked up in it, and the AC7xx rules."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Optional

from ascend_compat.migrate import flashattn
from ascend_compat.migrate.model import Finding, Rule, register_rules

STATUSES = ("works", "native_npu", "alternative", "shim", "unsupported")

_R = Rule
DEP_RULES = (
    _R("AC701", "dependency-cuda-only", "dependency", "error", "CUDA-only dependency with no Ascend counterpart",
       "rewrite the code that uses it (see the finding's alternative)", False, False, "hard", 3.0, "deps"),
    _R("AC702", "dependency-alternative", "dependency", "warning", "dependency with an Ascend replacement",
       "switch to the replacement the finding names", False, False, "medium", 1.0, "deps"),
    _R("AC703", "dependency-shim", "dependency", "note", "dependency covered by ascend-compat's drop-in",
       "keep the code; ascend-compat provides the module on the NPU", True, False, "easy", 0.1, "deps"),
    _R("AC704", "dependency-npu-version", "dependency", "warning",
       "dependency needs an NPU-capable version, an NPU build or a companion package",
       "install the version/build the finding names", False, False, "easy", 0.5, "deps"),
    _R("AC705", "torch-cuda-build", "dependency", "warning",
       "PyTorch pinned to a CUDA build (torch_npu needs the CPU build of the exact torch version it pins)",
       "the CPU build of the torch version your torch_npu release pins (x86: `+cpu` from the CPU index), "
       "plus torch_npu", False, False, "trivial", 0.1, "deps"),
    _R("AC706", "cuda-runtime-package", "dependency", "warning", "NVIDIA CUDA runtime or library package",
       "remove it: the CANN toolkit on the host is the NPU runtime", False, False, "trivial", 0.05, "deps"),
)
register_rules(*DEP_RULES)

_STATUS_CODE = {"unsupported": "AC701", "alternative": "AC702", "shim": "AC703"}


@dataclass(frozen=True)
class DepInfo:
    """One package (or family of CUDA wheels) and what to do about it on Ascend."""

    name: str  # PEP 503 normalized, or "prefix*" for a family matched by prefixes
    imports: tuple[str, ...]
    status: str  # one of STATUSES
    alternative: str
    difficulty: str
    effort_days: float
    note: str
    source: str
    aliases: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    min_version: str = ""  # first release that supports the NPU (native_npu)
    npu_setup: str = ""  # the NPU-specific build or companion package it needs (native_npu)
    cuda_runtime: bool = False
    cuda_torch: bool = False
    cuda_extras: tuple[str, ...] = ()
    extras_as: str = ""  # the entry that describes this package installed with one of cuda_extras
    npu_package: str = ""  # the pip requirement that replaces it on the NPU (requirements-npu.txt)

    @property
    def label(self) -> str:
        return self.name.rstrip("*")


@dataclass(frozen=True)
class _Table:
    entries: tuple[DepInfo, ...]
    by_name: dict[str, DepInfo]
    by_import: dict[str, DepInfo]
    prefixes: tuple[tuple[str, DepInfo], ...]  # longest first


_TUPLE_FIELDS = ("imports", "aliases", "prefixes", "cuda_extras")


@lru_cache(maxsize=1)
def _table() -> _Table:
    text = (resources.files("ascend_compat.migrate") / "data" / "dependencies.json").read_text("utf-8")
    entries = []
    for raw in json.loads(text)["packages"]:
        fields: dict[str, Any] = {k: tuple(v) if k in _TUPLE_FIELDS else v for k, v in raw.items()}
        fields["effort_days"] = float(fields["effort_days"])
        entries.append(DepInfo(**fields))
    by_name: dict[str, DepInfo] = {}
    by_import: dict[str, DepInfo] = {}
    prefixes: list[tuple[str, DepInfo]] = []
    for info in entries:
        for n in (info.name, *info.aliases):
            if not n.endswith("*"):
                by_name[n] = info
        by_import.update(dict.fromkeys(info.imports, info))
        prefixes.extend((p, info) for p in info.prefixes)
    prefixes.sort(key=lambda p: -len(p[0]))
    return _Table(tuple(entries), by_name, by_import, tuple(prefixes))


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name (``Flash_Attn`` → ``flash-attn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def all_dependencies() -> tuple[DepInfo, ...]:
    """Every entry of the data file, in its order."""
    return _table().entries


def lookup(name: str) -> Optional[DepInfo]:
    """The entry of a distribution name: exact name or alias first, then the longest matching family prefix."""
    table = _table()
    norm = normalize(name)
    info = table.by_name.get(norm)
    if info is not None:
        return info
    for prefix, pinfo in table.prefixes:
        if norm.startswith(prefix):
            return pinfo
    return None


def lookup_import(module: str) -> Optional[DepInfo]:
    """The entry of an imported module: its longest dotted prefix that an entry lists (``nvidia.dali.fn`` →
    nvidia-dali, ``numba.cuda`` → numba-cuda, ``flash_attn.bert_padding`` → flash-attn)."""
    by_import = _table().by_import
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        info = by_import.get(".".join(parts[:i]))
        if info is not None:
            return info
    return None


def import_finding(path: str, module: str, line: int, col: int) -> Optional[Finding]:
    """The finding for an import of ``module`` (dotted or top-level; 1-based position), or None when the package is
    fine on the NPU. ``api`` is the entry's name, so a caller can keep one finding per package per file."""
    info = lookup_import(module)
    if info is None:
        return None
    if info.status == "shim" and flashattn.is_flash_attn(module) and module not in flashattn.drop_in_modules():
        return Finding("AC702", path, line, col, f"`import {module}` ({info.name}): ascend-compat's drop-in has no "
                       f"`{module}`", api=info.name, alternative=flashattn.UNCOVERED_ALTERNATIVE, fixable=False)
    code = status_code(info)
    if not code:
        return None  # works / native_npu: the manifest, not each import, says which version is needed
    return Finding(code, path, line, col, f"`import {module}` ({info.name}): {info.note}", api=info.name,
                   alternative=info.alternative or None, fixable=False)


def status_code(info: DepInfo) -> str:
    """The rule code of a table entry's status ("" for packages that are fine on the NPU)."""
    if info.cuda_runtime:
        return "AC706"
    return _STATUS_CODE.get(info.status, "")


__all__ = ["DEP_RULES", "STATUSES", "DepInfo", "all_dependencies", "import_finding", "lookup", "lookup_import",
           "normalize", "status_code"]
