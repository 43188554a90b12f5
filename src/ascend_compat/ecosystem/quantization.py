"""Quantization methods on Ascend: how a model shows each one, whether it runs on the NPU, through what, and what
to do instead. The single source of truth for these facts is ``data/quantization.json`` (every entry names the
public place its facts come from); this module reads it and recognises methods in a model's files.

``lookup(quantization_config)`` names the method of a ``config.json`` ``quantization_config``; ``detect(config,
model_dir)`` also looks at the files next to it (msModelSlim's ``quant_model_description.json``, GGUF files).
Neither imports torch, vllm or vllm_ascend.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional

from ascend_compat import _data
from ascend_compat.ecosystem.pep440 import in_spec, public_version, version_key  # noqa: F401 (also public here)

STATUSES = ("yes", "partial", "no")
#: The msModelSlim description file vllm-ascend reads (vllm_ascend/quantization/modelslim_config.py).
DESCRIPTION_FILE = "quant_model_description.json"
#: compressed-tensors formats with activation quantization (its is_activation_quantization_format).
_ACT_FORMATS = frozenset({"naive-quantized", "int-quantized", "float-quantized", "nvfp4-pack-quantized"})
_QUANT_TYPE = re.compile(r"W\d+A\d+[A-Z0-9_]*$")


class ModelError(ValueError):
    """``--model`` names no model this report can read (missing path, no config.json, invalid JSON)."""


# -- data -------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Support:
    """vllm-ascend releases that serve a method (``versions``, a PEP 440 specifier) and what they need for it."""

    versions: str
    requires: str = ""  # a distribution those releases need for the method (mindie-turbo for the 0.7.3 line)
    note: str = ""  # a limit (hardware, layer types)


@dataclass(frozen=True)
class QuantMethod:
    """One quantization method and its status on Ascend."""

    id: str
    name: str
    recognise: Mapping[str, Any]
    ascend: str  # one of STATUSES
    vllm_ascend: tuple[Support, ...]
    through: tuple[str, ...]
    torch_npu_ops: tuple[str, ...]
    alternative: str
    note: str
    source: str

    def support_for(self, vllm_ascend_version: str) -> Optional[Support]:
        """The first range of ``vllm_ascend`` that contains the given release, or None."""
        return next((s for s in self.vllm_ascend if in_spec(vllm_ascend_version, s.versions)), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "ascend": self.ascend,
            "vllm_ascend": [{k: v for k, v in s.__dict__.items() if v} for s in self.vllm_ascend],
            "through": list(self.through), "torch_npu_ops": list(self.torch_npu_ops),
            "alternative": self.alternative, "note": self.note, "source": self.source,
        }  # fmt: skip


@dataclass(frozen=True)
class _Data:
    methods: tuple[QuantMethod, ...]
    by_id: dict[str, QuantMethod]
    platform_methods: tuple[tuple[str, tuple[str, ...]], ...]
    flag: Mapping[str, str]


@lru_cache(maxsize=1)
def _tables() -> _Data:
    raw = _data.load("quantization")
    methods = tuple(
        QuantMethod(
            id=m["id"], name=m["name"], recognise=m["recognise"], ascend=m["ascend"],
            vllm_ascend=tuple(Support(**s) for s in m["vllm_ascend"]), through=tuple(m["through"]),
            torch_npu_ops=tuple(m["torch_npu_ops"]), alternative=m["alternative"], note=m["note"], source=m["source"],
        )
        for m in raw["methods"]
    )
    platform = tuple((p["versions"], tuple(p["methods"])) for p in raw["platform_methods"])
    return _Data(methods, {m.id: m for m in methods}, platform, raw["ascend_flag"])


def load_methods() -> tuple[QuantMethod, ...]:
    """Every method of the data file, in its order."""
    return _tables().methods


def get(method_id: str) -> QuantMethod:
    """The method with this id (KeyError when there is none)."""
    return _tables().by_id[method_id]


def platform_methods(vllm_ascend_version: str) -> Optional[tuple[str, ...]]:
    """The ``--quantization`` methods vLLM accepts on the NPU platform of this vllm-ascend release (None: unknown)."""
    return next((methods for spec, methods in _tables().platform_methods if in_spec(vllm_ascend_version, spec)), None)


def ascend_flag(vllm_ascend_version: Optional[str]) -> str:
    """What an msModelSlim model needs on this release's command line: the flag, or "" when it is auto-detected."""
    flag = _tables().flag
    if vllm_ascend_version and in_spec(vllm_ascend_version, flag["auto_detected"]):
        return ""
    return flag["flag"]


# -- recognising methods ----------------------------------------------------------------------------------------------

_SECTION_KEYS = ("quantization_config", "compression_config")


def _section(config: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The quantization section: ``config`` itself, or its ``quantization_config`` (vLLM also reads the older
    ``compression_config`` key) when given a whole ``config.json``."""
    if not isinstance(config, Mapping):
        return {}
    for key in _SECTION_KEYS:
        if key in config:
            inner = config[key]
            return inner if isinstance(inner, Mapping) else {}
    if "quant_method" in config or any(k.startswith(("load_in_", "_load_in_")) for k in config):
        return config
    return {}  # a config.json without a quantization section


def _args(raw: Any) -> Optional[dict[str, Any]]:
    """compressed-tensors QuantizationArgs with its defaults (strategy follows group_size when absent)."""
    if not isinstance(raw, Mapping):
        return None
    group_size = raw.get("group_size")
    strategy = raw.get("strategy")
    if strategy is None:
        strategy = "tensor" if group_size is None else ("channel" if group_size == -1 else "group")
    return {
        "num_bits": raw.get("num_bits", 8), "type": str(raw.get("type", "int")).lower(),
        "strategy": str(strategy).lower(), "dynamic": raw.get("dynamic", False) is True,
        "symmetric": raw.get("symmetric", True) is not False,
    }  # fmt: skip


def ct_scheme(weights: Any, activations: Any, fmt: Optional[str]) -> str:
    """The vllm-ascend quantization type one compressed-tensors config group decodes to (mirrors
    ``AscendCompressedTensorsConfig._get_quant_type``), or "other" when vllm-ascend maps none."""
    w, a = _args(weights), _args(activations)
    if w is None:
        return "other"
    if fmt in _ACT_FORMATS and a is not None:
        symmetric, both8 = w["symmetric"] and a["symmetric"], w["num_bits"] == a["num_bits"] == 8
        floats = (w["type"], a["type"]).count("float")
        if both8 and symmetric and w["strategy"] == "channel" and not w["dynamic"]:
            if a["strategy"] == "tensor" and not a["dynamic"] and floats == 0:
                return "W8A8"
            if a["strategy"] == "token" and a["dynamic"]:
                return {0: "W8A8_DYNAMIC", 2: "W8A8FP8_DYNAMIC"}.get(floats, "other")
        if (w["num_bits"] == 4 and a["num_bits"] == 8 and w["strategy"] in ("channel", "group") and symmetric
                and a["strategy"] == "token" and a["dynamic"] and not w["dynamic"]):
            return "W4A8_DYNAMIC"
    if a is None and w["type"] == "int" and w["num_bits"] == 4 and w["strategy"] == "group" and not w["dynamic"]:
        return "W4A16"
    return "other"


def _ct_methods(section: Mapping[str, Any]) -> list[QuantMethod]:
    groups = section.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return [get("compressed-tensors")]
    by_scheme = {m.recognise["scheme"]: m for m in load_methods() if "scheme" in m.recognise}
    out: list[QuantMethod] = []
    for group in groups.values():
        if not isinstance(group, Mapping):
            continue
        fmt = group.get("format") or section.get("format")
        method = by_scheme[ct_scheme(group.get("weights"), group.get("input_activations"), fmt)]
        if method not in out:
            out.append(method)
    return out or [get("compressed-tensors")]


def _flag_on(section: Mapping[str, Any], flag: str) -> bool:
    return section.get(flag) is True or section.get("_" + flag) is True


def lookup_all(quant_config: Optional[Mapping[str, Any]]) -> list[QuantMethod]:
    """Every method a ``quantization_config`` (or a whole ``config.json``) uses: one, except compressed-tensors
    configs whose groups decode to several schemes. ``[none]`` without quantization, ``[]`` for an unknown method."""
    section = _section(quant_config)
    if not section:
        return [get("none")]
    quant_method = str(section.get("quant_method") or "").strip().lower()
    if quant_method == "compressed-tensors":
        return _ct_methods(section)
    for m in load_methods():
        rec = m.recognise
        if "scheme" in rec or quant_method not in rec.get("quant_method", ()):
            continue
        if "flag" in rec and not _flag_on(section, rec["flag"]):
            continue
        return [m]
    return []


def lookup(quant_config: Optional[Mapping[str, Any]]) -> Optional[QuantMethod]:
    """The method of a ``quantization_config`` dict (or of a whole ``config.json``): ``none`` when there is no
    quantization, None for a method the data does not know. See :func:`lookup_all` for mixed configs."""
    found = lookup_all(quant_config)
    return found[0] if found else None


@dataclass(frozen=True)
class Found:
    """A method found in a model, with what showed it."""

    method: Optional[QuantMethod]  # None: a quant_method the data does not know
    evidence: str
    quant_method: str = ""  # the config's quant_method, as written
    caveat: str = ""  # something to fix even where the method runs (a misnamed description file)
    types: tuple[str, ...] = field(default_factory=tuple)  # msModelSlim types named by the description file
    inferred: bool = False  # from a hub id's name only: the model's files were not read


def _read_json(path: str) -> Any:
    """A JSON file of the user's model; ValueError naming the file when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read ({exc})") from exc


def _description_types(desc: Any) -> tuple[str, ...]:
    """The msModelSlim types a description names: ``model_quant_type`` and the per-tensor values (FLOAT aside)."""
    if not isinstance(desc, Mapping):
        return ()
    values = {str(v).upper() for v in desc.values() if isinstance(v, str)}
    return tuple(sorted(v for v in values if _QUANT_TYPE.match(v)))


def _description_methods(path: str, caveat: str) -> list[Found]:
    types = _description_types(_read_json(path))
    by_type = {t: m for m in load_methods() for t in m.recognise.get("quant_types", ())}
    name = os.path.basename(path)
    known = sorted({by_type[t].id: by_type[t] for t in types if t in by_type}.values(), key=lambda m: m.id)
    unknown = tuple(t for t in types if t not in by_type)
    out = [Found(m, f"{name}: {', '.join(t for t in types if by_type.get(t) is m)}", caveat=caveat,
                 types=tuple(t for t in types if by_type.get(t) is m)) for m in known]
    if unknown or not out:
        what = ", ".join(unknown) if unknown else "no quantization type"
        out.append(Found(get("ascend"), f"{name}: {what}", caveat=caveat, types=unknown))
    return out


def detect(config: Optional[Mapping[str, Any]], model_dir: Optional[str] = None,
           files: Iterable[str] = ()) -> list[Found]:
    """Every quantization method a model uses, from its ``config.json`` (``config``, may be None) and the files in
    ``model_dir`` (or the explicit ``files``). Raises ValueError (naming the file) for an unreadable description."""
    names = list(files)
    if model_dir and os.path.isdir(model_dir):
        names += [os.path.join(model_dir, n) for n in sorted(os.listdir(model_dir))]
    found: list[Found] = []
    descriptions = [p for p in names
                    if re.fullmatch(r"quant_model_description.*\.json", os.path.basename(p), re.IGNORECASE)]
    exact = [p for p in descriptions if os.path.basename(p) == DESCRIPTION_FILE]
    if exact:
        found += _description_methods(exact[0], "")
    elif descriptions:
        # vllm-ascend opens exactly quant_model_description.json; older msModelSlim exports add the type to the name.
        found += _description_methods(descriptions[0], f"rename {os.path.basename(descriptions[0])} to "
                                                       f"{DESCRIPTION_FILE}: vllm-ascend reads only that name")
    ggufs = [p for p in names if p.lower().endswith(".gguf")]
    if ggufs:
        more = f" and {len(ggufs) - 1} more" if len(ggufs) > 1 else ""
        found.append(Found(get("gguf"), f"{os.path.basename(ggufs[0])}{more}"))
    if config is not None:
        section = _section(config)
        quant_method = str(section.get("quant_method") or "")
        methods = lookup_all(config)
        if not section and any(config.get(key) is not None for key in _SECTION_KEYS):
            # present but empty (or not an object): transformers refuses to load it ("has no quant_method")
            found.append(Found(None, "an empty quantization_config (no quant_method: transformers refuses it)",
                               caveat="remove quantization_config from config.json, or give the method that "
                                      "quantized the weights (quant_method)"))
        elif section and not methods:
            found.append(Found(None, f"quant_method {quant_method or '(absent)'}", quant_method))
        for m in methods:
            if m.id == "none":
                continue
            if m.id.startswith("compressed-tensors/"):
                scheme = m.recognise["scheme"]
                evidence = f"{quant_method}, " + (f"scheme {scheme}" if scheme != "other" else "an unmapped scheme")
            elif "flag" in m.recognise:
                evidence = f"{quant_method or 'bitsandbytes'}, {m.recognise['flag']}"
            else:
                evidence = f"quant_method {quant_method}"
            found.append(Found(m, evidence, quant_method))
    return found or [Found(get("none"), "no quantization_config, description file or GGUF file")]


# -- a model on disk --------------------------------------------------------------------------------------------------

def read_model(path: str) -> tuple[Optional[str], Optional[dict[str, Any]], str, list[str]]:
    """(config.json path or None, its content or None, the model directory, extra files) of ``--model``: a
    directory holding config.json (or only GGUF files), a config file, or a .gguf file. Raises ModelError."""
    if not os.path.exists(path):
        raise ModelError(f"{path}: no such file or directory")
    files: list[str] = []
    if os.path.isdir(path):
        config_path = os.path.join(path, "config.json")
        if not os.path.isfile(config_path):
            if any(n.lower().endswith(".gguf") for n in os.listdir(path)):
                return None, None, path, []
            raise ModelError(f"{path}: no config.json in this directory")
        model_dir = path
    elif path.lower().endswith(".gguf"):
        return None, None, "", [path]
    else:
        config_path, model_dir = path, ""
        # The files next to a config.json are the model's (msModelSlim's description sits beside it).
        if os.path.basename(path) == "config.json":
            model_dir = os.path.dirname(os.path.abspath(path))
    try:
        config = _read_json(config_path)
    except ValueError as exc:
        raise ModelError(str(exc)) from exc
    if not isinstance(config, dict):
        raise ModelError(f"{config_path}: not a model config (the JSON is not an object)")
    return config_path, config, model_dir, files


#: Version of the ``ascend-compat quant --json`` report (built by :mod:`ascend_compat.ecosystem.quant_report`).
SCHEMA_VERSION = 1
