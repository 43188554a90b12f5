"""``ascend-compat quant MODEL_DIR|config.json|file.gguf|HUB_ID [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("quant", help="is a model's quantization (GPTQ, AWQ, bitsandbytes, FP8, compressed-tensors, "
                       "GGUF, msModelSlim...) usable on Ascend, through what, and what to do instead")
    p.add_argument("model", metavar="MODEL_DIR|config.json|HUB_ID",
                   help="a model directory, its config.json, a .gguf file, or a Hugging Face hub id (org/name: the "
                   "local HF cache, then the hub unless HF_HUB_OFFLINE=1; else judged from the id, marked inferred)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.ecosystem import quant_report
    from ascend_compat.ecosystem.quantization import ModelError

    try:
        report = quant_report.compat_report(args.model)
    except ModelError as exc:
        print(f"ascend-compat quant: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else quant_report.render_report(report))
    return 0 if report["usable"] else 1
