"""Build ``src/ascend_compat/migrate/data/torch_npu_api_support.json`` from Huawei's published support lists.

    python tools/build_api_support.py [REFERENCE_DIR]

``REFERENCE_DIR`` (default ``../shared/reference/torch_npu_api_support`` beside the checkout) holds the resources
of Huawei's PyTorch migration analysis tool (Ascend/msprobe ``src/ms_fmk_transplt/resource/``, commit 81f0042c):

- ``op_list_<v>.json``: torch APIs NOT supported on the NPU for torch_npu line ``<v>``;
  ``supported_op_<v>.json``: supported ones. Both are copied as bitmasks over ``LINES``.
- ``precision_performance_advice.json``: per-API caveats. Only the facts are kept (kind, replacement API); the
  texts are the project's own wording in ``ADVICE`` / ``PARAMETER_ADVICE`` below, and the script fails when the
  source gains an entry that has no wording here.
- ``affinity_list_1_11_0.json``: ``torch_npu.contrib`` replacements (published for torch_npu 1.11), kept as a
  separate ``affinity`` section because most of them match user-defined mmdet/fairseq-style code, not torch APIs.

Cleaning, and why:
- Names not starting with ``torch.`` (``view`` in supported_op_2_6, ``to_sparse`` in op_list_2_7/2_8) are list
  artefacts: each sits next to its qualified ``torch.Tensor.*`` entry, which has the same status. They are dropped.
- ``class_level`` lists the classes that the lists name without itemising any member, on any line (e.g.
  ``torch.nn.Conv2d``): only their members may inherit the class status. Classes whose members are itemised
  (``torch.Tensor``, ``torch.nn.Module``, ``torch.optim.AdamW``) do not pass their status on: there an unlisted
  member is genuinely unknown (``torch.nn.Module`` is supported, ``torch.nn.Module.xpu`` is not).

Output is deterministic (sorted names, fixed key order, one entry per line), so the regeneration test compares
bytes and reviews see one-line diffs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import jsonlines  # tools/jsonlines.py: this folder is first on sys.path when a tool runs

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "ascend_compat" / "migrate" / "data" / "torch_npu_api_support.json"
# The shared reference lists beside the checkout: ../shared/reference relative to the repository.
DEFAULT_REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "torch_npu_api_support"
LINES = ("2.1", "2.6", "2.7", "2.8")
ORIGIN = "Ascend/msprobe src/ms_fmk_transplt/resource/ (commit 81f0042c)"
ADVICE_SOURCE = f"{ORIGIN} precision_performance_advice.json"
AFFINITY_SOURCE = f"{ORIGIN} affinity_list_1_11_0.json"

# api -> (kind, replacement or None, our wording). Replacement API names are exactly the published ones, except
# torch.nn.Linear (the source inlines a class around torch_npu.npu_linear) and torch.baddbmm (source: "bmm + add").
_FUSED = "A fused NPU optimizer that updates all parameters in a few kernels is faster"
ADVICE: dict[str, tuple[str, Optional[str], str]] = {
    "torch.baddbmm": ("precision", "torch.bmm",
                      "Intermediate values can overflow on the NPU; compute torch.bmm and add the input separately."),
    "torch.reshape": ("precision", "torch_npu.npu_confusion_transpose",
                      "The backward pass can overflow on the NPU; the fused permute+reshape kernel avoids it."),
    "torch.nn.Embedding": ("precision", None, "Gradients may differ from run to run on the NPU."),
    "torch.nn.functional.embedding": ("precision", None, "Gradients may differ from run to run on the NPU."),
    "torch.matmul": ("precision", None,
                     "Results may differ from run to run on the NPU; compare with a CPU/GPU run where it matters."),
    "torch.Tensor.matmul": ("precision", None,
                            "Results may differ from run to run on the NPU; compare with a CPU/GPU run where it "
                            "matters."),
    "torch.optim.AdamW": ("performance", "apex.optimizers.NpuFusedAdamW",
                          f"{_FUSED}, at the cost of roughly 70% more optimizer memory."),
    "torch.optim.Adadelta": ("performance", "apex.optimizers.NpuFusedAdadelta", f"{_FUSED}."),
    "torch.optim.Adam": ("performance", "apex.optimizers.NpuFusedAdam", f"{_FUSED}."),
    "torch.optim.AdamP": ("performance", "apex.optimizers.NpuFusedAdamP", f"{_FUSED}."),
    "torch.optim.BertAdam": ("performance", "apex.optimizers.NpuFusedBertAdam", f"{_FUSED}."),
    "torch.optim.Lamb": ("performance", "torch_npu.optim.NpuFusedLamb", f"{_FUSED}."),
    "torch.optim.RMSprop": ("performance", "apex.optimizers.NpuFusedRMSprop", f"{_FUSED}."),
    "torch.optim.RMSpropTF": ("performance", "apex.optimizers.NpuFusedRMSpropTF", f"{_FUSED}."),
    "torch.optim.SGD": ("performance", "apex.optimizers.NpuFusedSGD", f"{_FUSED}."),
    "torch.nn.Linear": ("performance", "torch_npu.npu_linear",
                        "A fused linear kernel is faster on the NPU: subclass torch.nn.Linear and call "
                        "torch_npu.npu_linear in forward for NPU inputs."),
    "torch.autograd.set_detect_anomaly": ("performance", None,
                                          "Anomaly detection is a debugging aid that slows every step; leave it "
                                          "out of training runs."),
    "torch.autograd.detect_anomaly": ("performance", None,
                                      "Anomaly detection is a debugging aid that slows every step; leave it out "
                                      "of training runs."),
    "torch.autograd.gradcheck": ("performance", None,
                                 "gradcheck is a slow debugging aid; leave it out of training runs."),
}

# (source api, parameter) -> our wording. The source's bare ``to`` means any ``.to(...)`` call: the scanner's
# qualified names for it are torch.Tensor.to and torch.nn.Module.to.
PARAMETER_ADVICE: dict[tuple[str, str], str] = {
    ("torch.utils.data.DataLoader", "pin_memory"): "Pinned host memory makes host-to-NPU copies faster.",
    ("torch.utils.data.DataLoader", "num_workers"): "Loading batches in the training process leaves the NPU "
                                                    "waiting; use worker processes.",
    ("torch.nn.parallel.DistributedDataParallel", "bucket_cap_mb"): "Larger gradient buckets mean fewer, larger "
                                                                     "collectives between NPUs.",
    ("to", "non_blocking"): "An asynchronous copy lets the transfer overlap with compute.",
}
PARAMETER_API_NAMES = {"to": ("torch.Tensor.to", "torch.nn.Module.to")}

# Affinity replacements that the source misspells: the published torch_npu.contrib exports say otherwise.
AFFINITY_FIXES = {
    "ModulatedDeformConv": "torch_npu.contrib.module.ModulatedDeformConv",
    # decode goes from (x, y, w, h) to corners; torch_npu exports npu_bbox_coder_decode_xywh2xyxy.
    "torch_npu.contrib.function.npu_bbox_coder_decode_xyxy2xywh":
        "torch_npu.contrib.function.npu_bbox_coder_decode_xywh2xyxy",
}


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _is_class(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    # Excludes properties like torch.Tensor.T and enum members like ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT.
    return last[:1].isupper() and not last.isupper()


def build(ref: Path) -> dict[str, Any]:
    """The data file's content, from the reference directory ``ref``."""
    tables: dict[str, dict[str, int]] = {"unsupported": {}, "supported": {}}
    dropped: set[str] = set()
    for bit, line in enumerate(LINES):
        tag = line.replace(".", "_")
        for status, stem in (("unsupported", "op_list"), ("supported", "supported_op")):
            for name in _load(ref / f"{stem}_{tag}.json")["op_list"]:
                if not name.startswith("torch."):
                    dropped.add(name)
                    continue
                tables[status][name] = tables[status].get(name, 0) | (1 << bit)
    for name in set(tables["unsupported"]) & set(tables["supported"]):
        if tables["unsupported"][name] & tables["supported"][name]:
            raise SystemExit(f"{name} is listed both supported and unsupported on one line")
    names = sorted(set(tables["unsupported"]) | set(tables["supported"]))
    parents = {n.rsplit(".", i)[0] for n in names for i in range(1, n.count("."))}
    class_level = [n for n in names if _is_class(n) and n not in parents]

    src = _load(ref / "precision_performance_advice.json")
    kinds = {**dict.fromkeys(src["api_precision_dict"], "precision"),
             **dict.fromkeys(src["api_performance_dict"], "performance")}
    unworded = sorted(set(kinds) - set(ADVICE))
    if unworded:
        raise SystemExit(f"advice without our wording in ADVICE: {unworded}")
    advice = {}
    for api in sorted(kinds):
        kind, replacement, text = ADVICE[api]
        if kind != kinds[api]:
            raise SystemExit(f"{api}: the source files it as {kinds[api]} advice, ADVICE says {kind}")
        advice[api] = {"kind": kind, "text": text, "replacement": replacement, "source": ADVICE_SOURCE}

    parameter_advice: dict[str, list[dict[str, Any]]] = {}
    for api, entry in src["api_parameters_performance_dict"].items():
        for param, spec in entry["parameter"].items():
            text = PARAMETER_ADVICE.get((api, param))
            if text is None:
                raise SystemExit(f"parameter advice without our wording in PARAMETER_ADVICE: {api} {param}")
            item = {
                "param": param,
                # The source counts ``self``; call sites do not pass it.
                "positions": [i - 1 for i in spec["parameter_idx"]],
                "default": spec["default_value"],
                "recommended": spec.get("expected_value"),
                "avoid": spec.get("unexpected_value"),
                "text": text,
                "source": ADVICE_SOURCE,
            }
            for name in PARAMETER_API_NAMES.get(api, (api,)):
                parameter_advice.setdefault(name, []).append(item)

    aff = _load(ref / "affinity_list_1_11_0.json")
    affinity: dict[str, dict[str, Any]] = {}
    for entry in aff["torch"].values():
        affinity[entry["full_name"]] = {"kind": "api", "replacement": entry["affinity_api"]}
    for name, entry in aff["function"].items():
        affinity[name] = {"kind": "function", "replacement": entry["affinity_function"], "params": entry["parameter"]}
    for name, entry in aff["class"].items():
        affinity[name] = {"kind": "class", "replacement": entry["affinity_class"], "base": entry["parent_class_name"],
                          "params": entry["__init__"], "forward": entry["forward"]}
    for entry in affinity.values():
        entry["replacement"] = AFFINITY_FIXES.get(entry["replacement"], entry["replacement"])
        if entry.get("base") == "nn.Module":  # the source spells the same base class two ways
            entry["base"] = "torch.nn.Module"
        entry["source"] = AFFINITY_SOURCE

    return {
        "schema": 1,
        "source": ORIGIN,
        "lines": list(LINES),
        "note": ("unsupported/supported: API -> bitmask over lines (bit 0 = lines[0]); an API in neither is "
                 "unknown. class_level: classes listed without members, whose members inherit their status. "
                 "Advice texts are ascend-compat's wording. affinity: torch_npu.contrib replacements published "
                 "for torch_npu 1.11 (api: a torch API; function/class: a user definition matched by name and "
                 "parameters)."),
        "dropped": sorted(dropped),
        "unsupported": {n: tables["unsupported"][n] for n in sorted(tables["unsupported"])},
        "supported": {n: tables["supported"][n] for n in sorted(tables["supported"])},
        "class_level": class_level,
        "advice": advice,
        "parameter_advice": {n: parameter_advice[n] for n in sorted(parameter_advice)},
        "affinity": {n: affinity[n] for n in sorted(affinity)},
    }


def render(data: dict[str, Any]) -> str:
    """Deterministic text: the header and every table entry on its own line."""
    return jsonlines.render(data, lambda _, v: bool(v) if isinstance(v, dict) else len(v) > 8)


def main(argv: list[str]) -> int:
    ref = Path(argv[0]) if argv else DEFAULT_REFERENCE
    data = build(ref)
    OUT.write_text(render(data), encoding="utf-8")
    counts = {k: len(data[k]) for k in ("unsupported", "supported", "class_level", "advice", "affinity")}
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes): {counts}; dropped {data['dropped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
