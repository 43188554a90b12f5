"""``ascend-compat quant MODEL_DIR|config.json|file.gguf [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("quant", help="is a model's quantization (GPTQ, AWQ, bitsandbytes, FP8, compressed-tensors, "
                       "GGUF, msModelSlim...) usable on Ascend, through what, and what to do instead")
    p.add_argument("model", metavar="MODEL_DIR|config.json", help="a model directory, its config.json or a .gguf file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.ecosystem import quantization

    try:
        report = quantization.compat_report(args.model)
    except quantization.ModelError as exc:
        print(f"ascend-compat quant: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else quantization.render_report(report))
    return 0 if report["usable"] else 1
