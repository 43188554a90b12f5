"""Hugging Face hub ids (``meta-llama/Llama-3-8B-GPTQ``) for ``ascend-compat quant``, resolved as transformers does.

1. the local Hugging Face cache (``HF_HUB_CACHE``, ``HF_HOME``/hub, ``~/.cache/huggingface/hub``): the snapshot
   ``refs/main`` points at, else the newest one;
2. when online (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` unset) and ``huggingface_hub`` is installed: the repo's
   file list and its ``config.json`` (and msModelSlim description), downloaded into that cache; GGUF files are only
   listed, never downloaded;
3. otherwise what the id itself says: a ``GPTQ``, ``AWQ``, ``GGUF``, ``bnb-4bit``/``bnb-8bit``, ``FP8`` or
   msModelSlim ``W8A8``-style part of the name, reported as *inferred* (the model's files were not read).

Nothing here runs unless a model argument is not a local path and looks like ``namespace/name``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ascend_compat import settings

__all__ = ["Resolved", "cache_dir", "cached_snapshot", "infer_from_id", "is_hub_id", "offline", "resolve"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_TRUE = ("1", "on", "yes", "true")
#: name part (between -, _ or . separators) -> method id of data/quantization.json; first match wins.
_NAME_HINTS: tuple[tuple[str, str], ...] = (
    (r"gguf", "gguf"),
    (r"gptq(?:[-_.]?int\d+)?", "gptq"),
    (r"awq", "awq"),
    (r"(?:bnb|bitsandbytes)[-_.]?8bits?|8bits?[-_.]bnb", "bitsandbytes-8bit"),
    (r"(?:bnb|bitsandbytes)(?:[-_.]?4bits?)?|4bits?[-_.]bnb", "bitsandbytes-4bit"),
    (r"fp8", "fp8"),
    (r"w8a8[-_]dynamic", "ascend/w8a8_dynamic"),
    (r"w8a8", "ascend/w8a8"),
    (r"w4a8[-_]dynamic", "ascend/w4a8_dynamic"),
)


def is_hub_id(text: str) -> bool:
    """``namespace/name`` that is not a local path (nor a ``.json`` / ``.gguf`` file name)."""
    return (not os.path.exists(text) and _ID.fullmatch(text) is not None
            and not text.lower().endswith((".json", ".gguf")))  # fmt: skip


def offline() -> bool:
    flags = (settings.HF_HUB_OFFLINE, settings.TRANSFORMERS_OFFLINE)
    return any((flag.get() or "").strip().lower() in _TRUE for flag in flags)


def cache_dir() -> str:
    """The hub cache huggingface_hub uses (same environment variables, same order)."""
    for setting in (settings.HF_HUB_CACHE, settings.HUGGINGFACE_HUB_CACHE):
        chosen = setting.raw()
        if chosen:
            return os.path.expanduser(chosen)
    home = settings.HF_HOME.raw() or os.path.join(
        settings.XDG_CACHE_HOME.raw() or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def cached_snapshot(repo_id: str, revision: str = "main") -> Optional[str]:
    """The cached snapshot folder of ``repo_id`` (``refs/<revision>``, else the newest), or None."""
    root = os.path.join(cache_dir(), "models--" + repo_id.replace("/", "--"))
    snapshots = os.path.join(root, "snapshots")
    try:
        with open(os.path.join(root, "refs", revision), encoding="utf-8") as f:
            commit = f.read().strip()
        if commit and os.path.isdir(os.path.join(snapshots, commit)):
            return os.path.join(snapshots, commit)
    except OSError:
        pass
    try:
        found = [os.path.join(snapshots, n) for n in os.listdir(snapshots)]
    except OSError:
        return None
    found = [p for p in found if os.path.isdir(p) and os.listdir(p)]
    return max(found, key=os.path.getmtime) if found else None


@dataclass
class Resolved:
    """Where a hub id's files were found: ``source`` is ``hf-cache``, ``hub`` or ``inferred`` (nothing read)."""

    repo_id: str
    source: str
    path: Optional[str] = None  # a snapshot folder
    files: list[str] = field(default_factory=list)  # listed on the hub but not downloaded (GGUF)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"repo_id": self.repo_id, "source": self.source, "path": self.path, "note": self.note}


def _download(repo_id: str) -> Resolved:
    """Read the repo's file list and small files from the hub (raises on any hub or network error)."""
    from huggingface_hub import HfApi, hf_hub_download

    # model_info fails at once without a network (list_repo_files retries with backoff for about 20 s).
    names = [s.rfilename for s in HfApi().model_info(repo_id).siblings or []]
    small = [n for n in names if "/" not in n
             and (n == "config.json" or re.fullmatch(r"quant_model_description.*\.json", n, re.IGNORECASE))]
    paths = [hf_hub_download(repo_id, n) for n in small]
    ggufs = [n for n in names if n.lower().endswith(".gguf")]
    if not paths and not ggufs:
        raise LookupError("the repo has no config.json, msModelSlim description or GGUF file")
    folder = os.path.dirname(paths[0]) if paths else None
    return Resolved(repo_id, "hub", folder, ggufs, "read from the Hugging Face hub")


def resolve(repo_id: str) -> Resolved:
    """Find ``repo_id``'s files: the cache, then the hub when online; else ``source="inferred"`` and why."""
    snapshot = cached_snapshot(repo_id)
    if snapshot is not None:
        return Resolved(repo_id, "hf-cache", snapshot, note=f"read from the Hugging Face cache ({snapshot})")
    where = f"not in the Hugging Face cache ({cache_dir()})"
    if offline():
        return Resolved(repo_id, "inferred", note=f"offline (HF_HUB_OFFLINE) and {where}")
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        return Resolved(repo_id, "inferred", note=f"{where}, and huggingface_hub is not installed to download it")
    try:
        return _download(repo_id)
    except Exception as exc:  # network, not found, gated: the id is still worth judging
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        gated = "401" in str(exc) or "Gated" in type(exc).__name__
        hint = " (gated or private? log in with `hf auth login`)" if gated else ""
        return Resolved(repo_id, "inferred", note=f"{where}, and the hub could not be read: "
                                                  f"{type(exc).__name__}: {first}{hint}")  # fmt: skip


def infer_from_id(repo_id: str) -> Optional[tuple[str, str]]:
    """``(method id, the part of the name that says so)`` for a quantization method the id names, or None."""
    name = repo_id.rsplit("/", 1)[-1].lower()
    for pattern, method in _NAME_HINTS:
        m = re.search(rf"(?:^|[-_.])({pattern})(?=$|[-_.])", name)
        if m:
            return method, m.group(1)
    return None


def quant_report(repo_id: str) -> dict[str, Any]:
    """``ascend-compat quant`` for a hub id: the model's files when they can be had, else what the id says.

    Raises ModelError when nothing can be read and the id names no quantization method."""
    from ascend_compat.ecosystem import quant_report
    from ascend_compat.ecosystem import quantization as q

    where = resolve(repo_id)
    if where.source != "inferred":
        if where.path and os.path.isfile(os.path.join(where.path, "config.json")):
            config_path, config, model_dir, files = q.read_model(where.path)
        else:
            config_path, config, model_dir, files = None, None, where.path or "", []
        report = quant_report.build_report(repo_id, config_path, config, model_dir, files + where.files)
    else:
        hint = infer_from_id(repo_id)
        if hint is None:
            raise q.ModelError(f"{repo_id}: {where.note}; the id names no quantization method (GPTQ, AWQ, GGUF, "
                               "bnb-4bit, FP8, W8A8...), so there is nothing to judge: download the model or give "
                               "its directory")  # fmt: skip
        method, part = hint
        evidence = f"inferred from the model id ({part!r} in its name); the model's files were not read"
        found = [q.Found(q.get(method), evidence, inferred=True)]
        report = quant_report.build_report(repo_id, None, None, "", [], found=found)
    report["hub"] = where.to_dict()
    return report
